// cuda_emu.h -- thread-level CPU emulation of the CUDA subset our kernels use, so that the
// ACTUAL kernel code of attention.cu / cache_ops.cu can be run against the C references on a
// machine without a GPU (see run.sh).  One OS thread per CUDA thread, std::barrier for
// __syncthreads and for warp shuffles; blocks run one after another; dynamic shared memory
// is NaN-filled.  Test tooling only (C++20, g++), not part of the build.
// Minimal CUDA execution emulator for host compilation of kernel code (test only).
#pragma once
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <barrier>
#include <thread>
#include <vector>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <memory>
#include <cstdio>
#include <cstdint>

#undef __global__
#undef __device__
#undef __forceinline__
#undef __shared__
#undef __launch_bounds__
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)

inline thread_local uint3 pbk_emu_tid, pbk_emu_bid;
inline dim3 pbk_emu_bdim, pbk_emu_gdim;
#define threadIdx pbk_emu_tid
#define blockIdx pbk_emu_bid
#define blockDim pbk_emu_bdim
#define gridDim pbk_emu_gdim
inline float *pbk_emu_dyn_smem;

struct pbk_emu_block {
    std::unique_ptr<std::barrier<>> bar;
    std::vector<std::unique_ptr<std::barrier<>>> wbar;
    float shfl[32][32];
};
inline pbk_emu_block *pbk_emu_cur;

inline void __syncthreads() { pbk_emu_cur->bar->arrive_and_wait(); }
inline float pbk_emu_shfl(float v, int src_lane) {
    int w = pbk_emu_tid.x / 32, l = pbk_emu_tid.x % 32;
    pbk_emu_cur->shfl[w][l] = v;
    pbk_emu_cur->wbar[w]->arrive_and_wait();
    float r = pbk_emu_cur->shfl[w][src_lane & 31];
    pbk_emu_cur->wbar[w]->arrive_and_wait();
    return r;
}
inline float __shfl_xor_sync(unsigned, float v, int m) { return pbk_emu_shfl(v, (pbk_emu_tid.x % 32) ^ m); }
inline float __shfl_sync(unsigned, float v, int src) { return pbk_emu_shfl(v, src); }
// loads must be naturally aligned on the device (uint4: 16 bytes): fault like the GPU would
template <typename T> inline T __ldg(const T *p) {
    if ((uintptr_t)p % sizeof(T)) { fprintf(stderr, "emu: misaligned %zu-byte load at %p\n", sizeof(T), (const void *)p); abort(); }
    return *p;
}
inline float __expf(float x) { return expf(x); }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

template <typename K, typename... A>
void emu_launch(K kern, dim3 grid, unsigned threads, size_t smem, A... args) {
    std::vector<float> dyn(smem / 4 + 16, NAN);
    pbk_emu_gdim = grid;
    pbk_emu_bdim = dim3(threads);
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++) {
                pbk_emu_block b;
                b.bar.reset(new std::barrier<>(threads));
                for (unsigned w = 0; w < (threads + 31) / 32; w++) b.wbar.emplace_back(new std::barrier<>(32));
                pbk_emu_cur = &b;
                pbk_emu_dyn_smem = dyn.data();
                std::fill(dyn.begin(), dyn.end(), NAN);
                std::vector<std::thread> th;
                for (unsigned t = 0; t < threads; t++)
                    th.emplace_back([=]() {
                        pbk_emu_tid = make_uint3(t, 0, 0);
                        pbk_emu_bid = make_uint3(x, y, z);
                        kern(args...);
                    });
                for (auto &t : th) t.join();
            }
}
