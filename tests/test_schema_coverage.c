/* test_schema_coverage.c -- one truth per key: every key of every schema takes effect,
 * and the default its declaration states is the one the code applies.
 *
 * every_schema_key_takes_effect_or_is_a_label walks every schema an experiment YAML
 * can reach (the experiment's, a system's, `executor:`, `workload:` and its `chat:`, a
 * system's `sim:`, the model and hardware specs, the cost model with its frameworks,
 * knee, quick, sweep axes) and needs, for every key, a case below that shows it:
 *   EFFECT  setting it (to the case's value) changes the metrics of a run (point 0 of
 *           system 0, run in-process through pb_system_run_point);
 *   POINTS  setting it changes the points of the sweep (their number or values);
 *   LABEL   it is a label: documented as one (its schema doc, or the reason below), and
 *           setting it leaves every metric unchanged.
 * A key with no case fails ("nothing shows that it is read"), as does a case whose
 * setting changes nothing.  Keys whose effect needs a data file (workload.file, the
 * columns, replay_file) read ../shared/data where it is beside the checkout, else a
 * folder written here with the same layout (made-up ShareGPT and Alpaca lengths, the
 * committed Azure rows of tests/data/shared_subset), so every key is checked anywhere.
 *
 * every_declared_default_is_the_one_applied checks each declaration (pb_schema_check:
 * range, default of a valid value, no default restated in a doc line), then runs, for
 * every optional key, its case's variant (where the key takes effect) without the key
 * and with the key set to what the declaration says the default is: its dflt, or for
 * a key whose default is a rule (dflt_rule), the value the rule gives in that variant
 * (RULES below).  Both runs must agree in every metric, the points and the experiment's
 * settings (title, knee, ...).  A code path that applies another default fails here.
 *   build/cpu/test_schema_coverage */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "executor_sim.h"
#include "experiment.h"
#include "policy.h"
#include "pbtest.h"
#include "runner.h"
#include "spec.h"
#include "system.h"
#include "vllm_version.h"
#include "workload.h"

#define PB_CHECK_MSG(cond, ...) do { if (!(cond)) {                                    \
    fprintf(stderr, "  [FAIL] "); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr);    \
    pb_cur_failed_++; } } while (0)

