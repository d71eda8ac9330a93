/* gpu_timer.h -- device-side timing of one measured run with CUPTI activity records,
 * and NVTX3 ranges in a named domain so that Nsight Systems shows the same runs.
 *
 * A run is everything enqueued between pb_gpu_timer_start and pb_gpu_timer_stop.
 * Its time is the span from the earliest start to the latest end of the CONCURRENT
 * KERNEL and MEMCPY activity records of the run (so a V2 call = its two kernels, a
 * swap = all its copies, launch gaps between them included).  CONCURRENT_KERNEL
 * does not serialize kernels (KIND_KERNEL would).  stop() synchronizes the device
 * and flushes CUPTI (cuptiActivityFlushAll forced), so records never leak into the
 * next run; the number of dropped records is accumulated from every completed
 * buffer (cuptiActivityGetNumDroppedRecords) and a run with drops is flagged.
 *
 * One timer at a time per process (CUPTI callbacks are process-global).
 * Without CUDA every function returns PB_ERR_UNSUPPORTED. */
#ifndef PB_GPU_TIMER_H
#define PB_GPU_TIMER_H

#include <stdint.h>

#include "pb.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pb_gpu_timer pb_gpu_timer;

/* Enable CUPTI activity collection and create the NVTX domain (e.g. "pagedbench"). */
pb_status pb_gpu_timer_create(const char *nvtx_domain, pb_gpu_timer **out);
void pb_gpu_timer_destroy(pb_gpu_timer *t);

/* Synchronize, flush and discard earlier records, then open NVTX range `name`. */
pb_status pb_gpu_timer_start(pb_gpu_timer *t, const char *name);
/* Close the range, synchronize, flush; *span_us = device span of the run's records,
 * *n_records = how many (0 -> PB_ERR_CUDA: nothing was recorded). */
pb_status pb_gpu_timer_stop(pb_gpu_timer *t, double *span_us, int *n_records);
/* Records CUPTI reported dropped since create (must stay 0 for `Check timer: PASS`). */
uint64_t pb_gpu_timer_dropped(const pb_gpu_timer *t);

/* NVTX range in the timer's domain around non-measured phases (setup, checks). */
void pb_gpu_timer_push(pb_gpu_timer *t, const char *name);
void pb_gpu_timer_pop(pb_gpu_timer *t);

#ifdef __cplusplus
}
#endif
#endif /* PB_GPU_TIMER_H */
