/* attention.cu -- CUDA decode attention over the paged KV cache (V1 and split-K V2),
 * the FasterTransformer-style contiguous kernel (the same body with a different
 * address map, so that paged vs contiguous measures only the block-table cost),
 * and a tiled causal variable-length prefill.  Contracts: attention.h.
 *
 * Decode kernel, one CTA (128 threads = 4 warps) per (head, sequence, partition):
 *  1. Block ids of the CTA's token range are prefetched into shared memory (paged).
 *  2. q.K: groups of KG = 4 threads own one token; thread g of a group reads the
 *     16-byte K chunks g, g+4, ... of that token (x elements each), so 8 tokens
 *     x 16 B chunks are read per warp instruction, coalesced inside a block and
 *     sector-sized across blocks (block size 1).  A warp handles 16 consecutive
 *     tokens per iteration (= one KV block at block size 16, as in the paper).
 *     Logits (fp32) go to shared memory.
 *  3. Softmax: CTA max, exp, CTA sum (fp32).
 *  4. logits.V: a lane reads VVEC consecutive tokens (<= 16 B, inside one block) of
 *     one head-dim row; NC lanes cover NC*VVEC tokens of a row, 32/NC rows per
 *     step; VVEC = min(vx, block_size), NC = clamp(block_size/VVEC, 1, 4), and
 *     small blocks unroll vx/VVEC vectors per lane; vx = min(x, 8) elements (an
 *     fp8 cache reads 8-byte V vectors: 16 would double the V registers and
 *     spill).  Tokens past the context are zeroed before the product (unwritten
 *     cache memory may hold NaN).
 *  5. Cross-warp reduction in shared memory; V1 writes out, V2 writes the
 *     partition's normalized output + max + sum, merged by reduce_kernel.
 * Block sizes: powers of two 1..256 (template classes by (VVEC, NC)).
 * FP8 caches (paged layout only): the element type T is kv8<A, C> (q/out A, caches C, x = 16); the
 * kernel reads C and folds kv_scale out of its loops: q is loaded times
 * softmax scale * kv_scale (q . (c s) = (q s) . c), the output times kv_scale
 * (sum p (c s) = s sum p c).  vLLM v0.5.0 csrc/attention/attention_kernels.cu
 * dequantizes every element instead (scaled_convert in the loops).
 * Without a GPU, kernels/emu/run.sh runs these kernels through a thread-level CPU
 * emulator against attention_ref.c (index math, masking, reductions, V1/V2). */
#include <math.h>

#include "attention.h"
#include "attn_smem.h"
#include "kernel_common.cuh"

