/* trace.c -- trace memory, invariants and summary statistics. */
#include "trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void pb_trace_free(pb_trace *t) {
    if (!t) return;
    free(t->reqs);
    t->reqs = NULL;
    t->n = 0;
}

void pb_trace_push(pb_trace *t, int64_t *cap, const pb_request *r) {
    if (t->n == *cap) {
        *cap = *cap ? 2 * *cap : 1024;
        t->reqs = pb_xrealloc(t->reqs, (size_t)*cap * sizeof *t->reqs);
    }
    t->reqs[t->n] = *r;
    t->reqs[t->n].id = t->n;
    t->n++;
}

pb_request pb_request_make(double arrival_s, int32_t prompt_len, int32_t output_len) {
    pb_request r = {0};
    r.arrival_s = arrival_s;
    r.prompt_len = prompt_len;
    r.output_len = output_len;
    r.n = 1;
    r.beam_width = 1;
    r.prefix_id = -1;
    r.prefix_len = 0;
    r.conversation_id = -1;
    r.turn = 0;
    return r;
}

bool pb_request_in_transcript(const pb_request *r) {
    return r->conversation_id >= 0 && r->prefix_id < 0 && (r->turn == 0 || r->prefix_len > 0);
}

/* splitmix64's finalizer: a bijection of 64-bit words with full avalanche */
static uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

uint64_t pb_token_key(const pb_request *r, int32_t i, uint64_t seed) {
    uint64_t kind, id;
    if (r->prefix_id >= 0 && i < r->prefix_len) {
        kind = 1;
        id = (uint64_t)r->prefix_id;
    } else if (pb_request_in_transcript(r)) {
        kind = 2;
        id = (uint64_t)r->conversation_id;
    } else {
        kind = 3;
        id = (uint64_t)r->id;
    }
    uint64_t stream = mix64(seed ^ mix64((kind << 56) ^ id));
    return mix64(stream + 0x9E3779B97F4A7C15ULL * (uint64_t)(i + 1));
}

#define FAIL(...) do { if (err) snprintf(err, errlen, __VA_ARGS__); return PB_ERR_INVALID; } while (0)

/* Requests sharing a prefix_id share one prefix: one prefix_len per id.  Returns the
   index of the first request that disagrees with an earlier one (*first: that one's
   index), or -1.  A hashed table of ids sized by the rows with a prefix (none: no
   table): O(n) time, O(prefixed rows) memory. */
int64_t pb_trace_prefix_conflict(const pb_trace *t, int64_t *first) {
    int64_t n_pre = 0;
    for (int64_t i = 0; i < t->n; i++) n_pre += t->reqs[i].prefix_id >= 0;
    if (n_pre == 0) return -1;
    size_t cap = 16;
    while (cap < 2 * (size_t)n_pre) cap *= 2;
    int64_t *slot = malloc(cap * sizeof *slot);
    PB_ASSERT(slot);
    for (size_t i = 0; i < cap; i++) slot[i] = -1;
    int64_t bad = -1;
    for (int64_t i = 0; i < t->n && bad < 0; i++) {
        const pb_request *r = &t->reqs[i];
        if (r->prefix_id < 0) continue;
        size_t h = ((uint64_t)(uint32_t)r->prefix_id * 0x9E3779B97F4A7C15ULL) >> 20 & (cap - 1);
        while (slot[h] >= 0 && t->reqs[slot[h]].prefix_id != r->prefix_id) h = (h + 1) & (cap - 1);
        if (slot[h] < 0) slot[h] = i;
        else if (t->reqs[slot[h]].prefix_len != r->prefix_len) { bad = i; *first = slot[h]; }
    }
    free(slot);
    return bad;
}

