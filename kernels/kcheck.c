/* kcheck.c -- reference-vs-kernel comparison (see kcheck.h). */
#include <math.h>
#include <stdio.h>

#include "kcheck.h"

int pb_kcheck(const char *what, const float *ref, const float *out, size_t n,
              const pb_kcheck_tol *tol, pb_kcheck_result *res) {
    pb_kcheck_result r = {0, 0, 0.0, 0.0};
    double num = 0, den = 0;
    int printed = 0;
    for (size_t i = 0; i < n; i++) {
        double a = ref[i], b = out[i];
        int bad;
        if (!isfinite(a) || !isfinite(b)) {
            r.n_nonfinite++;
            bad = 1;
        } else {
            double err = fabs(a - b);
            if (err > r.max_abs_err) r.max_abs_err = err;
            num += err * err;
            den += a * a;
            bad = !(err <= tol->atol + tol->rtol * fabs(a));
        }
        if (bad) {
            r.n_bad++;
            if (printed < tol->max_print) {
                fprintf(stderr, "  %s: mismatch at %zu: ref %.7g out %.7g\n", what, i, a, b);
                printed++;
            }
        }
    }
    r.nmse = den > 0 ? num / den : num;
    int fail = r.n_bad > 0 || r.nmse > tol->nmse_max;
    if (fail)
        fprintf(stderr, "  %s: %zu of %zu elements out of tolerance (%zu non-finite), max |err| %.3g, "
                        "NMSE %.3g (max %.3g)\n", what, r.n_bad, n, r.n_nonfinite, r.max_abs_err,
                r.nmse, tol->nmse_max);
    if (res) *res = r;
    return fail;
}

void pb_attn_fp8_bound(const pb_attn_params *p, const float *q, const float *dense_k,
                       const float *dense_v, const int32_t *context_lens, int32_t max_ctx,
                       float *bound) {
    const pb_kv_dtype ce = pb_attn_cache_elem(p);
    const double u = pb_fp8_unit_roundoff(ce), a = pb_fp8_abs_floor(ce) * p->kv_scale;
    const int32_t S = p->num_seqs, H = p->num_heads, Hkv = p->num_kv_heads, D = p->head_size;
    const int64_t qs = p->q_stride ? p->q_stride : (int64_t)H * D;
    for (int32_t s = 0; s < S; s++)
        for (int32_t h = 0; h < H; h++) {
            const int32_t kh = h / (H / Hkv), n = context_lens[s];
            const float *qv = q + s * qs + (int64_t)h * D;
            double delta = 0;
            for (int32_t t = 0; t < n; t++) {
                const float *k = dense_k + (((size_t)s * (size_t)max_ctx + (size_t)t) * (size_t)Hkv + (size_t)kh) * (size_t)D;
                double e = 0;
                for (int32_t d = 0; d < D; d++) e += fabs((double)qv[d]) * (u * fabs((double)k[d]) + a);
                if (e > delta) delta = e;
            }
            delta *= fabs((double)p->scale);
            for (int32_t d = 0; d < D; d++) {
                double vmax = 0;
                for (int32_t t = 0; t < n; t++) {
                    double v = fabs((double)dense_v[(((size_t)s * (size_t)max_ctx + (size_t)t) * (size_t)Hkv + (size_t)kh) * (size_t)D + (size_t)d]);
                    if (v > vmax) vmax = v;
                }
                bound[((size_t)s * (size_t)H + (size_t)h) * (size_t)D + (size_t)d] =
                    n ? (float)(((n > 1 ? expm1(2 * delta) : 0) + u) * vmax + a) : 0.0f;
            }
        }
}

int pb_kcheck_bound(const char *what, const float *ref, const float *out, const float *bound,
                    size_t n, double atol, double rtol, int max_print, pb_kcheck_result *res) {
    pb_kcheck_result r = {0, 0, 0.0, 0.0};
    double num = 0, den = 0;
    int printed = 0;
    for (size_t i = 0; i < n; i++) {
        double a = ref[i], b = out[i], err = fabs(a - b);
        int bad = !isfinite(a) || !isfinite(b) || !(err <= bound[i] + atol + rtol * fabs(a));
        if (!isfinite(a) || !isfinite(b)) r.n_nonfinite++;
        else {
            if (err > r.max_abs_err) r.max_abs_err = err;
            num += err * err;
            den += a * a;
        }
        if (bad) {
            r.n_bad++;
            if (printed++ < max_print)
                fprintf(stderr, "  %s: outside the fp8 bound at %zu: ref %.7g out %.7g bound %.3g\n", what, i, a, b,
                        (double)bound[i]);
        }
    }
    r.nmse = den > 0 ? num / den : num;
    if (r.n_bad)
        fprintf(stderr, "  %s: %zu of %zu elements outside the bound (%zu non-finite), max |err| %.3g\n", what,
                r.n_bad, n, r.n_nonfinite, r.max_abs_err);
    if (res) *res = r;
    return r.n_bad > 0;
}