/* ---- the base configs (variants) ---- */
typedef struct { const char *id, *yaml; } variant;
static const variant VARIANTS[] = {
    /* vLLM under memory pressure: parallel sampling (n 2) swaps, single groups recompute */
    {"sim", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
            "workload: {dataset: alpaca, arrivals: poisson, rate: 20, num_requests: 80, n: 2}\n"
            "systems:\n  - {name: s, type: vllm, kv_slots: 4096}\n"},
    /* the KV space from the specs (no kv_slots) */
    {"spec", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
             "workload: {dataset: alpaca, arrivals: poisson, rate: 20, num_requests: 40}\n"
             "systems:\n  - {name: s, type: vllm}\n"},
    {"orca", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
             "workload: {dataset: sharegpt, arrivals: poisson, rate: 20, num_requests: 60}\n"
             "systems:\n  - {name: s, type: orca, kv_slots: 8192}\n"},
    {"prio", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
             "workload: {dataset: sharegpt, arrivals: poisson, rate: 20, num_requests: 60}\n"
             "systems:\n  - {name: s, type: vllm, policy: priority, kv_slots: 8192}\n"},
    {"tgi", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
            "workload: {dataset: sharegpt, arrivals: poisson, rate: 20, num_requests: 60}\n"
            "systems:\n  - {name: s, type: vllm, policy: tgi}\n"},
    {"sarathi", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
                "workload: {dataset: sharegpt, arrivals: poisson, rate: 20, num_requests: 60}\n"
                "systems:\n  - {name: s, type: vllm, policy: sarathi, kv_slots: 8192}\n"},
    {"ft", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
           "workload: {dataset: sharegpt, arrivals: poisson, rate: 20, num_requests: 60}\n"
           "systems:\n  - {name: s, type: ft, kv_slots: 8192}\n"},
    {"tp2", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\ngpus: 2\n"
            "workload: {dataset: alpaca, arrivals: poisson, rate: 20, num_requests: 40}\n"
            "systems:\n  - {name: s, type: vllm}\n"},
    {"tp4", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\ngpus: 4\n"
            "workload: {dataset: alpaca, arrivals: poisson, rate: 20, num_requests: 40}\n"
            "systems:\n  - {name: s, type: vllm}\n"},
    {"tp8", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\ngpus: 8\n"
            "workload: {dataset: alpaca, arrivals: poisson, rate: 20, num_requests: 40}\n"
            "systems:\n  - {name: s, type: vllm}\n"},
    /* beam search (width 4) on ample KV space */
    {"beam", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
             "workload: {dataset: alpaca, arrivals: poisson, rate: 20, num_requests: 40, beam_width: 4}\n"
             "systems:\n  - {name: s, type: vllm}\n"},
    /* vLLM v0.2: padded prompt-only steps */
    {"v02", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
            "workload: {dataset: sharegpt, arrivals: poisson, rate: 20, num_requests: 60}\n"
            "systems:\n  - {name: s, type: vllm, engine: v0.2, kv_slots: 8192}\n"},
    /* an SLO: goodput and the slo_met check */
    {"slo", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
            "slo: {ttft_ms: 100000, tpot_ms: 100000}\n"
            "workload: {dataset: alpaca, arrivals: poisson, rate: 20, num_requests: 40}\n"
            "systems:\n  - {name: s, type: vllm, kv_slots: 4096}\n"},
    {"long", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
             "workload: {dataset: sharegpt, filter: none, arrivals: poisson, rate: 5, num_requests: 300}\n"
             "systems:\n  - {name: s, type: vllm}\n"},
    {"sweep", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
              "workload: {dataset: alpaca, arrivals: poisson, rate: 2, num_requests: 20}\n"
              "sweep: [{axis: r, set: workload.rate, values: [1, 2, 3, 4]}]\n"
              "systems:\n  - {name: s, type: vllm}\n"},
    {"quick", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
              "workload: {dataset: alpaca, arrivals: poisson, rate: 2, num_requests: 20}\n"
              "sweep: [{axis: r, set: workload.num_requests, values: [10, 20, 30, 40]}]\n"
              "quick: {set: [\"workload.rate=5\"], thin: 3}\n"
              "systems:\n  - {name: s, type: vllm}\n"},
    {"fttp2", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\ngpus: 2\n"
              "workload: {dataset: sharegpt, arrivals: poisson, rate: 20, num_requests: 60}\n"
              "systems:\n  - {name: s, type: ft, kv_slots: 8192}\n"},
    {"cpu", "name: cov\nfigure: cov\nseed: 5\nmodel: tiny-opt\nhardware: a100-40gb\n"
            "executor: {type: cpu, fixed_latency_s: 0.02, kv_slots: 768}\nlength_scale: 0.25\nclamp_to_max_len: true\n"
            "workload: {dataset: sharegpt, arrivals: poisson, rate: 32, num_requests: 12, n: 2}\n"
            "systems:\n  - {name: s, type: vllm}\n"},
    {"cpukv", "name: cov\nfigure: cov\nseed: 5\nmodel: tiny-opt\nhardware: a100-40gb\n"
              "executor: {type: cpu, kv_slots: 768}\nlength_scale: 0.25\nclamp_to_max_len: true\n"
              "workload: {dataset: sharegpt, arrivals: poisson, rate: 32, num_requests: 4}\n"
              "systems:\n  - {name: s, type: vllm}\n"},
    {"cpumib", "name: cov\nfigure: cov\nseed: 5\nmodel: tiny-opt\nhardware: a100-40gb\n"
               "executor: {type: cpu, fixed_latency_s: 0.02}\nlength_scale: 0.25\nclamp_to_max_len: true\n"
               "workload: {dataset: sharegpt, arrivals: poisson, rate: 32, num_requests: 4}\n"
               "systems:\n  - {name: s, type: vllm}\n"},
    /* an fp8 KV cache on the cpu executor: beam search picks beams by logprobs, which
       the cache's kv_scale moves (so the memory metrics move) */
    {"cpufp8", "name: cov\nfigure: cov\nseed: 5\nmodel: tiny-opt\nhardware: a100-40gb\n"
               "executor: {type: cpu, fixed_latency_s: 0.02, kv_slots: 768}\nlength_scale: 0.25\nclamp_to_max_len: true\n"
               "workload: {dataset: sharegpt, arrivals: poisson, rate: 32, num_requests: 3, beam_width: 2}\n"
               "systems:\n  - {name: s, type: vllm, kv_cache_dtype: fp8_e4m3}\n"},
    /* quantized weights, one variant per format (its compute ratio takes effect) */
    {"wqint8", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
              "workload: {dataset: alpaca, arrivals: poisson, rate: 20, num_requests: 40}\n"
              "systems:\n  - {name: s, type: vllm, weights: int8}\n"},
    {"wqfp8", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
              "workload: {dataset: alpaca, arrivals: poisson, rate: 20, num_requests: 40}\n"
              "systems:\n  - {name: s, type: vllm, weights: fp8}\n"},
    {"wqawq", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
              "workload: {dataset: alpaca, arrivals: poisson, rate: 20, num_requests: 40}\n"
              "systems:\n  - {name: s, type: vllm, weights: int4-awq}\n"},
    {"wqgptq", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
              "workload: {dataset: alpaca, arrivals: poisson, rate: 20, num_requests: 40}\n"
              "systems:\n  - {name: s, type: vllm, weights: int4-gptq}\n"},
    /* CUDA graphs on a model small enough for the host launch to bind */
    {"graphs", "name: cov\nfigure: cov\nmodel: tiny-opt\nhardware: a100-40gb\n"
               "workload: {dataset: alpaca, arrivals: poisson, rate: 20, num_requests: 40}\nlength_scale: 0.25\n"
               "systems:\n  - {name: s, type: vllm, kv_slots: 4096, cuda_graphs: true}\n"},
    {"translation", "name: cov\nfigure: cov\nmodel: llama-13b\nhardware: a100-40gb\n"
                    "workload: {dataset: translation, arrivals: poisson, rate: 20, num_requests: 40}\n"
                    "systems:\n  - {name: s, type: vllm}\n"},
    {"chat", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
             "workload: {dataset: chatbot, arrivals: poisson, rate: 20, num_requests: 60}\n"
             "systems:\n  - {name: s, type: vllm}\n"},
    /* chat turns under the prefix cache in a KV space that cannot keep their histories */
    {"tier", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
             "workload: {dataset: chatbot, arrivals: poisson, rate: 2, num_requests: 80}\n"
             "systems:\n  - {name: s, type: vllm, policy: prefix-cache, kv_slots: 2048}\n"},
    {"file", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
             "workload: {dataset: sharegpt, file: auto, arrivals: poisson, rate: 20, num_requests: 40}\n"
             "systems:\n  - {name: s, type: vllm}\n"},
    {"gamma", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
              "workload: {dataset: alpaca, arrivals: gamma, burstiness: 1, rate: 20, num_requests: 60}\n"
              "systems:\n  - {name: s, type: vllm, kv_slots: 4096}\n"},
    {"gamma0", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
               "workload: {dataset: alpaca, arrivals: gamma, rate: 20, num_requests: 60}\n"
               "systems:\n  - {name: s, type: vllm, kv_slots: 4096}\n"},
    /* closed-loop conversations (the chatbot's, a trace's) and a concurrency limit */
    {"closed", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
               "workload: {dataset: chatbot, arrivals: poisson, rate: 20, num_requests: 60,\n"
               "           conversation: {think_time_s: 1}}\n"
               "systems:\n  - {name: s, type: vllm}\n"},
    {"closed0", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
                "workload: {dataset: chatbot, arrivals: poisson, rate: 20, num_requests: 60,\n"
                "           conversation: {think: fixed}}\n"
                "systems:\n  - {name: s, type: vllm}\n"},
    {"convtrace", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
                  "workload: {trace: TRACE, conversation: {think_time_s: 0.5}}\n"
                  "systems:\n  - {name: s, type: vllm}\n"},
    {"ramp", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
             "workload: {dataset: alpaca, arrivals: exponential, num_requests: 60,\n"
             "           ramp: {shape: linear, start_rate: 2, end_rate: 40}}\n"
             "systems:\n  - {name: s, type: vllm, kv_slots: 4096}\n"},
    {"replay", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
               "workload: {dataset: azure_conv, arrivals: replay, rate: 20, num_requests: 40}\n"
               "systems:\n  - {name: s, type: vllm}\n"},
    /* a trace by duration (no num_requests), arrivals not named */
    {"dur", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
            "workload: {dataset: alpaca, rate: 20, duration_s: 2}\n"
            "systems:\n  - {name: s, type: vllm, kv_slots: 4096}\n"},
    /* an SLO without bounds: goodput of every request */
    {"sloany", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\nslo: {}\n"
               "workload: {dataset: alpaca, arrivals: poisson, rate: 20, num_requests: 40}\n"
               "systems:\n  - {name: s, type: vllm, kv_slots: 4096}\n"},
    /* vLLM v0.2 with its KV space from the specs */
    {"v02spec", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
                "workload: {dataset: sharegpt, arrivals: poisson, rate: 20, num_requests: 60}\n"
                "systems:\n  - {name: s, type: vllm, engine: v0.2}\n"},
    /* vLLM v0.2 on a Llama-family model (its fused add + RMSNorm kernels) */
    {"v02llama", "name: cov\nfigure: cov\nmodel: llama-13b\nhardware: a100-40gb\n"
                 "workload: {dataset: sharegpt, arrivals: poisson, rate: 20, num_requests: 60}\n"
                 "systems:\n  - {name: s, type: vllm, engine: v0.2}\n"},
    /* vLLM V1 with its KV space from the specs */
    {"v1spec", "name: cov\nfigure: cov\nmodel: opt-13b\nhardware: a100-40gb\n"
               "workload: {dataset: sharegpt, arrivals: poisson, rate: 20, num_requests: 60}\n"
               "systems:\n  - {name: s, type: vllm, engine: v1}\n"},
    /* V1 at tp 2 / 4 / 8 on an H100 node: its all-reduces through vLLM's own kernels */
    {"v1tp2", "name: cov\nfigure: cov\nmodel: llama-13b\nhardware: h100-sxm\ngpus: 2\n"
              "workload: {dataset: sharegpt, arrivals: poisson, rate: 20, num_requests: 40}\n"
              "systems:\n  - {name: s, type: vllm, engine: v1}\n"},
    {"v1tp4", "name: cov\nfigure: cov\nmodel: llama-13b\nhardware: h100-sxm\ngpus: 4\n"
              "workload: {dataset: sharegpt, arrivals: poisson, rate: 20, num_requests: 40}\n"
              "systems:\n  - {name: s, type: vllm, engine: v1}\n"},
    {"v1tp8", "name: cov\nfigure: cov\nmodel: llama-13b\nhardware: h100-sxm\ngpus: 8\n"
              "workload: {dataset: sharegpt, arrivals: poisson, rate: 20, num_requests: 40}\n"
              "systems:\n  - {name: s, type: vllm, engine: v1}\n"},
};

typedef enum { EFFECT, POINTS, LABEL, QUICK } expect_k;
typedef struct {
    const char *path;       /* schema path: systems[].x, workload.chat.x, sweep[].x        */
    const char *variant;
    const char *set1, *set2;
    expect_k ex;
    const char *why;        /* LABEL: what it labels; others: optional note             */
} kcase;

#define PCIE_WHY "datasheet PCIe figure: `pagedbench kernels` reports its swap copies against it; the sim's swap costs are cost_model.swap_*"
#define E(p, v, s) {p, v, s, NULL, EFFECT, NULL}
#define E2(p, v, s, t) {p, v, s, t, EFFECT, NULL}
#define L(p, w) {p, "sim", NULL, NULL, LABEL, w}

