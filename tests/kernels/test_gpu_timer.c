/* test_gpu_timer.c -- device timing and NVTX ranges (gpu_timer.h), in both modes: CUPTI
 * activity records (a run of known copies yields one record per copy, a positive span
 * that grows with the work, no dropped records, stop() without work is an error) and
 * the CUDA-event fallback (PAGEDBENCH_CUPTI=none, and a libcupti that cannot be
 * loaded: the timer still times, on events).  Without a CUDA device the timer must
 * refuse cleanly (PB_ERR_UNSUPPORTED) and the binary exits 77.
 *   ctest -L gpu -R test_gpu_timer --output-on-failure */
#include <stdlib.h>
#include <string.h>

#include "gpu_timer.h"
#include "kbench.h"
#include "pbtest.h"

#ifdef PB_HAVE_CUDA
#include <cuda_runtime.h>

/* one timer: a small copy, then four large ones; checks the spans (and records in
   CUPTI mode); the mode it ran in goes to mode */
static void time_copies(cudaStream_t st, char *mode, size_t mode_len) {
    snprintf(mode, mode_len, "failed");
    pb_gpu_timer *t = NULL;
    PB_REQUIRE(pb_gpu_timer_create("pagedbench-test", st, &t) == PB_OK);
    const int cupti = !strcmp(pb_gpu_timer_mode(t), "cupti");
    void *a = NULL, *b = NULL;
    const size_t n = (size_t)256 << 20;
    PB_REQUIRE(cudaMalloc(&a, n) == cudaSuccess && cudaMalloc(&b, n) == cudaSuccess);
    double small = 0, big = 0;
    int recs = 0;
    PB_CHECK(pb_gpu_timer_start(t, "small") == PB_OK);
    cudaMemcpyAsync(b, a, n / 64, cudaMemcpyDeviceToDevice, st);
    PB_CHECK(pb_gpu_timer_stop(t, &small, &recs) == PB_OK);
    PB_CHECK_EQ_INT(recs, 1);
    PB_CHECK(pb_gpu_timer_start(t, "big") == PB_OK);
    for (int i = 0; i < 4; i++) cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, st);
    PB_CHECK(pb_gpu_timer_stop(t, &big, &recs) == PB_OK);
    PB_CHECK_EQ_INT(recs, cupti ? 4 : 1);
    PB_CHECK(small > 0 && big > 10 * small);
    if (cupti) {
        PB_CHECK(pb_gpu_timer_start(t, "empty") == PB_OK);
        PB_CHECK(pb_gpu_timer_stop(t, &small, &recs) == PB_ERR_CUDA);   /* nothing recorded */
    }
    PB_CHECK_EQ_INT(pb_gpu_timer_dropped(t), 0);
    cudaFree(a);
    cudaFree(b);
    snprintf(mode, mode_len, "%s", pb_gpu_timer_mode(t));
    pb_gpu_timer_destroy(t);
}

PB_TEST(cupti_then_events) {
    char why[256];
    if (!pb_kbench_gpu_available(why, sizeof why)) PB_SKIP_NO_GPU("%s", why);
    cudaStream_t st;
    PB_REQUIRE(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) == cudaSuccess);
    static const struct { const char *env, *mode; } runs[] = {
        {"/nonexistent/libcupti.so", "events"},   /* a libcupti that cannot be loaded     */
        {NULL, "cupti"},                           /* the toolkit's (the one the build found) */
        {"none", "events"},                        /* events asked for                     */
        {NULL, "cupti"},                           /* CUPTI again after events             */
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        char mode[32];
        if (runs[i].env) setenv("PAGEDBENCH_CUPTI", runs[i].env, 1);
        else unsetenv("PAGEDBENCH_CUPTI");
        time_copies(st, mode, sizeof mode);
        PB_CHECK(!strcmp(mode, runs[i].mode));
    }
    unsetenv("PAGEDBENCH_CUPTI");
    cudaStreamDestroy(st);
}

#else

PB_TEST(timer_refuses_without_cuda) {
    pb_gpu_timer *t = (pb_gpu_timer *)1;
    PB_CHECK(pb_gpu_timer_create("x", NULL, &t) == PB_ERR_UNSUPPORTED);
    PB_CHECK(t == NULL);
    double us = 1;
    int n = 1;
    PB_CHECK(pb_gpu_timer_stop(NULL, &us, &n) == PB_ERR_UNSUPPORTED && us == 0 && n == 0);
    char why_[512]; pb_kbench_gpu_available(why_, sizeof why_); PB_SKIP_NO_GPU("%s", why_);
}

#endif

PB_TEST_MAIN()
