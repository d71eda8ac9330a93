/* trace_fit.c -- length scaling and clamping of a trace (trace_fit.h). */
#include "trace_fit.h"

#include <math.h>

#include "pb.h"

void pb_trace_fit(pb_trace *t, double length_scale, bool clamp, int32_t max_len) {
    for (int64_t i = 0; i < t->n; i++) {
        pb_request *r = &t->reqs[i];
        if (length_scale > 0 && length_scale != 1.0) {
            r->prompt_len = (int32_t)PB_MAX(1.0, ceil(r->prompt_len * length_scale));
            r->output_len = (int32_t)PB_MAX(1.0, ceil(r->output_len * length_scale));
            r->prefix_len = (int32_t)floor(r->prefix_len * length_scale);
        }
        if (clamp && max_len >= 2) {
            r->prompt_len = PB_MIN(r->prompt_len, max_len - 1);
            r->output_len = PB_MAX(1, PB_MIN(r->output_len, max_len - r->prompt_len));
        }
        /* a prompt cut below its shared prefix no longer shares it (one length per prefix id) */
        if (r->prefix_id >= 0 && r->prefix_len >= r->prompt_len) {
            r->prefix_id = -1;
            r->prefix_len = 0;
        }
        if (r->prefix_len == 0 && r->prefix_id >= 0 && length_scale != 1.0) r->prefix_id = -1;
        /* a chatbot turn cut below its history no longer re-sends it whole (trace.h) */
        if (r->prefix_id < 0 && r->prefix_len >= r->prompt_len) r->prefix_len = 0;
    }
}

int64_t pb_trace_drop_long_prompts(pb_trace *t, int32_t max_len) {
    int64_t k = 0;
    for (int64_t i = 0; i < t->n; i++) {
        if (t->reqs[i].prompt_len > max_len) continue;
        t->reqs[k] = t->reqs[i];
        t->reqs[k].id = (int32_t)k;
        k++;
    }
    int64_t dropped = t->n - k;
    t->n = k;
    return dropped;
}
