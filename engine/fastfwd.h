/* fastfwd.h -- ENGINE-INTERNAL: the fast path, one optional module.
 *
 * A pure decode step decodes every running group, one sequence (or a beam group's
 * beams) each, and does nothing else.  After an ordinary step that was one, when the
 * policy says the next steps repeat it (replay.h pb_policy_steady_i), the fast path
 * replays them until the waiting head changes or a group's last token is produced:
 * the KV manager's replayed appends (replay.h pb_kv_replay_i: O(1) per step but for
 * the sequences that take a block; beam groups kept as block trees of counts), the
 * batch by its sums (batch.h pb_batch_add_decode_sums), the ordinary row, execution
 * and metrics of a step (engine_step.h), beam selections drawn as postprocessing
 * would draw them (beam.h pb_beam_synth_advance).  It applies when params.fast_forward
 * is set, the policy has steady answers, the manager replay operations, the executor
 * reads only the batch's sums (PB_EXEC_SUMS_ONLY) and neither KV layouts nor tokens,
 * token ids are not stored and the manager publishes no computed blocks.  The result
 * is the ordinary steps', bit for bit (tests/test_fastfwd.c). */
#ifndef PB_FASTFWD_H
#define PB_FASTFWD_H

#include <stdint.h>

#include "engine.h"

typedef struct pb_fastfwd pb_fastfwd;

/* The fast path of engine e, or NULL when it does not apply (above). */
pb_fastfwd *pb_fastfwd_create(pb_engine *e);
void pb_fastfwd_destroy(pb_fastfwd *f);
void pb_fastfwd_begin_run(pb_fastfwd *f);   /* counters zeroed */
/* After an ordinary step that ran a batch: the steps that follow replayed while they
   repeat a pure decode step (none when they do not); an ordinary step comes next.
   Errors: the executor's, or an invariant check's (check_every_step). */
pb_status pb_fastfwd_run(pb_fastfwd *f);
int64_t pb_fastfwd_steps(const pb_fastfwd *f);   /* steps replayed this run          */
int64_t pb_fastfwd_mixed(const pb_fastfwd *f);   /* of them, mixed steps (below)     */

#endif /* PB_FASTFWD_H */