static const kcase CASES[] = {
    /* experiment */
    L("name", "the experiment id: file names"), L("figure", "the figure id: results/<figure>.csv"),
    L("panel", "the CSV panel column"), L("title", "the plot title"), L("description", "free text"),
    L("tags", "constant CSV columns"), L("columns", "CSV column order"),
    E("seed", "sim", "seed=7"),
    E("model", "sim", "model=llama-13b"),
    E("hardware", "sim", "hardware=a100-80gb"),
    E("gpus", "spec", "gpus=2"),
    E("executor", "cpu", "executor=sim"),
    E("workload", "sim", "workload={dataset: sharegpt, rate: 5, num_requests: 10}"),
    {"sweep", "sweep", "sweep=[{axis: r, set: workload.rate, values: [1, 2]}]", NULL, POINTS, NULL},
    E("systems", "sim", "systems=[{name: o, type: orca}]"),
    E("cost_model", "sim", "cost_model={attn_paged_block_ns: 2000}"),
    E("length_scale", "sim", "length_scale=0.5"),
    E("clamp_to_max_len", "long", "clamp_to_max_len=true"),
    {"fast_forward", "sim", "fast_forward=false", NULL, LABEL,
     "the engine's fast path gives the step-by-step results bit for bit (tests/test_fastfwd.c); false only runs slower"},
    L("knee", "how the report finds each series' knee"),
    L("allow_rejected", "whether a point that is not complete makes the run exit 1 (tests/hostile/)"),
    L("knee.metric", "the metric the report's knee is read from"),
    L("knee.threshold", "the report's knee threshold"), L("knee.axis", "the axis the report's knee is read along"),
    {"knee.refine", "sweep", "knee={refine: 1, axis: r}", NULL, LABEL,
     "rounds of extra points the runner adds after the grid (tests/test_runner.c: knee refinement)"},
    /* quick: what --quick changes -- the "quick" variant run with and without --quick */
    {"quick", "quick", NULL, NULL, QUICK, NULL},
    {"quick.set", "quick", NULL, NULL, QUICK, NULL},
    {"quick.thin", "quick", NULL, NULL, QUICK, NULL},
    L("sweep[].axis", "the CSV column of the axis"),
    {"sweep[].set", "sweep", "sweep.0.set=workload.num_requests", NULL, EFFECT, "point 0"},
    {"sweep[].values", "sweep", "sweep.0.values=[3, 4]", NULL, POINTS, NULL},
    /* a system */
    L("systems[].name", "the CSV system column and file names"), L("systems[].label", "the legend label"),
    L("systems[].tags", "constant CSV columns of the series"),
    E("systems[].type", "sim", "systems.0.type=orca"),
    {"systems[].sweep", "sweep", "systems.0.sweep={r: [1, 2]}", NULL, POINTS, NULL},
    E("systems[].block_size", "sim", "systems.0.block_size=32"),
    E("systems[].preemption", "sim", "systems.0.preemption=recompute"),
    E("systems[].reservation", "orca", "systems.0.reservation=max"),
    E("systems[].max_batch", "orca", "systems.0.max_batch=2"),
    E("systems[].priority_by", "prio", "systems.0.priority_by=total"),
    E("systems[].aging_rate", "prio", "systems.0.aging_rate=1e9"),
    E("systems[].token_budget", "sarathi", "systems.0.token_budget=64"),
    E("systems[].max_batch_total_tokens", "tgi", "systems.0.max_batch_total_tokens=4000"),
    E("systems[].waiting_served_ratio", "tgi", "systems.0.waiting_served_ratio=0"),
    E("systems[].max_waiting_tokens", "tgi", "systems.0.max_waiting_tokens=1"),
    E("systems[].watermark", "sim", "systems.0.watermark=0.3"),
    E("systems[].max_num_batched_tokens", "sim", "systems.0.max_num_batched_tokens=64"),
    E("systems[].max_num_seqs", "sim", "systems.0.max_num_seqs=4"),
    E("systems[].kv_profile_tokens", "spec", "systems.0.kv_profile_tokens=40000"),
    E("systems[].engine", "spec", "systems.0.engine=v0.2"),
    E("systems[].step_mode", "sim", "systems.0.step_mode=alternate"),
    E("systems[].max_paddings", "v02", "systems.0.max_paddings=0"),
    E("systems[].prefix_caching", "chat", "systems.0.prefix_caching=true"),
    E("systems[].cuda_graphs", "v1spec", "systems.0.cuda_graphs=false"),
    E("systems[].async_scheduling", "v1spec", "systems.0.async_scheduling=false"),
    E("systems[].custom_allreduce", "v1tp8", "systems.0.custom_allreduce=false"),
    E("systems[].flash_attn_version", "v1tp2", "systems.0.flash_attn_version=2"),
    E("systems[].fuse_allreduce_rms", "v1tp8", "systems.0.fuse_allreduce_rms=false"),
    E("systems[].kv_cache_dtype", "spec", "systems.0.kv_cache_dtype=fp8_e4m3"),
    E("systems[].kv_scale", "cpufp8", "systems.0.kv_scale=1e-6"),
    E("systems[].weights", "spec", "systems.0.weights=int4-awq"),
    E("slo", "sim", "slo={ttft_ms: 1, tpot_ms: 1}"),
    E("slo.ttft_ms", "slo", "slo.ttft_ms=1"),
    E("slo.tpot_ms", "slo", "slo.tpot_ms=1"),
    E("slo.e2el_ms", "slo", "slo.e2el_ms=1"),
    E("percentiles", "sim", "percentiles=[25, 75]"),
    E("uncertainty", "sim", "uncertainty=off"),
    /* the measurement window (80 requests over ~4 s, parallel sampling: blocks shared) */
    E("measure", "sim", "measure={warmup_s: 1}"),
    E("measure.warmup_s", "sim", "measure.warmup_s=1"),
    E("measure.cooldown_s", "sim", "measure.cooldown_s=1"),
    E("measure.steps", "sim", "measure.steps=window"),
    E("measure.step_mean", "sim", "measure.step_mean=step"),
    E("measure.saving", "sim", "measure.saving=ref_count"),
    E("systems[].gpu_mem_util", "spec", "systems.0.gpu_mem_util=0.8"),
    E("systems[].swap_space_gib", "sim", "systems.0.swap_space_gib=0.01"),
    E("systems[].kv_cpu_tier_gib", "tier", "systems.0.kv_cpu_tier_gib=16"),
    E("systems[].sim", "sim", "systems.0.sim={attention_kernel: contiguous}"),
    E("systems[].policy", "sim", "systems.0.policy=spf"),
    E("systems[].kv_slots", "sim", "systems.0.kv_slots=8192"),
    E("systems[].max_clock_s", "sim", "systems.0.max_clock_s=2"),
    E("systems[].sim.attention_kernel", "sim", "systems.0.sim={attention_kernel: contiguous}"),
    E("systems[].sim.framework", "sim", "systems.0.sim={framework: cpp}"),
    E("systems[].sim.profile", "sim", "systems.0.sim={profile: PROFILE}"),
    E("systems[].sim.fused_add_norm", "sim", "systems.0.sim={fused_add_norm: true}"),
    E("systems[].sim.fused_add_norm", "v02llama", "systems.0.sim={fused_add_norm: false}"),
    /* executor: as a map */
    E("executor.type", "cpukv", "executor.type=sim"),
    E("executor.fixed_latency_s", "cpu", "executor.fixed_latency_s=0.05"),
    E("executor.kv_slots", "cpu", "executor.kv_slots=1024"),
    E("executor.kv_mib", "cpumib", "executor.kv_mib=0.75"),
    E("executor.swap_slots", "cpu", "executor.swap_slots=0"),
    /* workload */
    E("workload.dataset", "sim", "workload.dataset=sharegpt"),
    E("workload.file", "spec", "workload.file=auto"),
    E("workload.input_column", "file", "workload.input_column=output_len"),
    E("workload.output_column", "file", "workload.output_column=input_len"),
    E("workload.filter", "long", "workload.filter=paper"),
    E("workload.arrivals", "sim", "workload.arrivals=exponential"),
    E("workload.rate", "sim", "workload.rate=5"),
    E("workload.duration_s", "sim", "workload.duration_s=1"),
    E("workload.num_requests", "sim", "workload.num_requests=40"),
    E("workload.quantum_s", "sim", "workload.quantum_s=0.5"),
    E("workload.burstiness", "gamma", "workload.burstiness=0.1"),
    E("workload.ramp", "ramp", "workload.ramp={shape: exponential, start_rate: 40, end_rate: 2}"),
    E("workload.ramp.shape", "ramp", "workload.ramp.shape=exponential"),
    E("workload.ramp.start_rate", "ramp", "workload.ramp.start_rate=40"),
    E("workload.ramp.end_rate", "ramp", "workload.ramp.end_rate=4"),
    E("workload.replay_file", "replay", "workload.replay_file=azure_llm_trace/AzureLLMInferenceTrace_code.csv"),
    E("workload.n", "spec", "workload.n=3"),
    E("workload.beam_width", "spec", "workload.beam_width=3"),
    E("workload.beam_scores", "beam", "workload.beam_scores=wmt14-kn3"),
    E("workload.shots", "translation", "workload.shots=5"),
    E("workload.prefix_len", "spec", "workload.prefix_len=64"),
    E("workload.chat", "chat", "workload.chat={max_prompt: 256}"),
    E("workload.chat.max_prompt", "chat", "workload.chat.max_prompt=256"),
    E("workload.chat.max_output", "chat", "workload.chat.max_output=64"),
    E("workload.chat.mean_turns", "chat", "workload.chat.mean_turns=10"),
    E("workload.chat.new_conversation_prob", "chat", "workload.chat.new_conversation_prob=0.9"),
    E("workload.trace", "sim", "workload={trace: TRACE}"),   /* alone: with it, the generation keys are errors */
    E("workload.conversation", "chat", "workload.conversation={think_time_s: 2}"),
    E("workload.conversation.think_time_s", "closed", "workload.conversation.think_time_s=9"),
    E("workload.conversation.think", "closed", "workload.conversation.think=exponential"),
    E("workload.conversation.history", "convtrace", "workload.conversation.history=append"),
    E("workload.max_concurrency", "chat", "workload.max_concurrency=2"),
    /* model spec */
    {"model.name", "sim", NULL, NULL, LABEL, "the model's display name (--set model.name is refused: it would relabel)"},
    E("model.arch", "sim", "model.arch=llama"),
    E("model.n_layers", "sim", "model.n_layers=20"),
    E2("model.hidden", "sim", "model.hidden=2560", "model.head_size=64"),
    E2("model.n_heads", "sim", "model.n_heads=20", "model.head_size=256"),
    E("model.n_kv_heads", "sim", "model.n_kv_heads=8"),
    E2("model.head_size", "sim", "model.head_size=256", "model.n_heads=20"),
    E("model.ffn", "sim", "model.ffn=10240"),
    E("model.vocab", "sim", "model.vocab=250000"),
    E("model.max_len", "long", "model.max_len=1024"),
    E("model.n_params", "spec", "model.n_params=6.5e9"),
    E("model.dtype", "sim", "model.dtype=fp32"),
    {"model.n_experts", "sim", "model.n_experts=1", NULL, LABEL,
     "1 (dense, the default) is the only value priced: any other is refused (tests/hostile/38-model-mixture-of-experts)"},
    L("model.sources", "provenance of each number"),
    /* hardware spec */
    {"hardware.name", "sim", NULL, NULL, LABEL, "the GPU's display name"},
    E("hardware.memory_bytes", "spec", "hardware.memory_bytes=60000000000"),
    E("hardware.hbm_bandwidth_GBps", "sim", "hardware.hbm_bandwidth_GBps=800"),
    E("hardware.fp16_tflops", "sim", "hardware.fp16_tflops=100"),
    {"hardware.pcie_h2d_GBps", "sim", "hardware.pcie_h2d_GBps=1", NULL, LABEL, PCIE_WHY},
    {"hardware.pcie_d2h_GBps", "sim", "hardware.pcie_d2h_GBps=1", NULL, LABEL, PCIE_WHY},
    {"hardware.pcie_copy_latency_us", "sim", "hardware.pcie_copy_latency_us=500", NULL, LABEL, PCIE_WHY},
    {"hardware.nvlink_GBps", "tp2", "hardware.nvlink_GBps=10", NULL, LABEL,
     "datasheet NVLink figure; the sim's all-reduces use the measured NCCL fits cost_model.allreduce_tpN_*"},
    {"hardware.l2_MB", "sim", "hardware.l2_MB=4", NULL, LABEL,
     "datasheet L2 size: `pagedbench kernels` flushes this much between repetitions; the sim's GEMM model uses "
     "cost_model.l2_bandwidth_GBps"},
    E("hardware.n_sms", "sim", "hardware.n_sms=20"),
    L("hardware.sources", "provenance of each number"),
    E("hardware.cost_model", "sim", "hardware.cost_model.attn_paged_block_ns=2000"),
    /* cost model (top-level overrides; the same keys as hardware.cost_model) */
    L("cost_model.sources", "provenance of each number"),
    E("cost_model.gemm_tiles", "sim", "cost_model.gemm_tiles=[\"32x32\"]"),
    E("cost_model.gemm_splitk", "sim", "cost_model.gemm_splitk=[1]"),
    /* the error bars' inputs: a wider residual widens the interval (the _lo / _hi metrics) */
    E("cost_model.residuals", "sim", "cost_model.residuals.gemm=[0.5, 2]"),
    E("cost_model.residuals.gemm", "sim", "cost_model.residuals.gemm=[0.5, 2]"),
    E("cost_model.residuals.elementwise", "sim", "cost_model.residuals.elementwise=[0.5, 2]"),
    E("cost_model.residuals.prefill_attn", "sim", "cost_model.residuals.prefill_attn=[0.5, 2]"),
    E("cost_model.residuals.decode_attn", "sim", "cost_model.residuals.decode_attn=[0.5, 2]"),
    E("cost_model.residuals.allreduce", "tp2", "cost_model.residuals.allreduce=[0.5, 2]"),
    E("cost_model.residuals.host", "sim", "cost_model.residuals.host=[0.5, 2]"),
    E("cost_model.residuals.swap", "sim", "cost_model.residuals.swap=[0.5, 2]"),
    L("cost_model.residuals.sources", "provenance of each number"),
    E("cost_model.gemm_sm_bw_GBps", "sim", "cost_model.gemm_sm_bw_GBps=0.5"),
    E("cost_model.framework", "sim", "cost_model.framework={python: {step_us: 20000}}"),
    E("cost_model.framework.python", "sim", "cost_model.framework.python={step_us: 20000}"),
    E("cost_model.framework.cpp", "ft", "cost_model.framework.cpp={step_us: 20000}"),
    L("cost_model.framework.python.sources", "provenance of each number"),
    L("cost_model.framework.cpp.sources", "provenance of each number"),
    E("cost_model.framework.cpp.step_us", "ft", "cost_model.framework.cpp.step_us=20000"),
    E("cost_model.framework.cpp.seq_us", "ft", "cost_model.framework.cpp.seq_us=2000"),
    E("cost_model.framework.cpp.launch_us", "ft", "cost_model.framework.cpp.launch_us=100"),
    E("cost_model.framework.cpp.worker_us", "fttp2", "cost_model.framework.cpp.worker_us=5000"),
    E("cost_model.framework.python.worker_us", "tp2", "cost_model.framework.python.worker_us=50000"),
    E("cost_model.framework.python.worker_seq_us", "tp2", "cost_model.framework.python.worker_seq_us=5000"),
    E("cost_model.framework.cpp.worker_seq_us", "fttp2", "cost_model.framework.cpp.worker_seq_us=5000"),
    E("cost_model.allreduce_tp2_us", "tp2", "cost_model.allreduce_tp2_us=500"),
    E("cost_model.allreduce_tp2_GBps", "tp2", "cost_model.allreduce_tp2_GBps=1"),
    E("cost_model.allreduce_tp4_us", "tp4", "cost_model.allreduce_tp4_us=500"),
    E("cost_model.allreduce_tp4_GBps", "tp4", "cost_model.allreduce_tp4_GBps=1"),
    E("cost_model.allreduce_tp8_us", "tp8", "cost_model.allreduce_tp8_us=500"),
    E("cost_model.allreduce_tp8_GBps", "tp8", "cost_model.allreduce_tp8_GBps=1"),
    /* the L2 feed binds only when slow; prefill attention matters on long prompts */
    E("cost_model.l2_bandwidth_GBps", "sim", "cost_model.l2_bandwidth_GBps=700"),
    E("cost_model.prefill_attn_flops_efficiency", "long", "cost_model.prefill_attn_flops_efficiency=0.01"),
    /* the flash kernel: V1's default (variant v1spec) */
    E("cost_model.flash_decode_fixed_us", "v1spec", "cost_model.flash_decode_fixed_us=5000"),
    E("cost_model.flash_decode_seq_head_ns", "v1spec", "cost_model.flash_decode_seq_head_ns=1000"),
    E("cost_model.flash_decode_bw_efficiency", "v1spec", "cost_model.flash_decode_bw_efficiency=0.01"),
    E("cost_model.flash_prefill_fixed_us", "v1spec", "cost_model.flash_prefill_fixed_us=5000"),
    E("cost_model.flash_prefill_flops_efficiency", "v1spec", "cost_model.flash_prefill_flops_efficiency=0.01"),
    E("cost_model.flash_prefill_bw_efficiency", "v1spec", "cost_model.flash_prefill_bw_efficiency=0.01"),
    E("cost_model.swap_h2d_GBps", "sim", "cost_model.swap_h2d_GBps=0.1"),
    E("cost_model.swap_d2h_GBps", "sim", "cost_model.swap_d2h_GBps=0.1"),
    E("cost_model.swap_h2d_copy_us", "sim", "cost_model.swap_h2d_copy_us=1000"),
    E("cost_model.swap_d2h_copy_us", "sim", "cost_model.swap_d2h_copy_us=1000"),
    E("cost_model.custom_allreduce_tp2_us", "v1tp2", "cost_model.custom_allreduce_tp2_us=500"),
    E("cost_model.custom_allreduce_tp2_GBps", "v1tp2", "cost_model.custom_allreduce_tp2_GBps=1"),
    E("cost_model.custom_allreduce_tp4_us", "v1tp4", "cost_model.custom_allreduce_tp4_us=500"),
    E("cost_model.custom_allreduce_tp4_GBps", "v1tp4", "cost_model.custom_allreduce_tp4_GBps=1"),
    E("cost_model.custom_allreduce_tp8_us", "v1tp8", "cost_model.custom_allreduce_tp8_us=500"),
    E("cost_model.custom_allreduce_tp8_GBps", "v1tp8", "cost_model.custom_allreduce_tp8_GBps=1"),
    E("cost_model.flash3_prefill_flops_efficiency", "v1tp2", "cost_model.flash3_prefill_flops_efficiency=0.02"),
    E("cost_model.allreduce_norm_fusion_tp2_MB", "v1tp2", "cost_model.allreduce_norm_fusion_tp2_MB=0.01"),
    E("cost_model.allreduce_norm_fusion_tp4_MB", "v1tp4", "cost_model.allreduce_norm_fusion_tp4_MB=0.01"),
    E("cost_model.allreduce_norm_fusion_tp8_MB", "v1tp8", "cost_model.allreduce_norm_fusion_tp8_MB=100"),
    E("cost_model.cuda_graph_launch_us", "graphs", "cost_model.cuda_graph_launch_us=2000"),
    E("cost_model.cuda_graph_node_gap_us", "graphs", "cost_model.cuda_graph_node_gap_us=5"),
    E("cost_model.wq_int8_compute_ratio", "wqint8", "cost_model.wq_int8_compute_ratio=0.05"),
    E("cost_model.wq_fp8_compute_ratio", "wqfp8", "cost_model.wq_fp8_compute_ratio=0.05"),
    E("cost_model.wq_int4_awq_compute_ratio", "wqawq", "cost_model.wq_int4_awq_compute_ratio=0.05"),
    E("cost_model.wq_int4_gptq_compute_ratio", "wqgptq", "cost_model.wq_int4_gptq_compute_ratio=0.05"),
};
/* cost_model.<numeric key> and cost_model.framework.python.<key> not listed above:
   EFFECT on "sim" with the value multiplied by 5 (generic_alt). */

