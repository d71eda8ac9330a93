/* gpu_timer.c -- CUPTI activity timing (libcupti opened at run time) with a CUDA-event
 * fallback, and NVTX3 ranges (see gpu_timer.h). */
#include <stdlib.h>
#include <string.h>

#include "gpu_timer.h"

#ifdef PB_HAVE_CUDA
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#ifdef PB_HAVE_CUPTI
#include <cupti.h>
#endif

struct pb_gpu_timer {
    nvtxDomainHandle_t domain;
    int cupti;                       /* 1: CUPTI records, 0: CUDA events */
    cudaStream_t stream;             /* events mode                      */
    cudaEvent_t ev0, ev1;
    char why[512];                   /* why events ("" on CUPTI)         */
    int runs_recorded;               /* CUPTI runs that had records      */
};

#define TRY_CUDA(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) {                   \
    pb_log_error("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_));           \
    return PB_ERR_CUDA; } } while (0)

#ifdef PB_HAVE_CUPTI
/* ---- CUPTI through dlopen: the functions this file calls ---- */
static struct {
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*enable)(CUpti_ActivityKind);
    CUptiResult (*disable)(CUpti_ActivityKind);
    CUptiResult (*flush_all)(uint32_t);
    CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
    CUptiResult (*result_string)(CUptiResult, const char **);
} g_cu;
static pthread_mutex_t g_cu_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_cu_loaded;              /* (a failed load is tried again at the next create) */
static char g_cu_load_why[400];      /* why the library did not load       */
static char g_cu_why[512];           /* why the last timer is not on CUPTI */

static void cupti_load(void) {
    const char *env = getenv("PAGEDBENCH_CUPTI");
    const char *tries[3] = {env && *env ? env : PB_CUPTI_LIB, env && *env ? NULL : "libcupti.so", NULL};
    void *h = NULL;
    for (int i = 0; !h && tries[i]; i++) {
        h = dlopen(tries[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) snprintf(g_cu_load_why, sizeof g_cu_load_why, "cannot load CUPTI: %s", dlerror());
    }
    if (!h) return;
#define CU_SYM(field, name) do { *(void **)&g_cu.field = dlsym(h, name);                        \
        if (!g_cu.field) { snprintf(g_cu_load_why, sizeof g_cu_load_why, "CUPTI has no %s", name); return; } } while (0)
    CU_SYM(register_callbacks, "cuptiActivityRegisterCallbacks");
    CU_SYM(enable, "cuptiActivityEnable");
    CU_SYM(disable, "cuptiActivityDisable");
    CU_SYM(flush_all, "cuptiActivityFlushAll");
    CU_SYM(next_record, "cuptiActivityGetNextRecord");
    CU_SYM(dropped, "cuptiActivityGetNumDroppedRecords");
    CU_SYM(result_string, "cuptiGetResultString");
#undef CU_SYM
    g_cu_loaded = 1;
}

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
    while (valid > 0 && g_cu.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
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
    if (g_cu.dropped(ctx, stream_id, &dropped) == CUPTI_SUCCESS) g_dropped += dropped;
    pthread_mutex_unlock(&g_mu);
    free(buffer);
}

static int cupti_failed(CUptiResult r, const char *call) {   /* 1 (and a message) on failure */
    if (r == CUPTI_SUCCESS) return 0;
    const char *m = NULL;
    g_cu.result_string(r, &m);
    snprintf(g_cu_why, sizeof g_cu_why, "%s: %s", call, m ? m : "?");
    return 1;
}

