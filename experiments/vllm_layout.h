/* vllm_layout.h -- a sweep point as vLLM bench serve's --save-result JSON.
 *
 * The layout is that of vllm-project/vllm vllm/benchmarks/serve.py at commit
 * def9ce85ba1079af970a58ed3d42dd861ae35d58 (`vllm bench serve`, the successor of
 * benchmarks/benchmark_serving.py, whose commit 0049e29c41fd writes the same fields but
 * spells goodput "request_goodput:"): main_async's result_json (setup, traffic, ramp)
 * merged with benchmark()'s result (totals, throughputs, the --save-detailed lists, and
 * mean_/median_/std_/p<P>_ for each metric of --percentile-metrics).  pb_vllm_fields lists
 * every field that file writes, with the metric of ours it holds or why it does not apply
 * (tests/test_vllm_layout.c checks the writer against it).
 *
 * A point's file holds (n/a: left out)
 *   date                 n/a: a simulation has no wall-clock date (results are byte-identical);
 *                        a point measured by `loadgen`: when it started (measured->date)
 *   endpoint_type, backend  "pagedbench-<executor>" (sim, cpu, cuda); "pagedbench-loadgen"
 *                        for a measured point
 *   label                the system id; model_id: the model's name (measured: the name the
 *                        server was sent); tokenizer_id: the model's name
 *   num_prompts          requests in the trace; request_rate: the workload's rate ("inf" for
 *                        burst arrivals and ramps, as vLLM); burstiness: gamma's, else 1;
 *                        max_concurrency: null (no client-side limit)
 *   ramp_up_strategy, ramp_up_start_rps, ramp_up_end_rps   with a workload ramp
 *   the totals and latency statistics of the point (point_out.h) under vLLM's names, in
 *   vLLM's units (ms; duration s); percentiles: the experiment's `percentiles:`; the metrics
 *   ttft, tpot, itl and e2el (vLLM's --percentile-metrics ttft,tpot,itl,e2el)
 *   with the runner's --requests (vLLM's --save-detailed): input_lens, output_lens, ttfts
 *   (seconds, null for a request that never got a first token) and errors ("" for a
 *   finished request, "rejected", "aborted" or "unfinished")
 * plus the point's identity as --metadata would add it: experiment, system, seed and each
 * sweep axis by name. */
#ifndef PB_VLLM_LAYOUT_H
#define PB_VLLM_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>

#include "experiment.h"
#include "point.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *name;      /* the field, as vLLM writes it ("p99_ttft_ms": one per percentile) */
    const char *ours;      /* the point metric it holds (NULL: setup or a per-request list)  */
    const char *not_here;  /* why we leave it out (NULL: written)                            */
} pb_vllm_field;

/* Every field of the pinned file's --save-result JSON, NULL-terminated.  The per-metric
 * statistics appear once per metric (mean_ttft_ms ... p99_e2el_ms for the default p99). */
extern const pb_vllm_field pb_vllm_fields[];

/* vLLM's name of a metric as ours ("mean_ttft_ms" -> "ttft_mean_ms", "median_itl_ms" ->
 * "itl_p50_ms", "p99.9_e2el_ms" -> "e2el_p99.9_ms", "request_throughput" ->
 * "request_throughput_per_s" ...): true and buf set, or false for a name of no metric. */
bool pb_vllm_field_to_ours(const char *vllm, char *buf, size_t n);

/* A point measured against a server (`loadgen`), not predicted. */
typedef struct {
    const char *date;      /* vLLM's format, "20250101-120000" (local time)                */
    const char *model;     /* the model name the server was sent                           */
} pb_vllm_measured;

/* Write point (sys, point) of e -- its metrics m, axis values vals -- to path, atomically.
 * req_csv: the point's per-request file (point_out.h columns) for the --save-detailed
 * lists, or NULL; measured: NULL for a prediction.  PB_OK, or PB_ERR_IO / PB_ERR_INVALID with a message in err. */
pb_status pb_vllm_write_point(const pb_experiment *e, int sys, int point, const double *vals,
                              const pb_point_metrics *m, const char *req_csv, const pb_vllm_measured *measured,
                              const char *path, char *err, size_t err_n);

/* The file of point (sys, vals) in folder dir: dir/<experiment>-<system>[-<axis><value>...].json
 * (an axis name's characters other than [A-Za-z0-9._-] written "_"). */
void pb_vllm_point_file(const pb_experiment *e, int sys, const double *vals, const char *dir, char *path, size_t pn);

#ifdef __cplusplus
}
#endif
#endif /* PB_VLLM_LAYOUT_H */