namespace {

using namespace pbk;

constexpr int NUM_THREADS = 128;
constexpr int NUM_WARPS = NUM_THREADS / 32;
constexpr int KG = 4;              /* threads per token in q.K            */
constexpr int QK_UNROLL = 2;       /* tokens per thread group per step    */
constexpr int WARP_TOKENS = 32 / KG * QK_UNROLL;   /* 16 tokens per warp step */

/* The element types of a decode kernel: T is the q/out and cache type (auto), or
   kv8<A, C> for q/out A over fp8 caches C (__nv_fp8_e4m3 / __nv_fp8_e5m2). */
template <typename A, typename C> struct kv8 {};
template <typename T> struct kv_types {
    typedef T act;
    typedef T cache;
    static constexpr bool fp8 = false;
};
template <typename A, typename C> struct kv_types<kv8<A, C>> {
    typedef A act;
    typedef C cache;
    static constexpr bool fp8 = true;
};

struct DecodeArgs {
    void *out;                     /* [S, H, D] (V1)                      */
    const void *q;                 /* [S, q_stride]                       */
    const void *k_cache, *v_cache;
    const int32_t *block_tables;   /* paged  [S, bt_stride]               */
    const int64_t *kv_offsets;     /* contig [S]                          */
    const int32_t *context_lens;   /* [S]                                 */
    float *exp_sums, *max_logits;  /* V2 [S, H, max_parts]                */
    float *tmp_out;                /* V2 [S, H, max_parts, D]             */
    int32_t num_heads, q_per_kv, num_kv_heads, q_stride, bt_stride;
    int32_t block_size, bs_shift;  /* bs_shift = log2(block_size)         */
    int64_t num_slots;
    int32_t part_tokens;           /* tokens per CTA (V1: padded max ctx) */
    int32_t max_parts;             /* V2 partitions (V1: 1)               */
    int32_t blk_smem;              /* ints reserved for block ids         */
    float scale;
    float kv_scale;                /* fp8 caches; 1 otherwise             */
    int v2;
};

template <typename T, int HEAD, int VVEC, int NC, bool PAGED>
__global__ void __launch_bounds__(NUM_THREADS)
decode_kernel(const DecodeArgs a) {
    typedef typename kv_types<T>::act A;              /* q, out                   */
    typedef typename kv_types<T>::cache C;            /* K/V cache elements       */
    constexpr bool FP8 = kv_types<T>::fp8;
    constexpr int X = 16 / (int)sizeof(C);
    constexpr int VX = X < 8 ? X : 8;                 /* longest V vector (elements) */
    constexpr int NCHUNK = HEAD / X;
    constexpr int CPT = (NCHUNK + KG - 1) / KG;       /* K chunks per thread      */
    constexpr int ROWS_PER_STEP = 32 / NC;
    constexpr int NROWS = (HEAD + ROWS_PER_STEP - 1) / ROWS_PER_STEP;
    constexpr int TV = (VX / VVEC) > 1 ? VX / VVEC : 1; /* vectors per lane per step */
    constexpr int VTILE = VVEC * NC * TV;             /* tokens per warp V step   */

    extern __shared__ float smem[];
    float *logits = smem;                             /* [part_tokens]            */
    int *sblk = reinterpret_cast<int *>(smem + a.part_tokens);  /* [blk_smem]    */
    __shared__ float red[2 * NUM_WARPS];
    __shared__ float out_red[NUM_WARPS][HEAD];

    const int h = blockIdx.x, s = blockIdx.y, part = blockIdx.z;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int ctx = a.context_lens[s];
    const int t_begin = part * a.part_tokens;
    const size_t out_row = ((size_t)s * a.num_heads + h) * HEAD;
    if (t_begin >= ctx) {                             /* empty: V1 writes zeros  */
        if (!a.v2 && part == 0)
            for (int d = tid; d < HEAD; d += NUM_THREADS)
                reinterpret_cast<A *>(a.out)[out_row + d] = from_f<A>(0.f);
        return;
    }
    const int t_end = min(ctx, t_begin + a.part_tokens);
    const int n_tok = t_end - t_begin;
    const int kh = h / a.q_per_kv;
    const C *kc = reinterpret_cast<const C *>(a.k_cache);
    const C *vc = reinterpret_cast<const C *>(a.v_cache);

    /* ---- 1. block ids of [t_begin, t_end) ---- */
    int first_blk = 0;
    int64_t contig_base = 0;
    if (PAGED) {
        first_blk = t_begin >> a.bs_shift;
        const int nblk = ((t_end - 1) >> a.bs_shift) - first_blk + 1;
        const int32_t *bt = a.block_tables + (int64_t)s * a.bt_stride + first_blk;
        for (int i = tid; i < nblk; i += NUM_THREADS) sblk[i] = __ldg(bt + i);
        __syncthreads();
    } else {
        contig_base = a.kv_offsets[s];
    }
    /* element offset of token t's head-kh base in the K (chunk stride kstride) and
       V (row stride vstride) caches */
    const int64_t kstride = PAGED ? (int64_t)a.block_size * X : a.num_slots * X;
    const int64_t vstride = PAGED ? (int64_t)a.block_size : a.num_slots;
    auto k_base = [&](int t) -> int64_t {
        if (PAGED) {
            const int lb = t >> a.bs_shift, off = t - (lb << a.bs_shift);
            const int64_t blk = sblk[lb - first_blk];
            return (blk * a.num_kv_heads + kh) * ((int64_t)HEAD * a.block_size) + (int64_t)off * X;
        }
        return (int64_t)kh * HEAD * a.num_slots + (contig_base + t) * X;
    };
    auto v_base = [&](int t) -> int64_t {
        if (PAGED) {
            const int lb = t >> a.bs_shift, off = t - (lb << a.bs_shift);
            const int64_t blk = sblk[lb - first_blk];
            return (blk * a.num_kv_heads + kh) * ((int64_t)HEAD * a.block_size) + off;
        }
        return (int64_t)kh * HEAD * a.num_slots + contig_base + t;
    };

    /* ---- 2. q.K ---- */
    const int g = lane % KG;
    float qf[CPT][X];
    {
        const A *qp = reinterpret_cast<const A *>(a.q) + (int64_t)s * a.q_stride + (int64_t)h * HEAD;
        const float qscale = FP8 ? a.scale * a.kv_scale : a.scale;
#pragma unroll
        for (int c = 0; c < CPT; c++) {
            const int j = g + c * KG;
            if (j < NCHUNK) {
                load_vec<A, X>(qp + j * X, qf[c]);
#pragma unroll
                for (int e = 0; e < X; e++) qf[c][e] *= qscale;
            } else {
#pragma unroll
                for (int e = 0; e < X; e++) qf[c][e] = 0.f;
            }
        }
    }
    float qk_max = -INFINITY;
    for (int base = warp * WARP_TOKENS; base < n_tok; base += NUM_WARPS * WARP_TOKENS) {
        float kf[QK_UNROLL][CPT][X];
        bool valid[QK_UNROLL];
#pragma unroll
        for (int u = 0; u < QK_UNROLL; u++) {
            const int i = base + u * (32 / KG) + lane / KG;
            valid[u] = i < n_tok;
            const C *kp = kc + (valid[u] ? k_base(t_begin + i) : 0);
#pragma unroll
            for (int c = 0; c < CPT; c++) {
                const int j = g + c * KG;
                if (valid[u] && j < NCHUNK) load_vec<C, X>(kp + j * kstride, kf[u][c]);
                else {
#pragma unroll
                    for (int e = 0; e < X; e++) kf[u][c][e] = 0.f;
                }
            }
        }
#pragma unroll
        for (int u = 0; u < QK_UNROLL; u++) {
            float dot = 0.f;
#pragma unroll
            for (int c = 0; c < CPT; c++)
#pragma unroll
                for (int e = 0; e < X; e++) dot = fmaf(qf[c][e], kf[u][c][e], dot);
#pragma unroll
            for (int m = KG / 2; m >= 1; m >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, m);
            if (valid[u]) {
                const int i = base + u * (32 / KG) + lane / KG;
                if (g == 0) logits[i] = dot;
                qk_max = fmaxf(qk_max, dot);
            }
        }
    }

    /* ---- 3. softmax ---- */
    qk_max = warp_max(qk_max);
    if (lane == 0) red[warp] = qk_max;
    __syncthreads();
    qk_max = lane < NUM_WARPS ? red[lane] : -INFINITY;
    qk_max = warp_max(qk_max);
    float sum = 0.f;
    for (int i = tid; i < n_tok; i += NUM_THREADS) {
        const float e = __expf(logits[i] - qk_max);
        logits[i] = e;
        sum += e;
    }
    sum = warp_sum(sum);
    if (lane == 0) red[NUM_WARPS + warp] = sum;
    __syncthreads();
    sum = lane < NUM_WARPS ? red[NUM_WARPS + lane] : 0.f;
    sum = warp_sum(sum);

    /* ---- 4. logits.V ---- */
    const int c = lane % NC, r0 = lane / NC;
    float acc[NROWS];
#pragma unroll
    for (int r = 0; r < NROWS; r++) acc[r] = 0.f;
    /* contiguous: V vectors start at VVEC-aligned slots, so the first vector may
       begin up to VVEC-1 tokens before the sequence (those lanes are masked) */
    const int lead = PAGED ? 0 : (int)((contig_base + t_begin) % VVEC);
    for (int base = warp * VTILE - lead; base < n_tok; base += NUM_WARPS * VTILE) {
#pragma unroll
        for (int u = 0; u < TV; u++) {
            const int i = base + (u * NC + c) * VVEC;
            if (i >= n_tok || i + VVEC <= 0) continue;
            float lw[VVEC];
#pragma unroll
            for (int e = 0; e < VVEC; e++) lw[e] = (i + e >= 0 && i + e < n_tok) ? logits[i + e] : 0.f;
            const C *vp = vc + v_base(t_begin + i);
            if constexpr (FP8) {
                /* fp8: the raw vectors stay packed (VVEC bytes a row) until their
                   product; converted at load, 16 rows x 8 floats took 166 registers */
                typedef typename raw_vec<VVEC>::type R;
                R vr[NROWS];
#pragma unroll
                for (int r = 0; r < NROWS; r++) {
                    const int row = r0 + r * ROWS_PER_STEP;
                    if (row < HEAD) vr[r] = __ldg(reinterpret_cast<const R *>(vp + row * vstride));
                }
#pragma unroll
                for (int r = 0; r < NROWS; r++) {
                    const int row = r0 + r * ROWS_PER_STEP;
                    if (row < HEAD) {
                        const C *ve = reinterpret_cast<const C *>(&vr[r]);
#pragma unroll
                        for (int e = 0; e < VVEC; e++) {
                            const float v = (i + e >= 0 && i + e < n_tok) ? to_f(ve[e]) : 0.f;  /* NaN-safe */
                            acc[r] = fmaf(lw[e], v, acc[r]);
                        }
                    }
                }
            } else {
                float vf[NROWS][VVEC];
#pragma unroll
                for (int r = 0; r < NROWS; r++) {
                    const int row = r0 + r * ROWS_PER_STEP;
                    if (row < HEAD) load_vec<C, VVEC>(vp + row * vstride, vf[r]);
                }
#pragma unroll
                for (int r = 0; r < NROWS; r++) {
                    const int row = r0 + r * ROWS_PER_STEP;
                    if (row < HEAD) {
#pragma unroll
                        for (int e = 0; e < VVEC; e++) {
                            const float v = (i + e >= 0 && i + e < n_tok) ? vf[r][e] : 0.f;  /* NaN-safe */
                            acc[r] = fmaf(lw[e], v, acc[r]);
                        }
                    }
                }
            }
        }
    }
#pragma unroll
    for (int r = 0; r < NROWS; r++) {
#pragma unroll
        for (int m = NC / 2; m >= 1; m >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], m);
    }
    if (c == 0) {
#pragma unroll
        for (int r = 0; r < NROWS; r++) {
            const int row = r0 + r * ROWS_PER_STEP;
            if (row < HEAD) out_red[warp][row] = acc[r];
        }
    }
    __syncthreads();

