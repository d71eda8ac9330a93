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
