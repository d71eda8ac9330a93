/* fuzz_engine.c -- libFuzzer harness: a short engine run from a fuzzed trace.
 * The first byte picks the system (vLLM paged with block size 1..32 / Orca / FT over
 * contiguous reservations) and the KV size; the rest is a trace CSV.  A readable trace
 * (cut to 64 requests) must run to the end with every invariant checked after every
 * step: requests that can never run are rejected and counted, never a stall or a crash.
 *   build/<preset>/fuzz/fuzz_engine tests/fuzz/corpus/engine -max_total_time=15 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "baselines.h"       /* pb_policy_orca_create, pb_policy_ft_create */
#include "block_manager.h"   /* pb_paged_kv_create */
#include "engine.h"
#include "executor_fixed.h"
#include "kv_contiguous.h"
#include "metrics.h"
#include "policy.h"
#include "trace_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    uint8_t sel = data[0], kvsel = data[1];
    char *text = malloc(size - 1);
    memcpy(text, data + 2, size - 2);
    text[size - 2] = 0;
    pb_trace t = {0};
    char err[1024];
    if (pb_trace_read_string("fuzz.csv", text, &t, err, sizeof err) != PB_OK) { free(text); return 0; }
    if (t.n > 64) t.n = 64;

    pb_engine_params ep;
    pb_engine_params_default(&ep);
    ep.max_model_len = 256;
    ep.max_num_batched_tokens = 512;
    ep.max_num_seqs = 1 + (sel >> 3) % 16;
    ep.check_every_step = true;
    ep.max_steps = 20000;
    ep.preemption = (pb_preempt_mode)((sel >> 2) % 3);
    pb_kv_manager *kv = NULL;
    pb_policy *pol = NULL;
    int kind = sel % 3;
    pb_status st;
    if (kind == 0) {
        pb_paged_params pp;
        pb_paged_params_default(&pp);
        pp.block_size = 1 + kvsel % 32;
        pp.n_gpu_blocks = 1 + (kvsel * 7) % 96;
        pp.n_cpu_blocks = (kvsel >> 4) * 4;
        st = pb_paged_kv_create(&pp, &kv);
        if (!st) st = pb_policy_create((sel >> 7) ? "spf" : "vllm", NULL, &pol, NULL);
    } else {
        pb_kv_contiguous_params cp;
        cp.num_slots = 16 + kvsel * 8;
        cp.max_len = ep.max_model_len;
        cp.rule = (pb_resv_rule)((sel >> 3) % 3);
        st = pb_kv_contiguous_create(&cp, &kv);
        if (!st) st = kind == 1 ? pb_policy_orca_create(NULL, &pol, NULL) : pb_policy_ft_create(NULL, &pol, NULL);
    }
    pb_executor *ex = NULL;
    pb_fixed_exec_params xp;
    pb_fixed_exec_params_default(&xp);
    if (!st) st = pb_executor_fixed_create(&xp, &ex);
    pb_engine *e = NULL;
    pb_metrics *m = pb_metrics_create(false);
    if (!st) st = pb_engine_create(&ep, kv, pol, ex, &e);
    if (!st) {
        st = pb_engine_run(e, &t, m);
        if (st != PB_OK) abort();   /* a stall or an invariant broken */
        pb_run_summary s;
        pb_metrics_summary(m, &s);
        if (s.n_finished + s.n_rejected + s.n_unfinished != s.n_requests) abort();
    }
    pb_engine_destroy(e);
    pb_metrics_destroy(m);
    pb_executor_destroy(ex);
    pb_policy_destroy(pol);
    pb_kv_destroy(kv);
    pb_trace_free(&t);
    free(text);
    return 0;
}