    /* ---- 5. output ---- */
    const float inv_sum = 1.f / sum;
    for (int d = tid; d < HEAD; d += NUM_THREADS) {
        float o = 0.f;
#pragma unroll
        for (int w = 0; w < NUM_WARPS; w++) o += out_red[w][d];
        o *= inv_sum;
        if (FP8) o *= a.kv_scale;
        if (!a.v2) {
            reinterpret_cast<A *>(a.out)[out_row + d] = from_f<A>(o);
        } else {
            const size_t pi = ((size_t)s * a.num_heads + h) * a.max_parts + part;
            a.tmp_out[pi * HEAD + d] = o;
            if (d == 0) { a.max_logits[pi] = qk_max; a.exp_sums[pi] = sum; }
        }
    }
}

/* V2 merge: grid (H, S), 128 threads, dynamic smem max_parts floats */
template <typename T>
__global__ void __launch_bounds__(NUM_THREADS)
reduce_kernel(void *out, const float *exp_sums, const float *max_logits, const float *tmp_out,
              const int32_t *context_lens, int num_heads, int head_size, int max_parts,
              int part_tokens) {
    extern __shared__ float w[];
    __shared__ float red[NUM_WARPS];
    const int h = blockIdx.x, s = blockIdx.y, tid = threadIdx.x;
    const int ctx = context_lens[s];
    const int n_parts = (ctx + part_tokens - 1) / part_tokens;
    T *o = reinterpret_cast<T *>(out) + ((size_t)s * num_heads + h) * head_size;
    if (n_parts == 0) {
        for (int d = tid; d < head_size; d += NUM_THREADS) o[d] = from_f<T>(0.f);
        return;
    }
    const size_t pbase = ((size_t)s * num_heads + h) * max_parts;
    float m = -INFINITY;
    for (int p = tid; p < n_parts; p += NUM_THREADS) m = fmaxf(m, max_logits[pbase + p]);
    m = warp_max(m);
    if ((tid & 31) == 0) red[tid >> 5] = m;
    __syncthreads();
    m = red[0];
    for (int i = 1; i < NUM_WARPS; i++) m = fmaxf(m, red[i]);
    for (int p = tid; p < n_parts; p += NUM_THREADS)
        w[p] = exp_sums[pbase + p] * __expf(max_logits[pbase + p] - m);
    __syncthreads();
    float total = 0.f;
    for (int p = 0; p < n_parts; p++) total += w[p];
    const float inv = 1.f / total;
    for (int d = tid; d < head_size; d += NUM_THREADS) {
        float acc = 0.f;
        for (int p = 0; p < n_parts; p++) acc = fmaf(tmp_out[(pbase + p) * head_size + d], w[p], acc);
        o[d] = from_f<T>(acc * inv);
    }
}

