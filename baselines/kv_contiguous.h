/* kv_contiguous.h -- the baselines' KV manager: one contiguous, up-front reservation
 * per sequence, carved out of the KV slot space by a buddy allocator (paper §6.1).
 *
 * Orca (Oracle / Pow2 / Max) and FasterTransformer store each sequence's KV cache in
 * one contiguous region reserved when the request is admitted, big enough for the
 * whole output, so they never need to grow, move or preempt anything.  A sequence of
 * a group with prompt P and forced output length L writes the KV of
 *     need = P + L - 1
 * tokens (the last output token's KV is never computed), and reserves
 *     oracle  need                         the true output length (the upper bound
 *                                          the paper calls infeasible in practice)
 *     pow2    P + next_pow2(L)             "over-reserves the space for outputs by
 *                                          at most 2x": L = 25 reserves 32 output
 *                                          positions; capped at max_len (never less
 *                                          than need)
 *     max     max_len                      up to the model's maximum length (2048)
 * slots.  The prompt part is NOT rounded by the rule; the WHOLE reservation is then
 * rounded up to a power-of-two chunk by the buddy allocator (baselines/buddy.h, which
 * also documents how a non-power-of-two space such as 15,728 slots is covered): that
 * is why a 1024-token prompt gets 1024 output slots whatever the rule (§6.5), and
 * where the baselines' external fragmentation comes from.
 *
 * No sharing (§6.1): a group reserves max_seqs regions (n parallel samples or
 * beam_width candidates) at admission, all of them or none; forked sequences take one
 * of the group's spare regions and receive a copy of the parent's KV; a shared prefix
 * is stored and computed per request (n_cached = 0 always).  A region freed by a
 * sequence of a group that still has sequences returns to the group's spares (beam
 * search re-forks into it); the group's regions go back to the buddy allocator when
 * its last sequence is freed.  If a fork finds no spare (a beam step forks before it
 * frees, as vLLM's does), the child waits for the next region a sequence of its group
 * frees -- its parent's own region when the parent is the one freed, which then needs
 * no copy -- so a beam group never holds more than beam_width regions; a child still
 * without a region when it must run takes one from the allocator in append (every
 * forked sequence decodes next, so batch_info only reads, as kv_manager.h requires).
 *
 * Memory breakdown (pb_kv_usage), in slots, every slot in exactly one class (Fig. 2):
 *   token_slots          KV written now: sum of kv_len;
 *   reserved_slots       reserved and to be written by the sequence: need - kv_len
 *                        per region (a spare region counts need);
 *   internal_frag_slots  reserved by the rule but never written: reservation - need;
 *   free_slots           external fragmentation and others: slots in no
 *                        allocation, PLUS each chunk's power-of-two round-up
 *                        (chunk - reservation), which the paper counts as the
 *                        allocator's external fragmentation (Orca (Oracle) has 0%
 *                        internal fragmentation in Fig. 2).
 *   gpu_blocks_total / gpu_blocks_free are in slots (free = not in any buddy chunk);
 *   logical_blocks == physical_blocks == slots in buddy chunks (no sharing).
 *
 * Swapping is not supported (the swap ops are NULL): the baselines never preempt.
 * batch_info gives kv_offset = the region's first slot (block_table NULL).
 * Fork copies are not reported as pb_pair_vec pairs (the fork op has no pair vector);
 * pb_kv_contiguous_stats_get() counts the copied slots. */
#ifndef PB_KV_CONTIGUOUS_H
#define PB_KV_CONTIGUOUS_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "kv_manager.h"
#include "pb.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { PB_RESV_ORACLE = 0, PB_RESV_POW2 = 1, PB_RESV_MAX = 2 } pb_resv_rule;

const char *pb_resv_rule_str(pb_resv_rule r);          /* "oracle" "pow2" "max" */
bool pb_resv_rule_parse(const char *s, pb_resv_rule *out);
#define PB_RESV_RULE_CHOICES "oracle|pow2|max"

typedef struct {
    int64_t num_slots;       /* KV capacity in token slots (15,728 for OPT-13B/A100-40GB)*/
    pb_resv_rule rule;
    int32_t max_len;         /* model maximum sequence length (2048)                    */
} pb_kv_contiguous_params;

/* Slots one sequence writes (P + L - 1, at least P) / reserves under rule. */
int32_t pb_kv_contiguous_need(int32_t prompt_len, int32_t output_len);
int32_t pb_kv_contiguous_reservation(pb_resv_rule rule, int32_t prompt_len, int32_t output_len,
                                     int32_t max_len);

/* Create.  PB_ERR_INVALID for num_slots outside [1, 2^30] or max_len < 1. */
pb_status pb_kv_contiguous_create(const pb_kv_contiguous_params *p, pb_kv_manager **out);

bool pb_kv_is_contiguous(const pb_kv_manager *m);

typedef struct {
    int64_t num_slots;
    pb_resv_rule rule;
    int32_t max_len;
    int64_t n_groups;          /* groups holding regions                             */
    int64_t n_regions;         /* live buddy chunks (assigned + spare)               */
    int64_t copied_slots;      /* KV slots copied by forks, over the run             */
    int64_t n_forks, n_extra_regions;  /* forks; forks that found no spare region    */
} pb_kv_contiguous_stats;
void pb_kv_contiguous_stats_get(const pb_kv_manager *m, pb_kv_contiguous_stats *out);

/* Groups of max_seqs sequences, each reserving resv slots, that an EMPTY space of
 * num_slots holds (FasterTransformer's B: 7 for 2048 in 15,728 slots). */
int64_t pb_kv_contiguous_capacity(int64_t num_slots, int32_t resv, int32_t max_seqs);

#ifdef __cplusplus
}
#endif
#endif /* PB_KV_CONTIGUOUS_H */