/* ---- running a point ---- */
static char g_dir[256];
static bool g_have_data;

typedef struct {
    int n_points;
    double first_value;
    int n_metrics;
    double v[PB_MAX_METRICS];
    char name[PB_MAX_METRICS][40];
    char settings[512];     /* the experiment's settings no metric shows (title, knee, ...) */
} outcome;

static const char *write_file(const char *name, const char *text) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "w");
    PB_ASSERT(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* g_dir/data in ../shared/data's layout; PAGEDBENCH_SHARED_DATA points there */
static bool synthetic_data(void) {
    static const char *const dirs[] = {"data", "data/sharegpt", "data/alpaca", "data/azure_llm_trace"};
    char p[600];
    for (size_t i = 0; i < PB_ARRAY_LEN(dirs); i++) {
        snprintf(p, sizeof p, "%s/%s", g_dir, dirs[i]);
        if (mkdir(p, 0755)) return false;
    }
    static const char *const lens[] = {"data/sharegpt/vllm_sosp23_sharegpt_opt_lengths.csv",
                                       "data/alpaca/alpaca_opt_lengths.csv"};
    for (int k = 0; k < 2; k++) {
        snprintf(p, sizeof p, "%s/%s", g_dir, lens[k]);
        FILE *f = fopen(p, "w");
        if (!f) return false;
        fprintf(f, "input_len,output_len\n");
        for (int i = 0; i < 2000; i++) fprintf(f, "%d,%d\n", 4 + (i * 37) % (k ? 60 : 900), 2 + (i * 53) % (k ? 200 : 1000));
        fclose(f);
    }
    static const char *const az[] = {"AzureLLMInferenceTrace_conv.csv", "AzureLLMInferenceTrace_code.csv"};
    for (int k = 0; k < 2; k++) {
        snprintf(p, sizeof p, "%s/tests/data/shared_subset/azure_llm_trace/%s", PB_SOURCE_DIR, az[k]);
        char *text = pb_test_slurp(p);
        if (!text) return false;
        snprintf(p, sizeof p, "data/azure_llm_trace/%s", az[k]);
        write_file(p, text);
        free(text);
    }
    snprintf(p, sizeof p, "%s/data", g_dir);
    setenv("PAGEDBENCH_SHARED_DATA", p, 1);
    fprintf(stderr, "  no ../shared/data: the data keys read %s (made-up lengths, committed Azure rows)\n", p);
    return pb_workload_data_dir() != NULL;
}


/* Load variant + sets (quick when the case is about --quick), check every point, run
   point 0 of system 0.  Returns PB_OK and the outcome, or the config error in msg. */
static pb_status run_case(const char *vid, const char *set1, const char *set2, bool quick, outcome *o,
                          char *msg, size_t msgn) {
    const variant *v = NULL;
    for (size_t i = 0; i < PB_ARRAY_LEN(VARIANTS); i++)
        if (!strcmp(VARIANTS[i].id, vid)) v = &VARIANTS[i];
    PB_ASSERT(v);
    char fname[64];
    snprintf(fname, sizeof fname, "%s.yaml", vid);
    char yaml[4096];   /* TRACE in a variant's YAML: the trace file the test writes */
    const char *tr = strstr(v->yaml, "TRACE");
    if (tr) snprintf(yaml, sizeof yaml, "%.*s%s/TRACE.csv%s", (int)(tr - v->yaml), v->yaml, g_dir, tr + 5);
    else snprintf(yaml, sizeof yaml, "%s", v->yaml);
    const char *path = write_file(fname, yaml);
    char s1[512] = "", s2[512] = "";
    const char *sets[2];
    int ns = 0;
    const char *raw[2] = {set1, set2};
    char *dst[2] = {s1, s2};
    for (int i = 0; i < 2; i++) {
        if (!raw[i]) continue;
        /* PROFILE / TRACE stand for files the test writes */
        const char *tok = strstr(raw[i], "PROFILE") ? "PROFILE" : strstr(raw[i], "TRACE") ? "TRACE" : NULL;
        if (tok) {
            const char *at = strstr(raw[i], tok);
            char file[300];
            snprintf(file, sizeof file, "%s/%s.csv", g_dir, tok);
            snprintf(dst[i], 512, "%.*s%s%s", (int)(at - raw[i]), raw[i], file, at + strlen(tok));
        } else {
            snprintf(dst[i], 512, "%s", raw[i]);
        }
        sets[ns++] = dst[i];
    }
    pb_experiment *e = NULL;
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    pb_status st = pb_experiment_load(path, sets, ns, quick, &e, &err);
    if (!st) st = pb_system_check(e, &err);
    if (st) {
        snprintf(msg, msgn, "%s", err.msg);
        pb_experiment_destroy(e);
        return st;
    }
    memset(o, 0, sizeof *o);
    snprintf(o->settings, sizeof o->settings, "%s|%s|%s|%s|%s|%.17g|%s|%d|%d|%llu|%d", e->title, e->panel,
             e->systems[0].label, e->executor, e->knee_metric, e->knee_threshold, e->knee_axis, e->knee_refine,
             e->quick_thin, (unsigned long long)e->seed, e->gpus);
    o->n_points = pb_experiment_n_points(e, 0);
    double vals[PB_EXP_MAX_AXES] = {0};
    pb_experiment_point_values(e, 0, 0, vals);
    o->first_value = vals[0];
    pb_config *c = NULL;
    PB_ASSERT(pb_experiment_resolve(e, 0, 0, &c, &err) == PB_OK);
    const pb_node *root = pb_config_root(c);
    pb_point_ctx ctx = {e, 0, 0, vals, root, pb_node_get(root, "systems.0"), quick, NULL, NULL};
    pb_point_metrics *m = pb_xcalloc(1, sizeof *m);
    char perr[2048] = "";
    st = pb_system_run_point(&ctx, m, perr, sizeof perr, NULL);
    if (st) snprintf(msg, msgn, "run failed: %s", perr);
    o->n_metrics = m->n;
    for (int i = 0; i < m->n; i++) { o->v[i] = m->value[i]; memcpy(o->name[i], m->name[i], 40); }
    free(m);
    pb_config_destroy(c);
    pb_experiment_destroy(e);
    return st;
}

static bool same(const outcome *a, const outcome *b) {
    if (a->n_points != b->n_points || a->first_value != b->first_value || a->n_metrics != b->n_metrics) return false;
    for (int i = 0; i < a->n_metrics; i++)
        if (strcmp(a->name[i], b->name[i]) || !(a->v[i] == b->v[i] || (isnan(a->v[i]) && isnan(b->v[i])))) return false;
    return true;
}
static bool same_metrics(const outcome *a, const outcome *b) {
    outcome x = *a, y = *b;
    x.n_points = y.n_points = 0;
    x.first_value = y.first_value = 0;
    return same(&x, &y);
}

static bool needs_data(const char *vid, const char *set) {
    return !strcmp(vid, "file") || !strcmp(vid, "replay") || (set && strstr(set, "file=auto"));
}

/* ---- the schema walk ---- */
typedef struct { char path[160]; const pb_key *key; } kref;
static kref g_keys[512];
static int g_nkeys;

static void walk(const pb_key *schema, const char *prefix) {
    for (const pb_key *k = schema; k->name; k++) {
        PB_ASSERT(g_nkeys < (int)PB_ARRAY_LEN(g_keys));
        kref *r = &g_keys[g_nkeys++];
        snprintf(r->path, sizeof r->path, "%s%s", prefix, k->name);
        r->key = k;
        bool seen = false;   /* reached before (a system's keys, from the top) */
        for (int i = 0; i + 1 < g_nkeys; i++) seen = seen || !strcmp(g_keys[i].path, r->path);
        if (seen) { g_nkeys--; continue; }
        if (k->sub && (k->type == PB_T_MAP || k->type == PB_T_LIST)) {
            char p[200];
            snprintf(p, sizeof p, "%s%s%s.", prefix, k->name, k->type == PB_T_LIST ? "[]" : "");
            walk(k->sub, p);
        }
    }
}

static const kcase *find_case(const char *path) {
    for (size_t i = 0; i < PB_ARRAY_LEN(CASES); i++)
        if (!strcmp(CASES[i].path, path)) return &CASES[i];
    return NULL;
}

/* The generic case of a numeric cost-model key: 5 x the A100-40GB value. */
static bool generic_alt(const char *path, const pb_key *k, char *set, size_t n) {
    if (strncmp(path, "cost_model.", 11) || (k->type != PB_T_NUM && k->type != PB_T_INT)) return false;
    pb_config *hw = NULL;
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    char file[512];
    snprintf(file, sizeof file, "%s/hardware/a100-40gb.yaml", pb_spec_dir());
    if (pb_config_load(file, &hw, &err)) return false;
    double v = pb_node_num(pb_config_root(hw), path, NAN);
    pb_config_destroy(hw);
    if (isnan(v)) return false;
    double alt = v * 5;
    if (k->lo < k->hi && alt > k->hi) alt = v / 5;
    char num[64];
    pb_fmt_num(num, sizeof num, k->type == PB_T_INT ? round(alt) : alt);
    snprintf(set, n, "%s=%s", path, num);
    return true;
}

static void remove_dir(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "  cannot remove %s\n", g_dir);
}