/* ---- launch plumbing ---- */

int log2_exact(int v) {
    if (v <= 0 || (v & (v - 1))) return -1;
    int s = 0;
    while ((1 << s) < v) s++;
    return s;
}

int device_sms(void) {
    static int sms = 0;
    if (!sms) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            sms = 108;
    }
    return sms;
}

/* static (the kernel's attributes) + dynamic shared memory against the device's
   default and opt-in limits (attn_smem.h); raises the kernel's dynamic limit when needed */
template <typename K>
pb_status smem_opt_in(K kern, int dev, size_t dyn) {
    cudaFuncAttributes fa;
    int def = 0, optin = 0;
    PBK_TRY(cudaFuncGetAttributes(&fa, kern));
    PBK_TRY(cudaDeviceGetAttribute(&def, cudaDevAttrMaxSharedMemoryPerBlock, dev));
    PBK_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    switch (pb_smem_plan_for(fa.sharedSizeBytes, dyn, (size_t)def, (size_t)optin)) {
    case PB_SMEM_DEFAULT: return PB_OK;
    case PB_SMEM_OPT_IN:
        PBK_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn));
        return PB_OK;
    default: break;
    }
    pb_log_error("attention: %zu static + %zu dynamic bytes of shared memory exceed the device's %d",
                 (size_t)fa.sharedSizeBytes, dyn, optin);
    return PB_ERR_UNSUPPORTED;
}

