/* gpu_probe.c -- see gpu_probe.h. */
#include "gpu_probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The CUDA runtime is called only inside the CUDA module (libpbcuda_exec.so, built with
 * PB_CUDA_MODULE): pbcore links no CUDA library, so its copy asks the module through
 * the loader (executors/cuda_module.c), which also explains a module that will not load. */
#if defined(PB_HAVE_CUDA) && defined(PB_CUDA_MODULE)
#include <cuda_runtime_api.h>
#define PB_PROBE_CALLS_CUDA 1
#elif defined(PB_HAVE_CUDA)
int pb_kbench_gpu_available(char *why, size_t why_len);   /* the loader: kbench.h */
#endif

/* cudaError_t values used below (stable across CUDA 11-13; named here so that this
 * file also builds without the CUDA headers) */
enum {
    CU_OK = 0, CU_INIT = 3, CU_STUB = 34, CU_INSUFFICIENT_DRIVER = 35, CU_UNAVAILABLE = 46,
    CU_NO_DEVICE = 100, CU_MISMATCH = 803, CU_COMPAT = 804, CU_UNKNOWN = 999
};

static void ver(char *b, size_t n, int v) {
    if (v > 0) snprintf(b, n, "%d.%d", v / 1000, v % 1000 / 10);
    else snprintf(b, n, "?");
}

int pb_gpu_reason_words(const pb_gpu_facts *f, char *why, size_t why_len) {
    char rt[16], drv[16];
    ver(rt, sizeof rt, f->runtime_version);
    ver(drv, sizeof drv, f->driver_version);
    const char *hidden = f->visible && (!f->visible[0] || !strcmp(f->visible, "-1") ||
                                        !strcmp(f->visible, "none") || !strcmp(f->visible, "void"))
                             ? f->visible : NULL;
    if (why_len) why[0] = 0;
    if (!f->built_with_cuda) {
        snprintf(why, why_len, "this build has no CUDA: it was configured with PB_CUDA=OFF or without nvcc; "
                               "the cuda preset builds it");
        return 0;
    }
    if (f->cuda_error == CU_OK && f->device_count > 0) return 1;
    if (hidden) {
        snprintf(why, why_len, "CUDA_VISIBLE_DEVICES=\"%s\" hides every GPU", hidden);
        return 0;
    }
    switch (f->cuda_error) {
    case CU_OK:
    case CU_NO_DEVICE:
        if (!f->have_dev_nodes)
            snprintf(why, why_len, "no NVIDIA GPU on this machine: no /dev/nvidia* device files");
        else if (f->visible)
            snprintf(why, why_len, "no NVIDIA GPU visible with CUDA_VISIBLE_DEVICES=\"%s\"", f->visible);
        else
            snprintf(why, why_len, "the NVIDIA driver is loaded but reports no GPU");
        return 0;
    case CU_STUB:
        snprintf(why, why_len, "no CUDA driver on this machine: only the CUDA toolkit's stub libcuda.so was found");
        return 0;
    case CU_INSUFFICIENT_DRIVER:
        if (!f->have_dev_nodes || f->driver_version <= 0)
            snprintf(why, why_len, "no CUDA driver on this machine%s",
                     f->have_dev_nodes ? ": libcuda.so is missing" : ": no /dev/nvidia* device files");
        else
            snprintf(why, why_len, "the NVIDIA driver, CUDA %s, is older than this build's CUDA runtime %s: "
                                   "update the driver or build with an older toolkit", drv, rt);
        return 0;
    case CU_UNAVAILABLE:
        snprintf(why, why_len, "the GPUs are busy or in a prohibited or exclusive compute mode");
        return 0;
    case CU_INIT:
        snprintf(why, why_len, "the CUDA driver failed to start: check nvidia-smi");
        return 0;
    case CU_MISMATCH:
        snprintf(why, why_len, "the NVIDIA kernel module and the user-space driver libcuda are different "
                               "versions: reload the module or reboot");
        return 0;
    case CU_COMPAT:
        snprintf(why, why_len, "the CUDA forward-compatibility driver does not support this GPU");
        return 0;
    case CU_UNKNOWN:
        snprintf(why, why_len, "the CUDA driver failed with an unknown error; the GPU may be in a bad state: "
                               "check nvidia-smi");
        return 0;
    default:
        snprintf(why, why_len, "CUDA could not start, CUDA error %d", f->cuda_error);
        return 0;
    }
}

void pb_gpu_probe_facts(pb_gpu_facts *f) {
    memset(f, 0, sizeof *f);
    f->have_dev_nodes = access("/dev/nvidiactl", F_OK) == 0 || access("/dev/nvidia0", F_OK) == 0;
    f->visible = getenv("CUDA_VISIBLE_DEVICES");
#ifdef PB_HAVE_CUDA
    f->built_with_cuda = 1;
#endif
#ifdef PB_PROBE_CALLS_CUDA
    int n = 0;
    f->cuda_error = (int)cudaGetDeviceCount(&n);
    f->device_count = f->cuda_error == CU_OK ? n : 0;
    if (cudaRuntimeGetVersion(&f->runtime_version) != cudaSuccess) f->runtime_version = 0;
    if (cudaDriverGetVersion(&f->driver_version) != cudaSuccess) f->driver_version = 0;
    cudaGetLastError();   /* the probe's error is not the caller's */
#endif
}

int pb_gpu_probe(char *why, size_t why_len) {
#if defined(PB_HAVE_CUDA) && !defined(PB_PROBE_CALLS_CUDA)
    return pb_kbench_gpu_available(why, why_len);   /* the module's own probe */
#endif
    pb_gpu_facts f;
    char reason[512];
    pb_gpu_probe_facts(&f);
    int ok = pb_gpu_reason_words(&f, reason, sizeof reason);
    if (why && why_len) snprintf(why, why_len, "%s", reason);
    return ok;
}