/* 1 when CUPTI collects kernel and memcpy activity; else 0 with the reason in g_cu_why */
static int cupti_start_collecting(void) {
    const char *env = getenv("PAGEDBENCH_CUPTI");
    if (env && (!strcmp(env, "none") || !strcmp(env, "off"))) {
        snprintf(g_cu_why, sizeof g_cu_why, "PAGEDBENCH_CUPTI=%s", env);
        return 0;
    }
    pthread_mutex_lock(&g_cu_mu);
    if (!g_cu_loaded) cupti_load();
    pthread_mutex_unlock(&g_cu_mu);
    if (!g_cu_loaded) {
        snprintf(g_cu_why, sizeof g_cu_why, "%s", g_cu_load_why);
        return 0;
    }
    if (cupti_failed(g_cu.register_callbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks") ||
        cupti_failed(g_cu.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable(CONCURRENT_KERNEL)"))
        return 0;
    if (cupti_failed(g_cu.enable(CUPTI_ACTIVITY_KIND_MEMCPY), "cuptiActivityEnable(MEMCPY)")) {
        g_cu.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        return 0;
    }
    pthread_mutex_lock(&g_mu);
    g_dropped = 0;
    pthread_mutex_unlock(&g_mu);
    return 1;
}
#else
static const char g_cu_why[] = "this build has no CUPTI headers";
static int cupti_start_collecting(void) { return 0; }
#endif /* PB_HAVE_CUPTI */

/* Time with CUDA events from now on (CUPTI unavailable, or failing): why says so. */
static pb_status to_events(pb_gpu_timer *t, const char *why) {
#ifdef PB_HAVE_CUPTI
    if (t->cupti) {
        g_cu.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        g_cu.disable(CUPTI_ACTIVITY_KIND_MEMCPY);
    }
#endif
    t->cupti = 0;
    snprintf(t->why, sizeof t->why, "%s", why);
    pb_log_info("gpu timer: CUDA events instead of CUPTI (%s)", why);
    if (cudaEventCreate(&t->ev0) != cudaSuccess || cudaEventCreate(&t->ev1) != cudaSuccess) {
        pb_log_error("gpu timer: cudaEventCreate failed");
        return PB_ERR_CUDA;
    }
    return PB_OK;
}

pb_status pb_gpu_timer_create(const char *nvtx_domain, struct CUstream_st *stream, pb_gpu_timer **out) {
    *out = NULL;
    TRY_CUDA(cudaFree(0));                              /* create the context first */
    pb_gpu_timer *t = pb_xcalloc(1, sizeof(*t));
    t->stream = stream;
    t->cupti = cupti_start_collecting();
    if (!t->cupti && to_events(t, g_cu_why) != PB_OK) {
        if (t->ev0) cudaEventDestroy(t->ev0);
        free(t);
        return PB_ERR_CUDA;
    }
    t->domain = nvtxDomainCreateA(nvtx_domain ? nvtx_domain : "pagedbench");
    *out = t;
    return PB_OK;
}

void pb_gpu_timer_destroy(pb_gpu_timer *t) {
    if (!t) return;
    cudaDeviceSynchronize();
#ifdef PB_HAVE_CUPTI
    if (t->cupti) {
        g_cu.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        g_cu.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        g_cu.disable(CUPTI_ACTIVITY_KIND_MEMCPY);
    }
#endif
    if (t->ev0) cudaEventDestroy(t->ev0);
    if (t->ev1) cudaEventDestroy(t->ev1);
    nvtxDomainDestroy(t->domain);
    free(t);
}

const char *pb_gpu_timer_mode(const pb_gpu_timer *t) { return t && t->cupti ? "cupti" : "events"; }
const char *pb_gpu_timer_why(const pb_gpu_timer *t) { return t ? t->why : ""; }

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
#ifdef PB_HAVE_CUPTI
    if (t->cupti) {
        pthread_mutex_lock(&g_mu);
        g_active = 0;                                   /* earlier records: discard */
        pthread_mutex_unlock(&g_mu);
        if (cupti_failed(g_cu.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll")) {
            if (to_events(t, g_cu_why) != PB_OK) return PB_ERR_CUDA;
        } else {
            pthread_mutex_lock(&g_mu);
            g_active = 1;
            g_count = 0;
            g_start = g_end = 0;
            pthread_mutex_unlock(&g_mu);
        }
    }
#endif
    range_push(t, name);
    if (!t->cupti) TRY_CUDA(cudaEventRecord(t->ev0, t->stream));
    return PB_OK;
}

pb_status pb_gpu_timer_stop(pb_gpu_timer *t, double *span_us, int *n_records) {
    int n = 0;
    double us = 0.0;
    nvtxDomainRangePop(t->domain);
    if (span_us) *span_us = 0;
    if (n_records) *n_records = 0;
    if (!t->cupti) {
        TRY_CUDA(cudaEventRecord(t->ev1, t->stream));
        TRY_CUDA(cudaEventSynchronize(t->ev1));
        float ms = 0.f;
        TRY_CUDA(cudaEventElapsedTime(&ms, t->ev0, t->ev1));
        us = (double)ms * 1e3;
        n = 1;
    }
#ifdef PB_HAVE_CUPTI
    else {
        TRY_CUDA(cudaDeviceSynchronize());
        if (cupti_failed(g_cu.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll")) {
            to_events(t, g_cu_why);                     /* this run is lost; the next ones time */
            return PB_ERR_CUDA;
        }
        pthread_mutex_lock(&g_mu);
        n = g_count;
        us = n ? (double)(g_end - g_start) / 1e3 : 0.0;
        g_active = 0;
        pthread_mutex_unlock(&g_mu);
        if (n) t->runs_recorded++;
        else if (!t->runs_recorded) {                 /* CUPTI never delivered a record */
            pb_log_error("gpu timer: no CUPTI kernel/memcpy records in the timer's first run");
            to_events(t, "CUPTI delivered no activity record in the first timed run");
            return PB_ERR_CUDA;
        }
    }
#endif
    if (span_us) *span_us = us;
    if (n_records) *n_records = n;
    if (n == 0) {
        pb_log_error("gpu timer: no CUPTI kernel/memcpy records in the run");
        return PB_ERR_CUDA;
    }
    return PB_OK;
}

uint64_t pb_gpu_timer_dropped(const pb_gpu_timer *t) {
    uint64_t d = 0;
#ifdef PB_HAVE_CUPTI
    if (t && t->cupti) {
        pthread_mutex_lock(&g_mu);
        d = g_dropped;
        pthread_mutex_unlock(&g_mu);
    }
#else
    (void)t;
#endif
    return d;
}

#else /* !PB_HAVE_CUDA */

pb_status pb_gpu_timer_create(const char *nvtx_domain, struct CUstream_st *stream, pb_gpu_timer **out) {
    (void)nvtx_domain;
    (void)stream;
    *out = NULL;
    return PB_ERR_UNSUPPORTED;
}
const char *pb_gpu_timer_mode(const pb_gpu_timer *t) { (void)t; return "none"; }
const char *pb_gpu_timer_why(const pb_gpu_timer *t) { (void)t; return "this build has no CUDA"; }
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