/* The scratch folder with the files the cases name, and every key of every schema
   (g_keys); once, whichever test runs first. */
static void setup(void) {
    if (g_dir[0]) return;
    snprintf(g_dir, sizeof g_dir, "/tmp/pb_cov.XXXXXX");
    PB_ASSERT(mkdtemp(g_dir));
    atexit(remove_dir);
    g_have_data = pb_workload_data_dir() != NULL;
    if (!g_have_data) g_have_data = synthetic_data();
    write_file("TRACE.csv", "arrival_s,prompt_len,output_len,conversation_id,turn\n0,100,200,0,0\n0.1,300,50,-1,0\n"
                            "0.2,30,500,0,1\n");
    /* a step profile 3x slower than the analytic model's order of magnitude */
    write_file("PROFILE.csv", "phase,batch,tokens,context,latency_us\n"
                              "decode,1,1,16,90000\ndecode,1,1,2048,95000\ndecode,64,64,16,120000\ndecode,64,64,2048,180000\n"
                              "prefill,1,16,0,90000\nprefill,1,4096,0,400000\n");
    walk(pb_experiment_schema, "");
    static pb_key sys_keys[PB_SYSTEM_MAX_KEYS];   /* with every policy's options */
    walk(pb_system_entry_keys(sys_keys), "systems[].");
    walk(pb_executor_schema, "executor.");
    walk(pb_workload_schema, "workload.");
    walk(pb_sim_system_schema, "systems[].sim.");
    walk(pb_model_schema, "model.");
    walk(pb_hardware_schema, "hardware.");
    walk(pb_sim_cost_schema, "cost_model.");
}

