/* gpu_probe.h -- is a CUDA GPU usable here, and if not, why, in plain words.
 *
 * Everything that needs a GPU (the kernel benchmarks, Fig. 18a's measured half, the
 * cuda executor, `pagedbench profile`, the GPU tests) asks pb_gpu_probe() first and
 * prints its reason as `SKIP: no GPU (<reason>)`.  The reason is written for a user,
 * not a CUDA developer: a machine with no NVIDIA driver reads "no CUDA driver on this
 * machine: no /dev/nvidia* device files", never the runtime's "CUDA driver
 * version is insufficient for CUDA runtime version".
 *
 * pb_gpu_reason_words() is the translation alone (no CUDA calls), so that it is
 * tested on machines without a GPU or a CUDA build. */
#ifndef PB_GPU_PROBE_H
#define PB_GPU_PROBE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the probe saw. */
typedef struct {
    int built_with_cuda;     /* PB_HAVE_CUDA                                          */
    int cuda_error;          /* cudaGetDeviceCount's cudaError_t (0 = success)        */
    int device_count;        /* when cuda_error == 0                                  */
    int have_dev_nodes;      /* /dev/nvidiactl or /dev/nvidia0 exists                 */
    int runtime_version;     /* cudaRuntimeGetVersion, e.g. 13000 (0 unknown)         */
    int driver_version;      /* cudaDriverGetVersion, e.g. 12040 (0 = no driver)      */
    const char *visible;     /* $CUDA_VISIBLE_DEVICES or NULL                         */
} pb_gpu_facts;

/* 1 if a CUDA device is usable; else 0 with the reason in plain words in why. */
int pb_gpu_probe(char *why, size_t why_len);

/* Fill facts from this machine (CUDA calls only in a CUDA build). */
void pb_gpu_probe_facts(pb_gpu_facts *f);

/* The reason in plain words for facts that do not give a usable device; returns
 * 1 (and "") when they do.  Pure: no system calls. */
int pb_gpu_reason_words(const pb_gpu_facts *f, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif
#endif /* PB_GPU_PROBE_H */
