/* gpu_timer.h -- device-side timing of one measured run, and NVTX3 ranges in a named
 * domain so that Nsight Systems shows the same runs.
 *
 * A run is everything enqueued between pb_gpu_timer_start and pb_gpu_timer_stop.  Two
 * modes, chosen at create:
 *   cupti   the span from the earliest start to the latest end of the run's
 *           CONCURRENT_KERNEL and MEMCPY activity records (a V2 call = its two
 *           kernels, a swap = all its copies, launch gaps between them included).
 *           CONCURRENT_KERNEL does not serialize kernels (KIND_KERNEL would).  stop()
 *           synchronizes the device and flushes CUPTI (cuptiActivityFlushAll forced),
 *           so records never leak into the next run; records CUPTI reports dropped are
 *           accumulated from every completed buffer (cuptiActivityGetNumDroppedRecords).
 *   events  when CUPTI cannot be used (libcupti missing or unloadable, an activity
 *           call failing at create or later, no record at all in the timer's first run,
 *           or PAGEDBENCH_CUPTI=none): cudaEventElapsedTime between an event recorded on
 *           the timer's stream at start and one at stop.  A run during which CUPTI
 *           failed returns PB_ERR_CUDA and the timer goes on with events.  The span
 *           then includes the host's launch time of the run's first call; work must be
 *           enqueued on that stream (or, with stream NULL, on any blocking stream).
 * libcupti is opened at run time (dlopen), never linked, so the CUDA module loads
 * without it: $PAGEDBENCH_CUPTI names the library to open ("none": events), else the
 * library the build found, else libcupti.so on the loader's path.
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
struct CUstream_st;    /* == cudaStream_t */

/* Create the NVTX domain (e.g. "pagedbench") and enable CUPTI activity collection, or
 * fall back to CUDA events on `stream` (the reason goes to pb_log_warn, once). */
pb_status pb_gpu_timer_create(const char *nvtx_domain, struct CUstream_st *stream, pb_gpu_timer **out);
void pb_gpu_timer_destroy(pb_gpu_timer *t);

/* "cupti" or "events" (the timing mode this timer uses), and why events ("" on CUPTI). */
const char *pb_gpu_timer_mode(const pb_gpu_timer *t);
const char *pb_gpu_timer_why(const pb_gpu_timer *t);

/* Synchronize, flush and discard earlier records, then open NVTX range `name`. */
pb_status pb_gpu_timer_start(pb_gpu_timer *t, const char *name);
/* Close the range, synchronize; *span_us = the run's device time.  cupti: *n_records =
 * kernel and memcpy records of the run (0 -> PB_ERR_CUDA: nothing was recorded);
 * events: *n_records = 1 (events cannot tell an empty run). */
pb_status pb_gpu_timer_stop(pb_gpu_timer *t, double *span_us, int *n_records);
/* Records CUPTI reported dropped since create (must stay 0 for `Check timer: PASS`;
 * always 0 in events mode). */
uint64_t pb_gpu_timer_dropped(const pb_gpu_timer *t);

/* NVTX range in the timer's domain around non-measured phases (setup, checks). */
void pb_gpu_timer_push(pb_gpu_timer *t, const char *name);
void pb_gpu_timer_pop(pb_gpu_timer *t);

#ifdef __cplusplus
}
#endif
#endif /* PB_GPU_TIMER_H */
