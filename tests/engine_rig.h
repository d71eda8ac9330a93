/* engine_rig.h -- the engine as tests set it up:
 *   pb_test_sys: a paged KV manager, a policy by name, the fixed-latency executor, an
 *     engine over them and a metrics sink, built and freed in one call each;
 *   pb_test_run_engine: trace t through a new engine over kv, policy and executor,
 *     step by step, with the KV manager's full invariant check (pb_kv_check) after
 *     every step. */
#ifndef PB_TEST_ENGINE_RIG_H
#define PB_TEST_ENGINE_RIG_H

#include <stdbool.h>

#include <string.h>

#include "block_manager.h"
#include "engine.h"
#include "executor_fixed.h"
#include "kv_manager.h"
#include "metrics.h"

typedef struct {
    pb_kv_manager *kv;
    pb_policy *pol;
    pb_executor *ex;
    pb_engine *e;
    pb_metrics *m;
} pb_test_sys;

static inline void pb_test_sys_free(pb_test_sys *s) {
    pb_engine_destroy(s->e);
    pb_kv_destroy(s->kv);
    pb_policy_destroy(s->pol);
    pb_executor_destroy(s->ex);
    pb_metrics_destroy(s->m);
    memset(s, 0, sizeof *s);
}

/* s: the paged manager of pp, policy `policy` (no options), the fixed executor of xp,
   an engine of ep over them, metrics recording steps when record_steps.  PB_OK, or
   the first error with nothing left built. */
static inline pb_status pb_test_sys_init(pb_test_sys *s, const pb_paged_params *pp, const char *policy,
                                         const pb_fixed_exec_params *xp, const pb_engine_params *ep,
                                         bool record_steps) {
    memset(s, 0, sizeof *s);
    pb_status st = pb_paged_kv_create(pp, &s->kv);
    if (st == PB_OK) st = pb_policy_create(policy, NULL, &s->pol, NULL);
    if (st == PB_OK) st = pb_executor_fixed_create(xp, &s->ex);
    if (st == PB_OK) st = pb_engine_create(ep, s->kv, s->pol, s->ex, &s->e);
    if (st == PB_OK && !(s->m = pb_metrics_create(record_steps))) st = PB_ERR_NOMEM;
    if (st != PB_OK) pb_test_sys_free(s);
    return st;
}

static inline pb_status pb_test_run_engine(pb_kv_manager *kv, pb_policy *policy, pb_executor *ex, const pb_trace *t,
                                           pb_metrics *m) {
    pb_engine_params ep;
    pb_engine_params_default(&ep);
    pb_engine *eng = NULL;
    pb_status st = pb_engine_create(&ep, kv, policy, ex, &eng);
    if (st != PB_OK) return st;
    st = pb_engine_begin(eng, t, m);
    bool done = false;
    while (st == PB_OK && !done) {
        st = pb_engine_step(eng, &done);
        if (st == PB_OK) st = pb_kv_check(kv);
    }
    pb_status st2 = pb_engine_end(eng);
    if (st == PB_OK) st = st2;
    pb_engine_destroy(eng);
    return st;
}

#endif /* PB_TEST_ENGINE_RIG_H */
