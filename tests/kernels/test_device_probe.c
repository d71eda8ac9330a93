/* test_device_probe.c -- gpu_probe.h's reasons are plain words: every "no GPU" case
 * a user can meet (no CUDA build, no driver, stub libcuda, old driver, no device,
 * hidden devices, busy GPUs, driver/module mismatch) gives a sentence that names the
 * cause, never the CUDA runtime's own error string; a usable device gives 1.  Runs
 * without a GPU (pure translation), plus the live probe on this machine. */
#include <string.h>

#include "gpu_probe.h"
#include "pbtest.h"

static int words(int built, int err, int count, int nodes, int drv, const char *vis, char *why, size_t n) {
    pb_gpu_facts f;
    memset(&f, 0, sizeof f);
    f.built_with_cuda = built;
    f.cuda_error = err;
    f.device_count = count;
    f.have_dev_nodes = nodes;
    f.runtime_version = 13000;
    f.driver_version = drv;
    f.visible = vis;
    return pb_gpu_reason_words(&f, why, n);
}

/* no reason may echo the runtime's messages */
static void plain(const char *why) {
    PB_CHECK(strstr(why, "insufficient") == NULL);
    PB_CHECK(strstr(why, "cudaGetDeviceCount") == NULL);
    PB_CHECK(strstr(why, "cudaError") == NULL);
    PB_CHECK(strlen(why) > 10);
    PB_CHECK(strchr(why, '(') == NULL && strchr(why, ')') == NULL);   /* inside "SKIP: no GPU (...)" */
}

PB_TEST(usable_device) {
    char why[256] = "x";
    PB_CHECK_EQ_INT(words(1, 0, 1, 1, 12040, NULL, why, sizeof why), 1);
    PB_CHECK_EQ_INT(why[0], 0);
}

PB_TEST(no_cuda_build) {
    char why[256];
    PB_CHECK_EQ_INT(words(0, 0, 0, 1, 0, NULL, why, sizeof why), 0);
    PB_CHECK_STR_CONTAINS(why, "this build has no CUDA");
    plain(why);
}

PB_TEST(no_driver) {
    char why[256];
    /* the CPU-only machine this repo is mostly built on: runtime present, no driver */
    PB_CHECK_EQ_INT(words(1, 35, 0, 0, 0, NULL, why, sizeof why), 0);
    PB_CHECK_STR_CONTAINS(why, "no CUDA driver on this machine");
    PB_CHECK_STR_CONTAINS(why, "/dev/nvidia");
    plain(why);
    PB_CHECK_EQ_INT(words(1, 34, 0, 0, 0, NULL, why, sizeof why), 0);
    PB_CHECK_STR_CONTAINS(why, "stub libcuda");
    PB_CHECK(strchr(why, '(') == NULL);   /* it goes inside "SKIP: no GPU (...)" */
    plain(why);
    PB_CHECK_EQ_INT(words(1, 35, 0, 1, 0, NULL, why, sizeof why), 0);
    PB_CHECK_STR_CONTAINS(why, "libcuda.so is missing");
    plain(why);
}

PB_TEST(old_driver) {
    char why[256];
    PB_CHECK_EQ_INT(words(1, 35, 0, 1, 12040, NULL, why, sizeof why), 0);
    PB_CHECK_STR_CONTAINS(why, "older than");
    PB_CHECK_STR_CONTAINS(why, "12.4");
    PB_CHECK_STR_CONTAINS(why, "13.0");
    plain(why);
}

PB_TEST(no_device_or_hidden) {
    char why[256];
    PB_CHECK_EQ_INT(words(1, 100, 0, 0, 12040, NULL, why, sizeof why), 0);
    PB_CHECK_STR_CONTAINS(why, "no NVIDIA GPU on this machine");
    PB_CHECK_EQ_INT(words(1, 0, 0, 1, 12040, NULL, why, sizeof why), 0);
    PB_CHECK_STR_CONTAINS(why, "reports no GPU");
    PB_CHECK_EQ_INT(words(1, 100, 0, 1, 12040, "-1", why, sizeof why), 0);
    PB_CHECK_STR_CONTAINS(why, "CUDA_VISIBLE_DEVICES=\"-1\" hides every GPU");
    PB_CHECK_EQ_INT(words(1, 100, 0, 1, 12040, "7", why, sizeof why), 0);
    PB_CHECK_STR_CONTAINS(why, "no NVIDIA GPU visible");
    plain(why);
    plain(why);
}

PB_TEST(driver_states) {
    char why[256];
    static const int errs[] = {3, 46, 803, 804, 999, 222};
    static const char *want[] = {"failed to start", "busy", "different versions", "forward-compatibility",
                                 "unknown error", "CUDA error 222"};
    for (int i = 0; i < 6; i++) {
        PB_CHECK_EQ_INT(words(1, errs[i], 0, 1, 12040, NULL, why, sizeof why), 0);
        PB_CHECK_STR_CONTAINS(why, want[i]);
        plain(why);
    }
    char small[8];   /* truncation stays a C string */
    PB_CHECK_EQ_INT(words(1, 35, 0, 0, 0, NULL, small, sizeof small), 0);
    PB_CHECK_EQ_INT((int)strlen(small), 7);
}

PB_TEST(live_probe) {
    char why[512] = "";
    int ok = pb_gpu_probe(why, sizeof why);
    if (ok) PB_CHECK_EQ_INT(why[0], 0);
    else plain(why);
    printf("  this machine: %s\n", ok ? "a usable GPU" : why);
}

PB_TEST_MAIN()