template <typename T, int HEAD, int VVEC, int NC, bool PAGED>
pb_status launch_decode_cls(const DecodeArgs &a, dim3 grid, size_t smem, cudaStream_t st) {
    auto kern = decode_kernel<T, HEAD, VVEC, NC, PAGED>;
    /* checked (and opted into) when the dynamic size grows, remembered per instantiation
       and device (not thread-safe: one host thread per device is assumed) */
    static size_t smem_set[64];
    int dev = 0;
    PBK_TRY(cudaGetDevice(&dev));
    if (dev >= 64 || smem > smem_set[dev]) {
        const pb_status rc = smem_opt_in(kern, dev, smem);
        if (rc != PB_OK) return rc;
        if (dev < 64) smem_set[dev] = smem;
    }
    kern<<<grid, NUM_THREADS, smem, st>>>(a);
    PBK_LAUNCHED();
    return PB_OK;
}

template <typename T, int HEAD, bool PAGED>
pb_status launch_decode_head(const DecodeArgs &a, int vvec, int nc, dim3 grid, size_t smem,
                             cudaStream_t st) {
    constexpr int X = 16 / (int)sizeof(typename kv_types<T>::cache), VX = X < 8 ? X : 8;
    /* classes that can occur: VVEC = min(vx, bs), NC > 1 only when VVEC == vx */
#define PBK_CLS(V, N) if (vvec == V && nc == N) { if constexpr (V <= VX && (N == 1 || V == VX)) \
        return launch_decode_cls<T, HEAD, (V <= VX ? V : VX), N, PAGED>(a, grid, smem, st); }
    if constexpr (PAGED) {
        PBK_CLS(1, 1) PBK_CLS(2, 1) PBK_CLS(4, 1) PBK_CLS(4, 2) PBK_CLS(4, 4)
        PBK_CLS(8, 1) PBK_CLS(8, 2) PBK_CLS(8, 4)
    } else {
        if (vvec == VX && nc == 4) return launch_decode_cls<T, HEAD, VX, 4, PAGED>(a, grid, smem, st);
        if (vvec == 1 && nc == 1) return launch_decode_cls<T, HEAD, 1, 1, PAGED>(a, grid, smem, st);
    }
#undef PBK_CLS
    pb_log_error("attention: no kernel for VVEC %d NC %d", vvec, nc);
    return PB_ERR_UNSUPPORTED;
}

template <typename T, bool PAGED>
pb_status launch_decode_t(const DecodeArgs &a, int head, int vvec, int nc, dim3 grid, size_t smem,
                          cudaStream_t st) {
    switch (head) {
    case 64: return launch_decode_head<T, 64, PAGED>(a, vvec, nc, grid, smem, st);
    case 80: return launch_decode_head<T, 80, PAGED>(a, vvec, nc, grid, smem, st);
    case 96: return launch_decode_head<T, 96, PAGED>(a, vvec, nc, grid, smem, st);
    case 128: return launch_decode_head<T, 128, PAGED>(a, vvec, nc, grid, smem, st);
    }
    pb_log_error("attention: head_size %d not compiled (64, 80, 96, 128)", head);
    return PB_ERR_UNSUPPORTED;
}

template <typename T>
pb_status launch_reduce_t(const DecodeArgs &a, int head, int num_seqs, cudaStream_t st) {
    dim3 grid(a.num_heads, num_seqs);
    reduce_kernel<T><<<grid, NUM_THREADS, (size_t)a.max_parts * sizeof(float), st>>>(
        a.out, a.exp_sums, a.max_logits, a.tmp_out, a.context_lens, a.num_heads, head,
        a.max_parts, a.part_tokens);
    PBK_LAUNCHED();
    return PB_OK;
}

