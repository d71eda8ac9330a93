/* system.h -- build one system of an experiment (KV manager + policy + executor) and
 * run one point: the runner's point function for serving experiments.
 *
 * From the point's resolved config (runner.h pb_point_ctx); every key is read through
 * its declaration (experiment.h: its default comes from there, never from here):
 *   model, hardware      pb_model / pb_hw / the hardware's cost_model (sim executor),
 *                        overlaid with the experiment's top-level cost_model: map
 *   gpus                 tensor-parallel degree (must divide the attention heads)
 *   seed                 read from the resolved config (so a seed sweep axis works)
 *   workload             workloads/workload.h: generate the trace with the experiment
 *                        seed -- every system of an experiment replays the same trace
 *   the system's map     its type (the TYPES table in system.c: KV manager, policy,
 *                        reservation and sim defaults of each type) and its keys: a
 *                        key's declaration says which types read it (pb_key.scope),
 *                        each policy's (policy.h pb_policy_keys) which options it takes
 *                        and which of its type's keys it never reads; any other key is
 *                        an error, never ignored:
 *     vllm  paged KV manager (block_size, watermark, swap_space_gib), policy "vllm"
 *           (FCFS, all-or-nothing preemption: preemption auto | swap | recompute)
 *     orca  contiguous KV manager over a buddy allocator with reservation
 *           oracle | pow2 | max, policy "orca"
 *     ft    contiguous KV manager, reservation max, policy "ft" (batches of B =
 *           max_batch, 0 = as many max-length requests as fit); finish times moved
 *           to the batch's completion
 *   engine               v0.1 | v0.2 (engine/vllm_version.h): the vLLM version whose
 *                        knobs apply to step_mode, max_paddings,
 *                        max_num_batched_tokens, max_num_seqs, gpu_mem_util and
 *                        kv_profile_tokens; each key overrides its version's value
 *   KV space             v0.1: pb_kv_capacity_compute(model, hw, gpus, block size,
 *                        kv_profile_tokens, gpu_mem_util), the paper harness's rule
 *                        (Table 1); v0.2: pb_kv_capacity_profile (profiling pass over
 *                        min(max_num_seqs, kv_profile_tokens) dummy prompts);
 *                        contiguous managers get its slots
 *   executor             sim (cost model; a system's `sim:` map picks the attention
 *                        kernel and the framework), cpu (tiny real model), cuda (real
 *                        model).  As a map (experiment.h pb_executor_schema), real
 *                        executors read fixed_latency_s (a deterministic clock), kv_slots,
 *                        kv_mib (a cap of the KV space per GPU) and swap_slots (the swap
 *                        pool; the KV manager and the executor get the same block counts).
 *                        Real executors draw token ids in [0, model vocab).
 *   trace fitting        length_scale (lengths x factor, rounded up; a shared prefix is
 *                        scaled down) and clamp_to_max_len (prompt <= max_len - 1, output
 *                        <= max_len - prompt): pb_trace_fit (trace_fit.h), after generation
 *
 * Metrics written for the point: point_out.h's (latencies, throughputs, memory,
 * checks), plus kv_slots and kv_blocks (the KV space); the summary text is vLLM
 * benchmark_serving's block with the named checks. */
#ifndef PB_SYSTEM_H
#define PB_SYSTEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "client.h"
#include "engine.h"
#include "executor.h"
#include "kv_manager.h"
#include "pb.h"
#include "point.h"
#include "policy.h"
#include "spec.h"
#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Check every point of e before anything runs: each point's resolved config (sweep
 * values checked like the key they set, at the sweep value's file:line:col), the
 * system's keys against its type and policy (their declarations), model /
 * hardware / tensor-parallel compatibility, the KV space (at least one block and one
 * max-length request; bookkeeping + buffers under half of physical memory), the
 * workload (rate and duration > 0, at most 1e7 generated requests) and the trace file
 * (read and parsed).  Errors go to err; one per system (its first failing point). */
pb_status pb_system_check(const pb_experiment *e, pb_cfg_err *err);

/* pb_point_fn for serving experiments (user unused).  Errors: PB_ERR_INVALID (bad
 * option, with file:line:col), the engine's or executor's status. */
pb_status pb_system_run_point(const pb_point_ctx *pt, pb_point_metrics *out, char *err, size_t err_n,
                              void *user);

/* One system of a point built for a caller that drives the engine itself (an
 * online server): its KV manager, policy and executor (the caller's, freed by
 * pb_system_parts_free) and the engine's parameters, as pb_system_run_point makes
 * them; the workload is not read.  Errors as pb_system_run_point's. */
typedef struct {
    pb_kv_manager *kv;
    pb_policy *policy;
    pb_executor *ex;
    pb_engine_params ep;
    pb_model model;
    bool real;                 /* a real executor (cpu, cuda): tokens from the model   */
    char executor[16];         /* sim | cpu | cuda                                      */
    int64_t n_gpu_blocks;
} pb_system_parts;
pb_status pb_system_build(const pb_point_ctx *pt, pb_system_parts *out, char *err, size_t err_n);
void pb_system_parts_free(pb_system_parts *p);
/* The workload of a point as pb_system_run_point sends it, for a caller that sends it
 * itself (a load generator): the trace generated with the point's seed, fitted to the
 * model's context, the prompts longer than it dropped (info->dropped), and the client's
 * settings (workload.conversation, max_concurrency).  *trace is the caller's
 * (pb_trace_free).  Errors as pb_system_run_point's. */
typedef struct {
    pb_client_cfg client;
    int64_t dropped;
    int32_t max_model_len;
    uint64_t seed;
    char model[64];            /* the model spec's name (OPT-13B)                      */
} pb_system_workload_info;
pb_status pb_system_workload(const pb_point_ctx *pt, pb_trace *trace, pb_system_workload_info *info, char *err,
                             size_t err_n);
/* The system a one-system command (serve, loadgen) uses: the one with id, else (id NULL)
 * the first of type vllm, else the first; -1 when no system has that id. */
int pb_system_pick(const pb_experiment *e, const char *id);

/* The system types, one line each: KV manager and the defaults that follow from the
 * type (policy, reservation, the sim executor's kernel and framework). */
void pb_system_types_describe(FILE *f);

/* One line describing the executor and device of an experiment, for the JSON
 * sidecar and stderr context, e.g. "sim (cost model of A100-40GB x1)". */
void pb_system_describe_executor(const pb_experiment *e, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* PB_SYSTEM_H */