PB_TEST(every_schema_key_takes_effect_or_is_a_label) {
    setup();

    outcome base[PB_ARRAY_LEN(VARIANTS)];
    bool have_base[PB_ARRAY_LEN(VARIANTS)] = {0};
    int checked = 0, skipped = 0;
    for (int i = 0; i < g_nkeys; i++) {
        const char *path = g_keys[i].path;
        /* keys of the same map reached twice (hardware.cost_model's are cost_model.'s) */
        if (!strncmp(path, "hardware.cost_model.", 20)) continue;
        const kcase *kc = find_case(path);
        kcase gen = {0};
        char gset[256];
        if (!kc && generic_alt(path, g_keys[i].key, gset, sizeof gset)) {
            gen = (kcase){path, "sim", gset, NULL, EFFECT, NULL};
            kc = &gen;
        }
        if (!kc) {
            PB_CHECK_MSG(false, "%s: no case shows that it is read (add one, or remove the key)", path);
            continue;
        }
        if (needs_data(kc->variant, kc->set1) && !g_have_data) {
            PB_CHECK_MSG(false, "%s: needs a data folder and none could be made", path);
            skipped++;
            continue;
        }
        size_t vi = 0;
        while (strcmp(VARIANTS[vi].id, kc->variant)) vi++;
        bool quick = false;
        char msg[4096] = "";
        outcome b, o;
        if (quick) {
            PB_REQUIRE(run_case(kc->variant, NULL, NULL, true, &b, msg, sizeof msg) == PB_OK);
        } else {
            if (!have_base[vi]) {
                PB_CHECK_MSG(run_case(kc->variant, NULL, NULL, false, &base[vi], msg, sizeof msg) == PB_OK,
                             "variant %s: %s", kc->variant, msg);
                have_base[vi] = true;
            }
            b = base[vi];
        }
        if (kc->ex == QUICK) {   /* the variant with --quick against without */
            PB_CHECK_MSG(run_case(kc->variant, NULL, NULL, true, &o, msg, sizeof msg) == PB_OK, "%s: %s", path, msg);
            bool changed = strcmp(path, "quick.thin") ? !same_metrics(&b, &o) : b.n_points != o.n_points;
            if (!strcmp(path, "quick")) changed = !same(&b, &o);
            PB_CHECK_MSG(changed, "%s: --quick with it changes nothing", path);
            checked++;
            continue;
        }
        if (!kc->set1) {   /* a label nothing can set here (a spec's name): documented only */
            PB_CHECK_MSG(kc->ex == LABEL && kc->why, "%s: no setting to try", path);
            checked++;
            continue;
        }
        pb_status st = run_case(kc->variant, kc->set1, kc->set2, quick, &o, msg, sizeof msg);
        PB_CHECK_MSG(st == PB_OK, "%s: setting %s failed: %s", path, kc->set1, msg);
        if (st) continue;
        if (kc->ex == EFFECT)
            PB_CHECK_MSG(!same_metrics(&b, &o), "%s: setting %s (variant %s) changes no metric: nothing reads it", path,
                         kc->set1, kc->variant);
        else if (kc->ex == POINTS)
            PB_CHECK_MSG(b.n_points != o.n_points || b.first_value != o.first_value,
                         "%s: setting %s does not change the points", path, kc->set1);
        else
            PB_CHECK_MSG(same_metrics(&b, &o), "%s: a label (%s), yet setting %s changes the metrics", path,
                         kc->why, kc->set1);
        checked++;
    }
    fprintf(stderr, "  %d keys of %d checked, %d not (no data folder)\n", checked, g_nkeys, skipped);
}

/* ---- the declared defaults are the applied ones ---- */

/* Keys whose default is a rule: in each variant named, the settings that spell out
   what the rule gives there (ENGINE: in the variants of the three versions, spec,
   v02spec and v1spec, the version's values, computed from engine/vllm_version.h's
   table).  set
   NULL: no setting equals absence (why says so). */