pb_status pb_trace_check(const pb_trace *t, char *err, size_t errlen) {
    if (t->n < 0 || (t->n > 0 && !t->reqs)) FAIL("trace: bad array (n = %lld)", (long long)t->n);
    for (int64_t i = 0; i < t->n; i++) {
        const pb_request *r = &t->reqs[i];
        long long k = (long long)i;
        if (r->id != i) FAIL("request %lld: id %lld", k, (long long)r->id);
        if (!isfinite(r->arrival_s) || r->arrival_s < 0) FAIL("request %lld: arrival_s %g", k, r->arrival_s);
        if (i > 0 && r->arrival_s < t->reqs[i - 1].arrival_s)
            FAIL("request %lld: arrival %g before the previous one (%g)", k, r->arrival_s, t->reqs[i - 1].arrival_s);
        if (r->prompt_len < 1) FAIL("request %lld: prompt_len %d < 1", k, r->prompt_len);
        if (r->output_len < 1) FAIL("request %lld: output_len %d < 1", k, r->output_len);
        if (r->prompt_len > PB_TRACE_MAX_LEN) FAIL("request %lld: prompt_len %d > %d", k, r->prompt_len, PB_TRACE_MAX_LEN);
        if (r->output_len > PB_TRACE_MAX_LEN) FAIL("request %lld: output_len %d > %d", k, r->output_len, PB_TRACE_MAX_LEN);
        if (r->n < 1) FAIL("request %lld: n %d < 1", k, r->n);
        if (r->beam_width < 1) FAIL("request %lld: beam_width %d < 1", k, r->beam_width);
        if (r->n > PB_TRACE_MAX_SEQS) FAIL("request %lld: n %d > %d", k, r->n, PB_TRACE_MAX_SEQS);
        if (r->beam_width > PB_TRACE_MAX_SEQS)
            FAIL("request %lld: beam_width %d > %d", k, r->beam_width, PB_TRACE_MAX_SEQS);
        if (r->beam_width > 1 && r->n != r->beam_width)
            FAIL("request %lld: beam search needs n == beam_width (n %d, beam_width %d)", k, r->n, r->beam_width);
        if (r->prefix_id < -1) FAIL("request %lld: prefix_id %d < -1", k, r->prefix_id);
        if (r->prefix_id == -1 && r->prefix_len != 0 && r->conversation_id < 0)
            FAIL("request %lld: prefix_len %d without a prefix_id or a conversation", k, r->prefix_len);
        if (r->prefix_len < 0 || r->prefix_len >= r->prompt_len)
            FAIL("request %lld: prefix_len %d not in [0, prompt_len %d)", k, r->prefix_len, r->prompt_len);
        if (r->conversation_id < -1) FAIL("request %lld: conversation_id %d < -1", k, r->conversation_id);
        if (r->turn < 0) FAIL("request %lld: turn %d < 0", k, r->turn);
    }
    int64_t first = -1, bad = pb_trace_prefix_conflict(t, &first);
    if (bad >= 0)
        FAIL("request %lld: prefix_id %d with prefix_len %d, but request %lld gave it %d (one length per prefix)",
             (long long)bad, t->reqs[bad].prefix_id, t->reqs[bad].prefix_len, (long long)first,
             t->reqs[first].prefix_len);
    return PB_OK;
}

pb_trace_stats pb_trace_summary(const pb_trace *t) {
    pb_trace_stats s = {0};
    s.n = t->n;
    if (t->n == 0) return s;
    double sp = 0, so = 0;
    for (int64_t i = 0; i < t->n; i++) {
        sp += t->reqs[i].prompt_len;
        so += t->reqs[i].output_len;
        s.max_prompt = PB_MAX(s.max_prompt, t->reqs[i].prompt_len);
        s.max_output = PB_MAX(s.max_output, t->reqs[i].output_len);
    }
    s.mean_prompt = sp / (double)t->n;
    s.mean_output = so / (double)t->n;
    s.duration_s = t->reqs[t->n - 1].arrival_s - t->reqs[0].arrival_s;
    s.rate = t->n >= 2 && s.duration_s > 0 ? (double)t->n / s.duration_s : 0;
    return s;
}