template <bool PAGED>
pb_status decode_common(const pb_attn_params *p, pb_attn_algo algo, void *out, const void *q,
                        const void *k_cache, const void *v_cache, const int32_t *block_tables,
                        const int64_t *kv_offsets, const int32_t *context_lens, void *workspace,
                        size_t workspace_bytes, cudaStream_t st) {
    pb_status rc = pb_attn_params_check(p, PAGED);
    if (rc != PB_OK) return rc;
    if (p->num_seqs == 0) return PB_OK;
    const pb_kv_dtype ce = pb_attn_cache_elem(p);
    const int X = pb_kv_x(ce);
    if (ce != p->dtype && p->dtype != PB_KV_F16 && p->dtype != PB_KV_BF16) {
        pb_log_error("attention: an fp8 cache needs fp16 or bf16 q/out on the GPU (got %s)", pb_kv_dtype_name(p->dtype));
        return PB_ERR_UNSUPPORTED;
    }
    if (!PAGED && ce != p->dtype) {
        /* the contiguous baseline stays fp32/fp16/bf16 (vLLM has no such kernel): its
           address map plus fp8 dequantization took 176 registers at head 128 on sm_80 */
        pb_log_error("attention: fp8 caches are paged only on the GPU (the C reference takes both layouts)");
        return PB_ERR_UNSUPPORTED;
    }
    const int VX = X < 8 ? X : 8;   /* longest V vector (the kernel's vx) */
    int bs_shift = 0, vvec = VX, nc = 4;
    if (PAGED) {
        bs_shift = log2_exact(p->block_size);
        if (bs_shift < 0 || p->block_size > 256) {
            pb_log_error("attention: CUDA block_size must be a power of two in 1..256 (got %d)", p->block_size);
            return PB_ERR_UNSUPPORTED;
        }
        vvec = p->block_size < VX ? p->block_size : VX;
        nc = p->block_size / vvec;
        nc = nc < 1 ? 1 : nc > 4 ? 4 : nc;
    } else if (p->num_slots % VX) {
        vvec = 1;            /* V rows not vector-aligned: scalar V loads (slower) */
        nc = 1;
    }
    {
        const int qs = p->q_stride ? p->q_stride : p->num_heads * p->head_size;
        if (qs % X || ((uintptr_t)q & 15) || ((uintptr_t)k_cache & 15) || ((uintptr_t)v_cache & 15) ||
            ((uintptr_t)out & 15)) {
            pb_log_error("attention: CUDA path needs 16-byte aligned q/out/caches and q_stride %% %d == 0", X);
            return PB_ERR_UNSUPPORTED;
        }
    }
    if (algo == PB_ATTN_AUTO) {
        algo = pb_paged_attention_choose(p, device_sms());
        if (algo == PB_ATTN_V2 && workspace_bytes < pb_paged_attention_workspace_bytes(p) &&
            p->max_context_len <= PB_ATTN_V1_MAX_CONTEXT)
            algo = PB_ATTN_V1;
    }
    const int max_ctx = p->max_context_len > 0 ? p->max_context_len : 1;
    DecodeArgs a;
    a.out = out; a.q = q; a.k_cache = k_cache; a.v_cache = v_cache;
    a.block_tables = block_tables; a.kv_offsets = kv_offsets; a.context_lens = context_lens;
    a.exp_sums = a.max_logits = a.tmp_out = nullptr;
    a.num_heads = p->num_heads; a.q_per_kv = p->num_heads / p->num_kv_heads;
    a.num_kv_heads = p->num_kv_heads;
    a.q_stride = p->q_stride ? p->q_stride : p->num_heads * p->head_size;
    a.bt_stride = p->max_blocks_per_seq; a.block_size = p->block_size; a.bs_shift = bs_shift;
    a.num_slots = p->num_slots; a.scale = p->scale;
    a.kv_scale = ce != p->dtype ? p->kv_scale : 1.f;
    if (algo == PB_ATTN_V2) {
        if (workspace_bytes < pb_paged_attention_workspace_bytes(p) || !workspace) {
            pb_log_error("attention: V2 needs %zu workspace bytes (got %zu)",
                         pb_paged_attention_workspace_bytes(p), workspace_bytes);
            return PB_ERR_INVALID;
        }
        a.v2 = 1;
        a.part_tokens = PB_ATTN_PARTITION;
        a.max_parts = (max_ctx + PB_ATTN_PARTITION - 1) / PB_ATTN_PARTITION;
        const size_t n = (size_t)p->num_seqs * p->num_heads * a.max_parts;
        a.exp_sums = reinterpret_cast<float *>(workspace);
        a.max_logits = a.exp_sums + n;
        a.tmp_out = a.max_logits + n;
    } else {
        if (p->max_context_len > PB_ATTN_V1_MAX_CONTEXT) {
            pb_log_error("attention: V1 limited to %d tokens (max_context_len %d): use V2",
                         PB_ATTN_V1_MAX_CONTEXT, p->max_context_len);
            return PB_ERR_INVALID;
        }
        a.v2 = 0;
        a.part_tokens = (max_ctx + 15) / 16 * 16;
        a.max_parts = 1;
    }
    a.blk_smem = pb_attn_decode_blk_ints(a.part_tokens, PAGED ? bs_shift : -1);
    const size_t smem = pb_attn_decode_dynamic_smem(a.part_tokens, a.blk_smem);
    dim3 grid(p->num_heads, p->num_seqs, a.max_parts);
    const bool half_q = p->dtype == PB_KV_F16;
    switch (ce) {
    case PB_KV_F32: rc = launch_decode_t<float, PAGED>(a, p->head_size, vvec, nc, grid, smem, st); break;
    case PB_KV_F16: rc = launch_decode_t<__half, PAGED>(a, p->head_size, vvec, nc, grid, smem, st); break;
    case PB_KV_BF16: rc = launch_decode_t<__nv_bfloat16, PAGED>(a, p->head_size, vvec, nc, grid, smem, st); break;
    case PB_KV_FP8_E4M3:
        if constexpr (PAGED)
            rc = half_q ? launch_decode_t<kv8<__half, __nv_fp8_e4m3>, true>(a, p->head_size, vvec, nc, grid, smem, st)
                        : launch_decode_t<kv8<__nv_bfloat16, __nv_fp8_e4m3>, true>(a, p->head_size, vvec, nc, grid, smem, st);
        break;
    case PB_KV_FP8_E5M2:
        if constexpr (PAGED)
            rc = half_q ? launch_decode_t<kv8<__half, __nv_fp8_e5m2>, true>(a, p->head_size, vvec, nc, grid, smem, st)
                        : launch_decode_t<kv8<__nv_bfloat16, __nv_fp8_e5m2>, true>(a, p->head_size, vvec, nc, grid, smem, st);
        break;
    }
    if (rc != PB_OK || !a.v2) return rc;
    switch (p->dtype) {
    case PB_KV_F32: return launch_reduce_t<float>(a, p->head_size, p->num_seqs, st);
    case PB_KV_F16: return launch_reduce_t<__half>(a, p->head_size, p->num_seqs, st);
    case PB_KV_BF16: return launch_reduce_t<__nv_bfloat16>(a, p->head_size, p->num_seqs, st);
    default: break;   /* fp8 is a cache format, never q/out (checked above) */
    }
    return PB_ERR_INVALID;
}

