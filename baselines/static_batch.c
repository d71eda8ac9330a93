/* static_batch.c -- request-level batches and their common completion (static_batch.h). */
#include "static_batch.h"

#include <stdbool.h>
#include <stdlib.h>

#include "engine.h"

static void note_one(pb_static_batches *sb, int64_t id, int64_t batch) {
    if (id >= sb->cap) {
        int64_t nc = sb->cap ? sb->cap : 1024;
        while (nc <= id) nc *= 2;
        sb->batch_of = pb_xrealloc(sb->batch_of, (size_t)nc * sizeof *sb->batch_of);
        for (int64_t i = sb->cap; i < nc; i++) sb->batch_of[i] = -1;
        sb->cap = nc;
    }
    sb->batch_of[id] = batch;
}

void pb_static_batches_note(pb_static_batches *sb, pb_sched *s, int32_t n) {
    int64_t b = sb->n_batches++;
    for (pb_group *g = pb_sched_running_head(s); g; g = g->next) note_one(sb, g->id, b);
    sb->sum_batch += n;
    if (n > sb->max_seen) sb->max_seen = n;
}

int64_t pb_static_batches_of(const pb_static_batches *sb, int64_t id) {
    return id >= 0 && id < sb->cap ? sb->batch_of[id] : -1;
}

void pb_static_batches_finalize(const pb_static_batches *sb, pb_metrics *m) {
    if (sb->n_batches == 0) return;
    int64_t n;
    pb_metrics_requests(m, &n);
    /* end[b]: latest finish in batch b; cut[b]: a member never finished */
    double *end = pb_xmalloc((size_t)sb->n_batches * sizeof *end);
    bool *cut = pb_xcalloc((size_t)sb->n_batches, sizeof *cut);
    for (int64_t b = 0; b < sb->n_batches; b++) end[b] = -1;
    int64_t lim = PB_MIN(n, sb->cap);
    for (int64_t i = 0; i < lim; i++) {
        int64_t b = sb->batch_of[i];
        if (b < 0) continue;
        const pb_req_metrics *r = pb_metrics_req(m, i);
        if (!r->finished) cut[b] = true;
        else if (r->finish_s > end[b]) end[b] = r->finish_s;
    }
    for (int64_t i = 0; i < lim; i++) {
        int64_t b = sb->batch_of[i];
        pb_req_metrics *r = pb_metrics_req(m, i);
        if (b < 0 || !r->finished) continue;
        if (cut[b]) {
            r->finished = false;
            r->finish_s = -1;
        } else {
            r->finish_s = end[b];
        }
    }
    free(cut);
    free(end);
}

void pb_static_batches_free(pb_static_batches *sb) {
    free(sb->batch_of);
    sb->batch_of = NULL;
    sb->cap = 0;
}
