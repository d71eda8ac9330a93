/* gpu_timer.c -- CUPTI activity timing + NVTX3 ranges (see gpu_timer.h). */
#include <stdlib.h>
#include <string.h>

#include "gpu_timer.h"

#ifdef PB_HAVE_CUDA
#include <cuda_runtime.h>
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>

struct pb_gpu_timer {
    nvtxDomainHandle_t domain;
};

/* process-global CUPTI state (callbacks have no user pointer) */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_start, g_end, g_dropped;
static int g_count, g_active;

#define BUF_BYTES (8u << 20)
#define BUF_ALIGN 8u

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    void *p = NULL;
    if (posix_memalign(&p, BUF_ALIGN, BUF_BYTES) != 0) p = NULL;
    *buffer = p;
    *size = p ? BUF_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
                                      size_t size, size_t valid) {
    CUpti_Activity *rec = NULL;
    pthread_mutex_lock(&g_mu);
    while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        uint64_t s = 0, e = 0;
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
            s = k->start; e = k->end;
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
            s = m->start; e = m->end;
        } else {
            continue;
        }
        if (!g_active || e < s) continue;
        if (g_count == 0 || s < g_start) g_start = s;
        if (g_count == 0 || e > g_end) g_end = e;
        g_count++;
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS) g_dropped += dropped;
    pthread_mutex_unlock(&g_mu);
    free(buffer);
}

#define TRY_CUPTI(call) do { CUptiResult r_ = (call); if (r_ != CUPTI_SUCCESS) {               \
    const char *m_ = NULL; cuptiGetResultString(r_, &m_);                                      \
    pb_log_error("%s:%d: %s: %s", __FILE__, __LINE__, #call, m_ ? m_ : "?");                    \
    return PB_ERR_CUDA; } } while (0)
#define TRY_CUDA(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) {                   \
    pb_log_error("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_));           \
    return PB_ERR_CUDA; } } while (0)

pb_status pb_gpu_timer_create(const char *nvtx_domain, pb_gpu_timer **out) {
    *out = NULL;
    TRY_CUDA(cudaFree(0));                              /* create the context first */
    TRY_CUPTI(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    TRY_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    TRY_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
    pb_gpu_timer *t = pb_xcalloc(1, sizeof(*t));
    t->domain = nvtxDomainCreateA(nvtx_domain ? nvtx_domain : "pagedbench");
    pthread_mutex_lock(&g_mu);
    g_dropped = 0;
    pthread_mutex_unlock(&g_mu);
    *out = t;
    return PB_OK;
}

void pb_gpu_timer_destroy(pb_gpu_timer *t) {
    if (!t) return;
    cudaDeviceSynchronize();
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
    nvtxDomainDestroy(t->domain);
    free(t);
}

static void range_push(pb_gpu_timer *t, const char *name) {
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof(a));
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = name;
    nvtxDomainRangePushEx(t->domain, &a);
}

void pb_gpu_timer_push(pb_gpu_timer *t, const char *name) { if (t) range_push(t, name); }
void pb_gpu_timer_pop(pb_gpu_timer *t) { if (t) nvtxDomainRangePop(t->domain); }

pb_status pb_gpu_timer_start(pb_gpu_timer *t, const char *name) {
    TRY_CUDA(cudaDeviceSynchronize());
    pthread_mutex_lock(&g_mu);
    g_active = 0;                                       /* earlier records: discard */
    pthread_mutex_unlock(&g_mu);
    TRY_CUPTI(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    pthread_mutex_lock(&g_mu);
    g_active = 1;
    g_count = 0;
    g_start = g_end = 0;
    pthread_mutex_unlock(&g_mu);
    range_push(t, name);
    return PB_OK;
}

pb_status pb_gpu_timer_stop(pb_gpu_timer *t, double *span_us, int *n_records) {
    nvtxDomainRangePop(t->domain);
    TRY_CUDA(cudaDeviceSynchronize());
    TRY_CUPTI(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    pthread_mutex_lock(&g_mu);
    int n = g_count;
    double us = n ? (double)(g_end - g_start) / 1e3 : 0.0;
    g_active = 0;
    pthread_mutex_unlock(&g_mu);
    if (span_us) *span_us = us;
    if (n_records) *n_records = n;
    if (n == 0) {
        pb_log_error("gpu timer: no CUPTI kernel/memcpy records in the run");
        return PB_ERR_CUDA;
    }
    return PB_OK;
}

uint64_t pb_gpu_timer_dropped(const pb_gpu_timer *t) {
    (void)t;
    pthread_mutex_lock(&g_mu);
    uint64_t d = g_dropped;
    pthread_mutex_unlock(&g_mu);
    return d;
}

#else /* !PB_HAVE_CUDA */

pb_status pb_gpu_timer_create(const char *nvtx_domain, pb_gpu_timer **out) {
    (void)nvtx_domain;
    *out = NULL;
    return PB_ERR_UNSUPPORTED;
}
void pb_gpu_timer_destroy(pb_gpu_timer *t) { (void)t; }
pb_status pb_gpu_timer_start(pb_gpu_timer *t, const char *name) { (void)t; (void)name; return PB_ERR_UNSUPPORTED; }
pb_status pb_gpu_timer_stop(pb_gpu_timer *t, double *span_us, int *n_records) {
    (void)t;
    if (span_us) *span_us = 0;
    if (n_records) *n_records = 0;
    return PB_ERR_UNSUPPORTED;
}
uint64_t pb_gpu_timer_dropped(const pb_gpu_timer *t) { (void)t; return 0; }
void pb_gpu_timer_push(pb_gpu_timer *t, const char *name) { (void)t; (void)name; }
void pb_gpu_timer_pop(pb_gpu_timer *t) { (void)t; }

#endif