/* ---- prefill: tiles of BQ queries x BK keys of one (sequence, head) ---- */
constexpr int BQ = 16;                       /* queries per CTA (4 per warp) */
constexpr int BK = 32;                       /* keys per tile (one per lane)  */

struct PrefillArgs {
    void *out;
    const void *q, *k, *v;
    const int32_t *cu_q, *cu_k;
    int32_t num_heads, q_per_kv, q_stride, k_stride, v_stride;
    float scale;
};

template <typename T, int HEAD>
__global__ void __launch_bounds__(NUM_THREADS) prefill_kernel(const PrefillArgs a) {
    constexpr int DPL = (HEAD + 31) / 32;    /* output dims per lane */
    __shared__ float qs[BQ][HEAD];
    __shared__ float ks[BK][HEAD + 1];
    __shared__ float vs[BK][HEAD];
    const int qt = blockIdx.x, h = blockIdx.y, s = blockIdx.z;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int q0 = a.cu_q[s], ql = a.cu_q[s + 1] - q0;
    const int k0 = a.cu_k[s], kl = a.cu_k[s + 1] - k0;
    const int qbeg = qt * BQ;
    if (qbeg >= ql) return;
    const int qn = min(BQ, ql - qbeg);
    const int shift = kl - ql;               /* query i sees keys <= i + shift */
    const int kh = h / a.q_per_kv;
    const T *Q = reinterpret_cast<const T *>(a.q), *K = reinterpret_cast<const T *>(a.k);
    const T *V = reinterpret_cast<const T *>(a.v);
    for (int e = tid; e < BQ * HEAD; e += NUM_THREADS) {
        const int i = e / HEAD, d = e % HEAD;
        qs[i][d] = i < qn ? to_f(Q[(int64_t)(q0 + qbeg + i) * a.q_stride + (int64_t)h * HEAD + d]) * a.scale : 0.f;
    }
    float m[BQ / NUM_WARPS], l[BQ / NUM_WARPS], acc[BQ / NUM_WARPS][DPL];
#pragma unroll
    for (int r = 0; r < BQ / NUM_WARPS; r++) {
        m[r] = -INFINITY; l[r] = 0.f;
#pragma unroll
        for (int j = 0; j < DPL; j++) acc[r][j] = 0.f;
    }
    const int k_hi = min(kl, qbeg + qn - 1 + shift + 1);   /* keys needed by this tile */
    for (int kb = 0; kb < k_hi; kb += BK) {
        __syncthreads();
        for (int e = tid; e < BK * HEAD; e += NUM_THREADS) {
            const int j = e / HEAD, d = e % HEAD;
            const bool ok = kb + j < kl;
            const int64_t row = k0 + kb + j;
            ks[j][d] = ok ? to_f(K[row * a.k_stride + (int64_t)kh * HEAD + d]) : 0.f;
            vs[j][d] = ok ? to_f(V[row * a.v_stride + (int64_t)kh * HEAD + d]) : 0.f;
        }
        __syncthreads();
#pragma unroll
        for (int r = 0; r < BQ / NUM_WARPS; r++) {
            const int qi = warp * (BQ / NUM_WARPS) + r;        /* warp-uniform */
            if (qi >= qn) continue;
            const int key = kb + lane;
            const bool vis = key < kl && key <= qbeg + qi + shift;
            float sc = 0.f;
#pragma unroll 8
            for (int d = 0; d < HEAD; d++) sc = fmaf(qs[qi][d], ks[lane][d], sc);
            sc = vis ? sc : -INFINITY;
            const float tmax = warp_max(sc);
            if (tmax == -INFINITY) continue;                  /* nothing visible here */
            const float mn = fmaxf(m[r], tmax);
            const float corr = __expf(m[r] - mn);
            const float pj = vis ? __expf(sc - mn) : 0.f;
            l[r] = l[r] * corr + warp_sum(pj);
            m[r] = mn;
#pragma unroll
            for (int j = 0; j < DPL; j++) acc[r][j] *= corr;
            for (int j2 = 0; j2 < BK; j2++) {
                const float pb = __shfl_sync(0xffffffffu, pj, j2);
#pragma unroll
                for (int j = 0; j < DPL; j++) {
                    const int d = lane + 32 * j;
                    if (d < HEAD) acc[r][j] = fmaf(pb, vs[j2][d], acc[r][j]);
                }
            }
        }
    }
    T *O = reinterpret_cast<T *>(a.out);
#pragma unroll
    for (int r = 0; r < BQ / NUM_WARPS; r++) {
        const int qi = warp * (BQ / NUM_WARPS) + r;
        if (qi >= qn) continue;
        const float inv = 1.f / l[r];
#pragma unroll
        for (int j = 0; j < DPL; j++) {
            const int d = lane + 32 * j;
            if (d < HEAD) O[((int64_t)(q0 + qbeg + qi) * a.num_heads + h) * HEAD + d] = from_f<T>(acc[r][j] * inv);
        }
    }
}

