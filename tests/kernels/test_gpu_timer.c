/* test_gpu_timer.c -- CUPTI activity timing and NVTX ranges (gpu_timer.h): a run of
 * known copies yields records, a positive span that grows with the work, no
 * dropped records, and stop() without work reports an error.  Without a CUDA
 * device the timer must refuse cleanly (PB_ERR_UNSUPPORTED / PB_ERR_CUDA) and the
 * binary exits 77.
 *   ctest -L gpu -R test_gpu_timer --output-on-failure */
#include <string.h>

#include "gpu_timer.h"
#include "kbench.h"
#include "pbtest.h"

#ifdef PB_HAVE_CUDA
#include <cuda_runtime.h>

PB_TEST(cupti_spans_copies) {
    char why[256];
    if (!pb_kbench_gpu_available(why, sizeof why)) PB_SKIP("SKIP: no GPU (%s)", why);
    pb_gpu_timer *t = NULL;
    PB_REQUIRE(pb_gpu_timer_create("pagedbench-test", &t) == PB_OK);
    void *a = NULL, *b = NULL;
    const size_t n = (size_t)256 << 20;
    PB_REQUIRE(cudaMalloc(&a, n) == cudaSuccess && cudaMalloc(&b, n) == cudaSuccess);
    double small = 0, big = 0;
    int recs = 0;
    PB_CHECK(pb_gpu_timer_start(t, "small") == PB_OK);
    cudaMemcpyAsync(b, a, n / 64, cudaMemcpyDeviceToDevice, 0);
    PB_CHECK(pb_gpu_timer_stop(t, &small, &recs) == PB_OK);
    PB_CHECK_EQ_INT(recs, 1);
    PB_CHECK(pb_gpu_timer_start(t, "big") == PB_OK);
    for (int i = 0; i < 4; i++) cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, 0);
    PB_CHECK(pb_gpu_timer_stop(t, &big, &recs) == PB_OK);
    PB_CHECK_EQ_INT(recs, 4);
    PB_CHECK(small > 0 && big > 10 * small);
    PB_CHECK(pb_gpu_timer_start(t, "empty") == PB_OK);
    PB_CHECK(pb_gpu_timer_stop(t, &small, &recs) == PB_ERR_CUDA);   /* nothing recorded */
    PB_CHECK_EQ_INT(pb_gpu_timer_dropped(t), 0);
    cudaFree(a);
    cudaFree(b);
    pb_gpu_timer_destroy(t);
}

#else

PB_TEST(timer_refuses_without_cuda) {
    pb_gpu_timer *t = (pb_gpu_timer *)1;
    PB_CHECK(pb_gpu_timer_create("x", &t) == PB_ERR_UNSUPPORTED);
    PB_CHECK(t == NULL);
    double us = 1;
    int n = 1;
    PB_CHECK(pb_gpu_timer_stop(NULL, &us, &n) == PB_ERR_UNSUPPORTED && us == 0 && n == 0);
    char why_[512]; pb_kbench_gpu_available(why_, sizeof why_); PB_SKIP("SKIP: no GPU (%s)", why_);
}

#endif

PB_TEST_MAIN()
