/* kcheck.h -- compare a kernel's output with its reference, llm.c dev/cuda style:
 * element-wise |ref - out| <= atol + rtol * |ref|, NaN/Inf rejected, NMSE
 * (sum (ref-out)^2 / sum ref^2, ggml) bounded; the first mismatches are printed.
 * Used by the kernel tests (CPU and GPU) and by `pagedbench kernels` before it
 * times anything. */
#ifndef PB_KCHECK_H
#define PB_KCHECK_H

#include <stddef.h>

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

#ifdef __cplusplus
}
#endif
#endif /* PB_KCHECK_H */
