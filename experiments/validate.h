/* validate.h -- predict public GPU step measurements with the sim.
 *
 * experiments/validation/measurements.csv lists real step-level timings from public
 * repositories (Sarathi-Serve Yi-34B TP2, Splitwise Llama-2-70B / BLOOM-176B, the vLLM
 * artifact's FasterTransformer OPT-13B logs), none of which sets a cost-model parameter.
 * Each row names a model spec, a hardware spec (its base keys and its cost_model: map), a
 * tensor-parallel degree, an engine and one kind of measurement; pb_val_predict() builds the
 * batches that measurement ran and prices them with the sim's public API (pb_sim_step), so
 * whatever calibration the hardware YAMLs hold is what gets validated.
 *
 * Table format: CSV with '#' comment lines, a header naming the columns (any order)
 *   source,model,gpu,tp,engine,kind,params,measured_ms,skip,ref
 * engine: vllm (paged attention, block 16, Python host costs) | ft (contiguous, C++ host).
 * kind and params (space-separated key=value; see the table's header for what each models):
 *   decode   batch=B ctx=LO..HI             mean over c in [LO, HI] of one decode step of B
 *                                           sequences of KV length c
 *   prefill  prompt=P [chunk=C]             ceil(P/C) chunk steps over the cached prefix, summed
 *   hybrid   prompt=P batch=B ctx=LO..HI    one step: P prefill tokens + B decodes (mean over c)
 *   ft_batch batch=B beams=W in=I out=O     one prefill step, then O-1 decode steps of B*W seqs
 * A non-empty `skip` (a reason) lists the row without predicting it.
 * Bad input: `file:line:col: column: message`, before anything is predicted. */
#ifndef PB_VALIDATE_H
#define PB_VALIDATE_H

#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "executor_sim.h"
#include "pb.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { PB_VAL_DECODE = 0, PB_VAL_PREFILL, PB_VAL_HYBRID, PB_VAL_FT_BATCH } pb_val_kind;
typedef enum { PB_VAL_VLLM = 0, PB_VAL_FT = 1 } pb_val_engine;

#define PB_VAL_VLLM_BLOCK 16   /* vLLM's (and Sarathi's) default KV block size */

typedef struct {
    int line;                  /* 1-based line in the table                             */
    int col_model, col_gpu, col_tp;   /* 1-based columns of those cells, for errors  */
    char source[32], model[64], gpu[64];
    int32_t tp;
    pb_val_engine engine;
    pb_val_kind kind;
    char params[128];          /* as written: "batch=8 ctx=1021..1023"                  */
    /* parsed params (0 when absent) */
    int32_t batch, beams, prompt, chunk, ctx_lo, ctx_hi, in, out;
    double measured_ms;
    char skip[512];            /* reason, "" = predicted                                */
    char ref[256];
} pb_val_row;

typedef struct {
    char path[1024];
    int n;
    pb_val_row *rows;
} pb_val_table;

/* Load and check a table.  On error *out is NULL and err holds every problem found. */
pb_status pb_val_load(const char *path, pb_val_table **out, pb_cfg_err *err);
void pb_val_free(pb_val_table *t);
/* Invariants of a loaded table (positive sizes, ctx_lo <= ctx_hi, ...): PB_OK or PB_ERR_INVALID. */
pb_status pb_val_check(const pb_val_table *t);

/* The sim parameters of an engine: vllm -> paged + python, ft -> contiguous + cpp. */
pb_sim_params pb_val_engine_params(pb_val_engine e);

/* Predicted milliseconds of one row on a sim built for its model, GPU, tp and engine. */
double pb_val_predict_row(const pb_sim *s, const pb_val_row *r);

/* Predict every row: models from spec_dir/models, hardware (base keys and cost_model:)
 * from hw_dir/<gpu>.yaml.  pred_ms[i] = NAN for skipped rows.  Every spec is loaded and
 * every sim built before the first prediction; an unknown or invalid spec is an error at
 * the row that names it (err), nothing predicted. */
pb_status pb_val_predict(const pb_val_table *t, const char *spec_dir, const char *hw_dir, double *pred_ms,
                         pb_cfg_err *err);
/* The same with the vllm-engine rows' attention kernel vllm_attn (pb_val_predict: paged;
 * flash: the FlashAttention-2 kernel of V1 and of Sarathi-Serve's engine); FT rows keep
 * the contiguous kernel. */
pb_status pb_val_predict_kernel(const pb_val_table *t, const char *spec_dir, const char *hw_dir, pb_sim_attn vllm_attn,
                                double *pred_ms, pb_cfg_err *err);

/* Signed error in percent: 100 * (pred - meas) / meas. */
double pb_val_err_pct(double pred_ms, double meas_ms);
/* Median and max of |err| over the predicted rows (NAN pred skipped); returns their count. */
int pb_val_summary(const pb_val_table *t, const double *pred_ms, double *median_abs, double *max_abs);

/* A row's description for the `what` column: "<kind> <params>" (no commas). */
void pb_val_what(const pb_val_row *r, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* PB_VALIDATE_H */