#define ENGINE "<engine>"
typedef struct { const char *path, *variant, *set, *why; } rule_case;
static const rule_case RULES[] = {
    {"title", "sim", "title=cov", NULL},
    {"systems[].label", "sim", "systems.0.label=s", NULL},
    {"systems[].policy", "sim", "systems.0.policy=vllm", NULL},
    {"systems[].policy", "orca", "systems.0.policy=orca", NULL},
    {"systems[].policy", "ft", "systems.0.policy=ft", NULL},
    {"systems[].reservation", "orca", "systems.0.reservation=oracle", NULL},
    {"systems[].reservation", "ft", "systems.0.reservation=max", NULL},
    {"systems[].sim.attention_kernel", "sim", "systems.0.sim.attention_kernel=paged", NULL},
    {"systems[].sim.attention_kernel", "ft", "systems.0.sim.attention_kernel=contiguous", NULL},
    {"systems[].sim.framework", "sim", "systems.0.sim.framework=python", NULL},
    {"systems[].sim.framework", "ft", "systems.0.sim.framework=cpp", NULL},
    {"systems[].sim.attention_kernel", "v1spec", "systems.0.sim.attention_kernel=flash", NULL},
    {"systems[].sim.framework", "v1spec", "systems.0.sim.framework=v1", NULL},
    {"systems[].sim.fused_add_norm", "sim", "systems.0.sim.fused_add_norm=false", NULL},       /* v0.1 */
    {"systems[].sim.fused_add_norm", "v02spec", "systems.0.sim.fused_add_norm=false", NULL},   /* v0.2, OPT */
    {"systems[].sim.fused_add_norm", "v02llama", "systems.0.sim.fused_add_norm=true", NULL},  /* v0.2, Llama */
    {"systems[].sim.fused_add_norm", "v1spec", "systems.0.sim.fused_add_norm=true", NULL},    /* v1 */
    {"systems[].step_mode", ENGINE, ENGINE, NULL},
    {"systems[].max_paddings", ENGINE, ENGINE, NULL},
    {"systems[].max_num_batched_tokens", ENGINE, ENGINE, NULL},
    {"systems[].max_num_seqs", ENGINE, ENGINE, NULL},
    {"systems[].kv_profile_tokens", ENGINE, ENGINE, NULL},
    {"systems[].gpu_mem_util", ENGINE, ENGINE, NULL},
    {"systems[].prefix_caching", ENGINE, ENGINE, NULL},
    {"systems[].preemption", ENGINE, ENGINE, NULL},
    {"systems[].watermark", ENGINE, ENGINE, NULL},
    {"systems[].async_scheduling", ENGINE, ENGINE, NULL},
    {"systems[].cuda_graphs", ENGINE, ENGINE, NULL},
    {"systems[].custom_allreduce", ENGINE, ENGINE, NULL},
    {"systems[].flash_attn_version", ENGINE, ENGINE, NULL},
    {"systems[].fuse_allreduce_rms", ENGINE, ENGINE, NULL},
    {"executor.kv_mib", "cpumib", "executor.kv_mib=" PB_XSTR(PB_SYSTEM_CPU_KV_MIB), NULL},
    {"executor.swap_slots", "cpu", "executor.swap_slots=768", NULL},   /* its KV space: kv_slots 768 */
    {"model.n_kv_heads", "sim", "model.n_kv_heads=40", NULL},           /* OPT-13B: 40 heads of 128 */
    {"model.head_size", "sim", "model.head_size=128", NULL},
    {"workload.dataset", NULL, NULL, "absent only beside `trace:`, which replaces it"},
    {"workload.input_column", "file", "workload.input_column=input_len", NULL},
    {"workload.output_column", "file", "workload.output_column=output_len", NULL},
    {"workload.filter", "sim", "workload.filter=paper", NULL},         /* alpaca's */
    {"workload.rate", NULL, NULL, "poisson and exponential arrivals need one; the others read none"},
    {"workload.duration_s", "sim", "workload.duration_s=0", NULL},     /* num_requests given */
    {"hardware.l2_MB", NULL, NULL, "every shipped hardware spec gives it"},
    {"hardware.n_sms", NULL, NULL, "every shipped hardware spec gives it (the sim executor needs it)"},
    {"cost_model.cuda_graph_launch_us", NULL, NULL,
     "every shipped hardware spec gives it; without it a system's cuda_graphs: true is an error (test_kv_format)"},
    {"cost_model.cuda_graph_node_gap_us", NULL, NULL,
     "every shipped hardware spec gives it; without it a system's cuda_graphs: true is an error (test_kv_format)"},
    {"cost_model.custom_allreduce_tp2_us", NULL, NULL,
     "no value stands for its absence: a v1 system at that tp is then an error unless custom_allreduce: false "
     "(test_vllm_v1)"},
    {"cost_model.custom_allreduce_tp2_GBps", NULL, NULL,
     "no value stands for its absence: a v1 system at that tp is then an error unless custom_allreduce: false "
     "(test_vllm_v1)"},
    {"cost_model.custom_allreduce_tp4_us", NULL, NULL,
     "no value stands for its absence: a v1 system at that tp is then an error unless custom_allreduce: false "
     "(test_vllm_v1)"},
    {"cost_model.custom_allreduce_tp4_GBps", NULL, NULL,
     "no value stands for its absence: a v1 system at that tp is then an error unless custom_allreduce: false "
     "(test_vllm_v1)"},
    {"cost_model.custom_allreduce_tp8_us", NULL, NULL,
     "no value stands for its absence: a v1 system at that tp is then an error unless custom_allreduce: false "
     "(test_vllm_v1)"},
    {"cost_model.custom_allreduce_tp8_GBps", NULL, NULL,
     "no value stands for its absence: a v1 system at that tp is then an error unless custom_allreduce: false "
     "(test_vllm_v1)"},
    {"cost_model.allreduce_norm_fusion_tp2_MB", NULL, NULL,
     "no value stands for its absence: no fusion at tp 2 on that GPU, and fuse_allreduce_rms: true is an error "
     "(test_vllm_v1, cli_engine_v1)"},
    {"cost_model.allreduce_norm_fusion_tp4_MB", NULL, NULL,
     "no value stands for its absence: no fusion at tp 4 on that GPU, and fuse_allreduce_rms: true is an error "
     "(test_vllm_v1, cli_engine_v1)"},
    {"cost_model.allreduce_norm_fusion_tp8_MB", NULL, NULL,
     "no value stands for its absence: no fusion at tp 8 on that GPU, and fuse_allreduce_rms: true is an error "
     "(test_vllm_v1, cli_engine_v1)"},
    {"cost_model.flash3_prefill_flops_efficiency", NULL, NULL,
     "no value stands for its absence: V1's auto then prices FlashAttention-2 and flash_attn_version: 3 is an error "
     "(test_vllm_v1, cli_engine_v1)"},
    {"cost_model.wq_int8_compute_ratio", NULL, NULL, "no value stands for its absence: weights: int8 is then an error (test_weights)"},
    {"cost_model.wq_fp8_compute_ratio", NULL, NULL, "no value stands for its absence: weights: fp8 is then an error (test_weights)"},
    {"cost_model.wq_int4_awq_compute_ratio", NULL, NULL,
     "no value stands for its absence: weights: int4-awq is then an error (test_weights)"},
    {"cost_model.wq_int4_gptq_compute_ratio", NULL, NULL,
     "no value stands for its absence: weights: int4-gptq is then an error (test_weights)"},
};

/* Keys with a dflt whose case's variant cannot show it: another variant (one that
   does not set the key), or none (variant NULL: why). */
typedef struct { const char *path, *variant, *why; } default_case;
static const default_case DEFAULT_VARIANTS[] = {
    {"executor", "sim", NULL},
    {"systems[].kv_slots", "spec", NULL},
    {"systems[].max_batch_total_tokens", "tgi", NULL},
    {"systems[].waiting_served_ratio", "tgi", NULL},
    {"systems[].max_waiting_tokens", "tgi", NULL},
    {"executor.kv_slots", "cpumib", NULL},
    {"workload.num_requests", "dur", NULL},
    {"workload.arrivals", "dur", NULL},
    {"workload.burstiness", "gamma0", NULL},
    {"workload.conversation.think_time_s", "closed0", NULL},
    {"slo.ttft_ms", "sloany", NULL},
    {"slo.tpot_ms", "sloany", NULL},
    {"quick.thin", "sweep", NULL},
    {"executor.fixed_latency_s", NULL, "0 measures each step on this host: no two runs agree"},
    {"knee.axis", NULL, "given, it must name a sweep axis (experiment.c); the variants' axes are named r"},
};

