/* kbaseline.h -- kernel benchmark results, baseline files and the regression check
 * behind `pagedbench kernels --check/--update`.
 *
 * A result is a named number: a latency (median µs, lower is better) or a ratio
 * (paged / contiguous latency at equal shapes: machine-independent, lower is
 * better).  A baseline file is JSON written one entry per line, so that the small
 * line reader below can parse it without a JSON library:
 *   {
 *     "device": "NVIDIA H100 80GB HBM3",
 *     "mode": "gpu",                       ("gpu" or "cpu-reference")
 *     "tolerance": 0.10,                   latency may grow by this fraction
 *     "ratio_tolerance": 0.05,             a ratio may grow by this fraction
 *     "entries": [
 *       {"name": "fig18a/paged/b8-ctx64-bs16", "kind": "us", "value": 12.345},
 *       {"name": "fig18a/ratio/b8-ctx64", "kind": "ratio", "value": 1.012}
 *     ]
 *   }
 * Check: a result regresses when value > baseline * (1 + tolerance of its kind).  A
 * "cpu-reference" baseline was measured on some host CPU and is checked on another: the
 * latencies of each grid (the name up to its second '/': "cpu/swap") are first scaled by
 * this machine's factor for that grid, the median of current / baseline over it (printed;
 * compute-bound and copy-bound grids scale differently from one CPU to another), so that
 * a faster or slower CPU neither hides nor fakes a regression -- a kernel regresses when
 * it slowed down against the others of its grid; the ratios need no scaling.  A "gpu"
 * baseline is the device's own: latencies unscaled.
 * Baseline entries that were not measured are listed but do not fail (a --grid
 * subset); a check that compares nothing fails. */
#ifndef PB_KBASELINE_H
#define PB_KBASELINE_H

#include <stdio.h>

#include "pb.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { PB_KB_US = 0, PB_KB_RATIO = 1 } pb_kb_kind;

typedef struct {
    char name[96];
    pb_kb_kind kind;
    double value;        /* median µs or ratio                                   */
    double bytes;        /* bytes moved per call (0: not a bandwidth kernel)     */
    double gbps;         /* bytes / median                                       */
    double pct_peak;     /* % of the reference bandwidth (HBM or PCIe); <0: n/a  */
    double pct_measured; /* % of a bandwidth measured in the same run; <0: n/a   */
} pb_kb_result;

typedef struct {
    char device[128];
    char mode[32];
    double tolerance, ratio_tolerance;
    pb_kb_result *e;
    int n, cap;
} pb_kb_set;

void pb_kb_set_init(pb_kb_set *s);
void pb_kb_set_free(pb_kb_set *s);
/* append (copies r); returns the stored entry */
pb_kb_result *pb_kb_set_add(pb_kb_set *s, const pb_kb_result *r);
const pb_kb_result *pb_kb_set_find(const pb_kb_set *s, const char *name);

/* Parse a baseline file.  Errors: "path:line:col: message" in err (PB_ERR_IO when
 * the file cannot be read, PB_ERR_INVALID when malformed). */
pb_status pb_kb_load(const char *path, pb_kb_set *out, char *err, size_t err_len);
pb_status pb_kb_parse(const char *path, const char *text, pb_kb_set *out, char *err, size_t err_len);
/* Write s as a baseline file atomically (pb_write_file_atomic). */
pb_status pb_kb_save(const char *path, const pb_kb_set *s);

/* Compare current results with a baseline; prints the machine factor (cpu-reference)
 * and one line per compared entry to f.  Returns the number of regressions;
 * *n_compared receives the number compared. */
int pb_kb_compare(const pb_kb_set *base, const pb_kb_set *cur, FILE *f, int *n_compared);

#ifdef __cplusplus
}
#endif
#endif /* PB_KBASELINE_H */
