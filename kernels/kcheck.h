/* kcheck.h -- compare a kernel's output with its reference, llm.c dev/cuda style:
 * element-wise |ref - out| <= atol + rtol * |ref|, NaN/Inf rejected, NMSE
 * (sum (ref-out)^2 / sum ref^2, ggml) bounded; the first mismatches are printed.
 * Used by the kernel tests (CPU and GPU) and by `pagedbench kernels` before it
 * times anything. */
#ifndef PB_KCHECK_H
#define PB_KCHECK_H

#include <stddef.h>

#include "attention.h"   /* pb_attn_params */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    double atol, rtol;      /* element tolerance                                */
    double nmse_max;        /* normalized MSE bound                             */
    int max_print;          /* mismatches printed (<= 5 typical)                */
} pb_kcheck_tol;

typedef struct {
    size_t n_bad;           /* elements outside atol + rtol*|ref| (NaN/Inf count) */
    size_t n_nonfinite;     /* NaN or Inf in out (or ref)                         */
    double max_abs_err;
    double nmse;
} pb_kcheck_result;

/* ref[n], out[n] fp32.  Prints "<what>: ..." lines to stderr for the first
 * mismatches and a summary on failure.  Returns 0 when everything matches, 1 if not. */
int pb_kcheck(const char *what, const float *ref, const float *out, size_t n,
              const pb_kcheck_tol *tol, pb_kcheck_result *res);

/* The largest |out - ref| of decode attention when K and V are read through an fp8
 * cache (p->kv_cache_dtype, p->kv_scale) instead of exactly, per output element,
 * derived from the format's precision (kv_dtype.h): with u its unit roundoff and
 * a = kv_scale * its absolute floor, every dequantized element has |k' - k| <=
 * u|k| + a (no saturation: |k| / kv_scale <= the format's max).  For query head
 * (s, h) with keys of KV head kh:
 *   logits   |l'_t - l_t| <= delta = scale * max_t sum_d |q_d| (u |k_td| + a)
 *   softmax  p'_t / p_t lies in [e^-2delta, e^2delta], so the weights move the
 *            output by at most (e^(2 delta) - 1) max_t |v_td|
 *   values   sum_t p'_t |v'_td - v_td| <= u max_t |v_td| + a
 *   bound[s, h, d] = (e^(2 delta) - 1 + u) max_t |v_td| + a   (one key: u max |v| + a)
 * q [S, q_stride] (0: H*D) and the exact K/V dense_k/dense_v [S][max_ctx][Hkv][D]
 * (attn_case.h) as fp32; bound [S, H, D].  Rounding the output to its dtype and
 * the kernels' fp32 sums are not in it (callers add their atol / rtol). */
void pb_attn_fp8_bound(const pb_attn_params *p, const float *q, const float *dense_k,
                       const float *dense_v, const int32_t *context_lens, int32_t max_ctx,
                       float *bound);

/* |ref[i] - out[i]| <= bound[i] + atol + rtol * |ref[i]| for every i (NaN fails);
 * prints like pb_kcheck; res gets the counts and the largest error.  0 ok, 1 not. */
int pb_kcheck_bound(const char *what, const float *ref, const float *out, const float *bound,
                    size_t n, double atol, double rtol, int max_print, pb_kcheck_result *res);

#ifdef __cplusplus
}
#endif
#endif /* PB_KCHECK_H */