/* "systems[].x" -> "systems.0.x" (the config path of the key in a variant). */
static void concrete_path(const char *path, char *buf, size_t n) {
    size_t j = 0;
    for (const char *p = path; *p && j + 3 < n; p++) {
        if (p[0] == '[' && p[1] == ']') { memcpy(buf + j, ".0", 2); j += 2; p++; continue; }
        buf[j++] = *p;
    }
    buf[j] = 0;
}

/* The setting of an engine-version key (ENGINE) in a variant: the table's value for
   the variant's `engine:` and model.  False when the key is not one of the table's. */
static bool engine_setting(const char *path, const char *vid, char *buf, size_t n) {
    pb_vllm_knobs k;
    pb_vllm_version ver = !strcmp(vid, "v02spec") ? PB_VLLM_V02 : !strcmp(vid, "v1spec") ? PB_VLLM_V1 : PB_VLLM_V01;
    pb_hw hw = {.name = "A100-40GB", .mem_bytes = 40.0 * 1024 * 1024 * 1024};   /* the variants' GPU: small tier */
    pb_vllm_knobs_default(ver, 2048 /* OPT-13B */, &hw, &k);
    const char *key = path + strlen("systems[].");
    char v[64];
    if (!strcmp(key, "step_mode")) snprintf(v, sizeof v, "%s", pb_step_mode_str(k.step_mode));
    else if (!strcmp(key, "max_paddings")) snprintf(v, sizeof v, "%d", k.max_paddings);
    else if (!strcmp(key, "max_num_batched_tokens")) snprintf(v, sizeof v, "%d", k.max_num_batched_tokens);
    else if (!strcmp(key, "max_num_seqs")) snprintf(v, sizeof v, "%d", k.max_num_seqs);
    else if (!strcmp(key, "kv_profile_tokens")) snprintf(v, sizeof v, "%d", pb_vllm_knobs_profile_tokens(&k));
    else if (!strcmp(key, "gpu_mem_util")) pb_fmt_num(v, sizeof v, k.gpu_mem_util);
    else if (!strcmp(key, "watermark")) pb_fmt_num(v, sizeof v, k.watermark);
    else if (!strcmp(key, "preemption")) snprintf(v, sizeof v, "%s", pb_preempt_mode_str(k.preemption));
    else if (!strcmp(key, "prefix_caching")) snprintf(v, sizeof v, "%s", k.prefix_caching ? "true" : "false");
    else if (!strcmp(key, "async_scheduling")) snprintf(v, sizeof v, "%s", k.async_scheduling ? "true" : "false");
    else if (!strcmp(key, "cuda_graphs")) snprintf(v, sizeof v, "%s", k.cuda_graphs ? "true" : "false");
    else if (!strcmp(key, "custom_allreduce")) snprintf(v, sizeof v, "%s", k.custom_allreduce ? "true" : "false");
    else if (!strcmp(key, "fuse_allreduce_rms")) snprintf(v, sizeof v, "%s", k.fuse_allreduce_rms ? "true" : "false");
    else if (!strcmp(key, "flash_attn_version")) {
        if (k.flash_attn_version == PB_FLASH_AUTO) snprintf(v, sizeof v, "auto");
        else snprintf(v, sizeof v, "%d", k.flash_attn_version);
    }
    else return false;
    snprintf(buf, n, "systems.0.%s=%s", key, v);
    return true;
}

/* Does variant vid's YAML (spec files included) give path? */
static bool variant_sets(const char *vid, const char *path) {
    const variant *v = NULL;
    for (size_t i = 0; i < PB_ARRAY_LEN(VARIANTS); i++)
        if (!strcmp(VARIANTS[i].id, vid)) v = &VARIANTS[i];
    PB_ASSERT(v);
    pb_config *c = NULL;
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    PB_ASSERT(pb_config_load_string(vid, v->yaml, &c, &err) == PB_OK);
    char cp[200];
    concrete_path(path, cp, sizeof cp);
    bool given = pb_node_get(pb_config_root(c), cp) != NULL;
    pb_config_destroy(c);
    return given;
}

/* Run variant vid without and with `set`: every metric, the points and the settings
   agree.  Returns false (and says why) when they do not, or a run fails. */
static bool same_with(const char *path, const char *vid, const char *set, bool quick) {
    if (needs_data(vid, set) && !g_have_data) {
        fprintf(stderr, "  [skip] %s: needs ../shared/data\n", path);
        return true;
    }
    outcome a, b;
    char msg[4096] = "";
    bool ok = run_case(vid, NULL, NULL, quick, &a, msg, sizeof msg) == PB_OK;
    PB_CHECK_MSG(ok, "%s: variant %s: %s", path, vid, msg);
    if (!ok) return false;
    ok = run_case(vid, set, NULL, quick, &b, msg, sizeof msg) == PB_OK;
    PB_CHECK_MSG(ok, "%s: setting %s (variant %s) failed: %s", path, set, vid, msg);
    if (!ok) return false;
    ok = same(&a, &b) && !strcmp(a.settings, b.settings);
    PB_CHECK_MSG(ok, "%s: its declared default (%s) is not what variant %s applies when it is absent", path, set, vid);
    return ok;
}

PB_TEST(every_declared_default_is_the_one_applied) {
    setup();
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    static pb_key sys_keys[PB_SYSTEM_MAX_KEYS];
    const struct { const pb_key *schema; const char *path; } SCHEMAS[] = {
        {pb_experiment_schema, ""}, {pb_system_entry_keys(sys_keys), "systems[]"}, {pb_executor_schema, "executor"},
        {pb_workload_schema, "workload"}, {pb_sim_system_schema, "systems[].sim"}, {pb_model_schema, "model"},
        {pb_hardware_schema, "hardware"}, {pb_sim_cost_schema, "cost_model"},
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(SCHEMAS); i++)
        PB_CHECK_MSG(pb_schema_check(SCHEMAS[i].schema, SCHEMAS[i].path, &err) == PB_OK, "declarations: %s", err.msg);
    int checked = 0, explained = 0;
    for (int i = 0; i < g_nkeys; i++) {
        const char *path = g_keys[i].path;
        const pb_key *k = g_keys[i].key;
        if (k->required || (!k->dflt && !k->dflt_rule) || !strncmp(path, "hardware.cost_model.", 20)) continue;
        if (k->dflt_rule) {   /* each of the rule's cases */
            int n = 0;
            for (size_t r = 0; r < PB_ARRAY_LEN(RULES); r++) {
                const rule_case *rc = &RULES[r];
                if (strcmp(rc->path, path)) continue;
                n++;
                if (!rc->set) { explained++; continue; }
                bool engine = !strcmp(rc->set, ENGINE);
                const char *vids[3] = {engine ? "spec" : rc->variant, engine ? "v02spec" : NULL,
                                       engine ? "v1spec" : NULL};
                for (int v = 0; v < 3 && vids[v]; v++) {
                    char set[256];
                    if (engine) PB_REQUIRE(engine_setting(path, vids[v], set, sizeof set));
                    else snprintf(set, sizeof set, "%s", rc->set);
                    PB_CHECK_MSG(!variant_sets(vids[v], path), "%s: variant %s gives it already", path, vids[v]);
                    same_with(path, vids[v], set, false);
                    checked++;
                }
            }
            PB_CHECK_MSG(n > 0, "%s: its default is a rule (%s) and no case in RULES says what it gives", path,
                         k->dflt_rule);
            continue;
        }
        const kcase *kc = find_case(path);
        const char *vid = kc ? kc->variant : "sim";
        for (size_t d = 0; d < PB_ARRAY_LEN(DEFAULT_VARIANTS); d++)
            if (!strcmp(DEFAULT_VARIANTS[d].path, path)) vid = DEFAULT_VARIANTS[d].variant;
        if (!vid) { explained++; continue; }
        PB_CHECK_MSG(!variant_sets(vid, path), "%s: variant %s gives it: name another in DEFAULT_VARIANTS", path, vid);
        char cp[200], set[300];
        concrete_path(path, cp, sizeof cp);
        snprintf(set, sizeof set, "%s=%s", cp, *k->dflt ? k->dflt : "''");
        same_with(path, vid, set, kc && kc->ex == QUICK);
        checked++;
    }
    fprintf(stderr, "  %d defaults checked by running, %d explained\n", checked, explained);
}

PB_TEST_MAIN()