template <typename T>
pb_status launch_prefill_t(const PrefillArgs &a, int head, dim3 grid, cudaStream_t st) {
    switch (head) {
    case 64: prefill_kernel<T, 64><<<grid, NUM_THREADS, 0, st>>>(a); break;
    case 80: prefill_kernel<T, 80><<<grid, NUM_THREADS, 0, st>>>(a); break;
    case 96: prefill_kernel<T, 96><<<grid, NUM_THREADS, 0, st>>>(a); break;
    case 128: prefill_kernel<T, 128><<<grid, NUM_THREADS, 0, st>>>(a); break;
    default:
        pb_log_error("prefill attention: head_size %d not compiled (64, 80, 96, 128)", head);
        return PB_ERR_UNSUPPORTED;
    }
    PBK_LAUNCHED();
    return PB_OK;
}

} /* namespace */

extern "C" pb_status pb_paged_attention_cuda(const pb_attn_params *p, pb_attn_algo algo,
                                             void *out, const void *q, const void *k_cache,
                                             const void *v_cache, const int32_t *block_tables,
                                             const int32_t *context_lens, void *workspace,
                                             size_t workspace_bytes, struct CUstream_st *stream) {
    return decode_common<true>(p, algo, out, q, k_cache, v_cache, block_tables, nullptr,
                               context_lens, workspace, workspace_bytes, stream);
}

extern "C" pb_status pb_contig_attention_cuda(const pb_attn_params *p, pb_attn_algo algo,
                                              void *out, const void *q, const void *k_cache,
                                              const void *v_cache, const int64_t *kv_offsets,
                                              const int32_t *context_lens, void *workspace,
                                              size_t workspace_bytes, struct CUstream_st *stream) {
    return decode_common<false>(p, algo, out, q, k_cache, v_cache, nullptr, kv_offsets,
                                context_lens, workspace, workspace_bytes, stream);
}

extern "C" pb_status pb_prefill_attention_cuda(const pb_prefill_params *p, void *out, const void *q,
                                               const void *k, const void *v,
                                               const int32_t *cu_seqlens_q,
                                               const int32_t *cu_seqlens_k,
                                               struct CUstream_st *stream) {
    pb_status rc = pb_prefill_params_check(p);
    if (rc != PB_OK) return rc;
    if (p->num_seqs == 0 || p->max_q_len == 0) return PB_OK;
    PrefillArgs a;
    a.out = out; a.q = q; a.k = k; a.v = v; a.cu_q = cu_seqlens_q; a.cu_k = cu_seqlens_k;
    a.num_heads = p->num_heads; a.q_per_kv = p->num_heads / p->num_kv_heads;
    a.q_stride = p->q_stride ? p->q_stride : p->num_heads * p->head_size;
    a.k_stride = p->k_stride ? p->k_stride : p->num_kv_heads * p->head_size;
    a.v_stride = p->v_stride ? p->v_stride : p->num_kv_heads * p->head_size;
    a.scale = p->scale;
    dim3 grid((p->max_q_len + BQ - 1) / BQ, p->num_heads, p->num_seqs);
    switch (p->dtype) {
    case PB_KV_F32: return launch_prefill_t<float>(a, p->head_size, grid, stream);
    case PB_KV_F16: return launch_prefill_t<__half>(a, p->head_size, grid, stream);
    case PB_KV_BF16: return launch_prefill_t<__nv_bfloat16>(a, p->head_size, grid, stream);
    default: break;   /* fp8 is a cache format (prefill reads activations) */
    }
    return PB_ERR_INVALID;
}
