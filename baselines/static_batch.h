/* static_batch.h -- request-level ("static") batches of the FasterTransformer and HF
 * Transformers baselines: which batch each request ran in, and the rewrite that makes
 * every request of a batch complete when the batch completes (the latest finish in
 * it; a batch cut short by the end of the run returns nothing, so its finished
 * members count as unfinished).
 *
 * The policy calls pb_static_batches_note() right after admitting a batch (the
 * running groups are the batch), and pb_static_batches_finalize() once after
 * pb_engine_run().  Zero-initialised is empty; _free releases it. */
#ifndef PB_STATIC_BATCH_H
#define PB_STATIC_BATCH_H

#include <stdint.h>

#include "metrics.h"
#include "policy.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t *batch_of;       /* [cap] batch index per request id, -1 = none */
    int64_t cap;
    int64_t n_batches, sum_batch, max_seen;
} pb_static_batches;

/* The running groups of s (n of them) form batch number sb->n_batches. */
void pb_static_batches_note(pb_static_batches *sb, pb_sched *s, int32_t n);
/* Batch index of request id (-1 if it never ran in a batch). */
int64_t pb_static_batches_of(const pb_static_batches *sb, int64_t id);
/* Rewrite finish_s of every finished request of m to its batch's completion time. */
void pb_static_batches_finalize(const pb_static_batches *sb, pb_metrics *m);
void pb_static_batches_free(pb_static_batches *sb);

#ifdef __cplusplus
}
#endif
#endif /* PB_STATIC_BATCH_H */
