/* engine_rig.h -- a test's run of the engine: trace t through a new engine over kv,
 * policy and executor, step by step, with the KV manager's full invariant check
 * (pb_kv_check) after every step.  Returns the first error, else PB_OK. */
#ifndef PB_TEST_ENGINE_RIG_H
#define PB_TEST_ENGINE_RIG_H

#include <stdbool.h>

#include "engine.h"
#include "kv_manager.h"
#include "metrics.h"

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
