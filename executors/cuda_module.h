/* cuda_module.h -- the CUDA side of a CUDA build lives in a shared module,
 * libpbcuda_exec.so, next to the binary: the kernels (the .cu files of kernels/), the cuda
 * executor (executor_cuda.c), the GPU kernel benchmarks (kbench_gpu.c) and the GPU
 * timer (gpu_timer.c), linked with cudart, cuBLAS and NVTX (CUPTI is opened at run time
 * by the timer, so a missing libcupti leaves the module loadable).  The binary links
 * none of them: cuda_module.c defines the same entry points in pbcore, and the first
 * call loads the module (dlopen) and forwards to it.  A simulation-only process thus
 * never maps the CUDA libraries (about 200 MiB and 0.1 CPU-s at start-up).
 *
 * Entry points forwarded (declared in executor_real.h and kbench.h):
 *   pb_cuda_available, pb_executor_cuda_create,
 *   pb_kbench_gpu_available, pb_kbench_device_name, pb_kbench_print_context,
 *   pb_kbench_get_info, pb_kbench_run_gpu.
 * When the module cannot be loaded (absent, or a CUDA library missing), they behave
 * as a build without CUDA, with the loader's error as the reason: available() false,
 * create()/run() PB_ERR_UNSUPPORTED, device name "unknown-gpu", info "unknown" / "-".
 *
 * Where: $PAGEDBENCH_CUDA_MODULE if set, else libpbcuda_exec.so in the directory of
 * the running executable (/proc/self/exe).  The module carries its own hidden copy of
 * the pbcore code it calls (same sources; the only shared state, pb_log_level, is
 * copied in at load) and exports pb_cuda_module_abi so that a stale module from
 * another build is refused rather than called with a different struct layout. */
#ifndef PB_CUDA_MODULE_H
#define PB_CUDA_MODULE_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a struct crossing the module boundary changes layout. */
#define PB_CUDA_MODULE_ABI 2

/* Module side: the ABI it was built with; sets the module's log level. */
int pb_cuda_module_abi(int log_level);

/* Binary side: load the module once (thread-safe).  true if loaded; else why (may be
 * NULL) gets the loader's error. */
bool pb_cuda_module_load(char *why, size_t why_len);

#ifdef __cplusplus
}
#endif
#endif /* PB_CUDA_MODULE_H */
