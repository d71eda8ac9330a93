/* beam.h -- beam-search selection and the next-token score models (synthetic, measured).
 *
 * Beam search (vLLM v0.1.5+, HF-aligned, docs/DESIGN.md §8): each live beam proposes
 * its top 2 * beam_width next tokens; among all (beam, token) candidates the
 * beam_width with the highest cumulative log-probability (beam's cum_logprob +
 * token logprob) survive.  A beam chosen c times continues itself once and is forked
 * c - 1 times; a beam chosen 0 times is freed.  With forced output lengths (EOS
 * ignored) no beam finishes early, so no finished-hypothesis list is needed, and the
 * length penalty does not change the ranking (all candidates have equal length).
 * Ties break by beam index, then candidate rank (deterministic).
 *
 * Synthetic model (used when the executor returns no tokens, i.e. the cost-model
 * simulator).  For each sampled sequence and step, independently, from the
 * request's seeded pb_rng:
 *     logprob[0] = -E0,   logprob[j] = logprob[j-1] - Ej   (j = 1 .. n_top-1),
 *     E0, Ej ~ Exponential(rate 1)  (mean gap 1 nat between consecutive ranks),
 *     token[j] ~ Uniform{0 .. vocab-1}.
 * So candidates are sorted by log-probability, the top token has mean
 * log-probability -1, and the spread between beams' cumulative scores is a random
 * walk -- beams survive, branch and die as in a real search (Fig. 9), and the
 * memory saving from sharing comes out of this genealogy, not from a formula.
 * The distribution is a modelling choice (documented in RESULTS.md); a measured
 * table (pb_beam_table below) replaces it when configured, and real executors
 * replace both with real scores. */
#ifndef PB_BEAM_H
#define PB_BEAM_H

#include <stdint.h>

#include "executor.h"
#include "rng.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fill out with n_top (<= PB_MAX_TOP) synthetic candidates, token ids in [0, vocab). */
void pb_beam_synth_candidates(pb_rng *r, int32_t n_top, int32_t vocab, pb_candidates *out);

/* A measured score model: n_rows rows of a language model's top n_top next-token
 * log-probabilities, best first (lp[row * n_top + j], j = 0 .. n_top - 1, descending),
 * recorded at the states its own beam search visited (workloads/beam_scores.h says
 * which model).  Used instead of the synthetic model when the engine's parameters name
 * one (engine.h beam_scores): each sequence's candidates at each step are one row,
 * drawn uniformly and independently (pb_rng_below: one u64), then a token id each
 * when vocab > 0. */
typedef struct {
    int32_t n_rows, n_top;
    const float *lp;
} pb_beam_table;

/* Fill out with the first n_top (<= t->n_top, <= PB_MAX_TOP) log-probabilities of a
   row drawn from t, token ids in [0, vocab) (vocab <= 0: none drawn, every token 0). */
void pb_beam_table_candidates(pb_rng *r, const pb_beam_table *t, int32_t n_top, int32_t vocab,
                              pb_candidates *out);

/* The measured model's step of a beam group at its full width (the replay's,
   fastfwd.c), with pb_beam_synth_advance's contract: exactly what
       for i in 0 .. nb-1 (beam index order): pb_beam_table_candidates(r, t, 2 * nb, 0, &cand[i]);
       nc = pb_beam_select(cum, cand, nb, nb, ch);  pb_beam_plan_make(ch, nc, nb, &pl);
   gives, with cum[order[m]] = c[m] before and order[m] = pl.next[m], c[m] = ch[m].score,
   parent[e] = ch[pl.at[e]].parent after: the same draws as postprocessing's. */
void pb_beam_table_advance(pb_rng *r, const pb_beam_table *t, double *c, int32_t *order, int32_t nb,
                           int32_t *parent);

/* 1 when t is usable for beam width w: rows, 2 * w <= n_top <= PB_MAX_TOP, every row
   descending and finite. */
int pb_beam_table_ok(const pb_beam_table *t, int32_t w);

typedef struct {
    int32_t parent;      /* index of the beam (0 .. n_beams-1)                      */
    int32_t rank;        /* candidate rank within the parent                        */
    int32_t token;
    float logprob;
    double score;        /* parent cum_logprob + logprob (the synthetic model: the
                            unrounded score, logprob its difference as a float)     */
} pb_beam_choice;

/* Select the top k of the n_beams * cand[i].n candidates by score.  cum[i] is beam
 * i's cumulative log-probability.  Writes min(k, total) choices to out, sorted by
 * score descending; returns their number. */
int32_t pb_beam_select(const double *cum, const pb_candidates *cand, int32_t n_beams, int32_t k,
                       pb_beam_choice *out);

/* The synthetic model and the selection fused (the simulator's hot path): the same
 * distribution of choices as
 *     for (i = 0; i < n_beams; i++) pb_beam_synth_candidates(r, n_top, vocab, &cand[i]);
 *     return pb_beam_select(cum, cand, n_beams, k, out);
 * but it draws only what is chosen.  Beam i's scores are the first n_top points of a
 * rate-1 Poisson process below cum[i]; together the beams' points are one Poisson
 * process whose rate at score s is the number of beams with cum > s (that still have
 * candidates), each point belonging to one of them uniformly.  So the top k are drawn
 * best first: per choice one u64 gives an Exp(1) of integrated rate and the beam
 * (uniform among the live ones, one of them too) -- pb_rng_exp_zig24_reg,
 * pb_rng_below32_reg -- and a token draw follows: k u64s (plus k tokens) per call
 * instead of n_beams * n_top exponentials and tokens.  The choices follow the same law
 * (the exponential to 6e-8: its ziggurat j cut to 24 bits); the random stream is
 * consumed differently, so the draws differ from synth + select.  A choice's score is its level itself (not cum + a float
 * logprob: no rounding to undo), kept at most the one before it, so the choices come
 * out best first as drawn; equal scores stay in the order drawn (pb_beam_select
 * breaks them by beam, then rank: with continuous scores, a measure-zero case).
 * vocab <= 0: no tokens are drawn (every token is 0): for callers that keep no token
 * ids (the simulator), so the draws go to the choices only.
 * out must hold k; returns min(k, n_beams * n_top) choices sorted best first.
 * hint (NULL: none): the beams probably in the order the selection starts from --
 * by cum, best first, ties by index -- e.g. pb_beam_plan's next order; it is only
 * where the sort starts (the result is the same with any hint), and a right one
 * makes the sort a pass of predictable compares. */
int32_t pb_beam_synth_select(pb_rng *r, const double *cum, const int32_t *hint, int32_t n_beams,
                             int32_t n_top, int32_t vocab, int32_t k, pb_beam_choice *out);

/* The beams after a selection of nc choices among nb beams (choices as
 * pb_beam_select writes them): a beam chosen at least once continues as its first
 * choice and keeps its index; every further choice is a new child (kid[0..n_kids),
 * choice indices in order); beams nobody chose die (dead[0..n_dead), in index order).
 * at[e] is the choice at index e of the group afterwards (e < nc): what forking every
 * child (appended in choice order) and then deleting the dead in index order
 * (swap-remove) leaves -- the engine's sequence order (engine.c beam_step) and the
 * replay's (beam_replay) alike. */
typedef struct {
    int32_t at[PB_MAX_TOP / 2];
    int32_t next[PB_MAX_TOP / 2];   /* the choices' indices afterwards, best first: the
                                       beams by score (a hint for the next selection) */
    int32_t kid[PB_MAX_TOP / 2], n_kids;
    int32_t dead[PB_MAX_TOP / 2], n_dead;
} pb_beam_plan;

void pb_beam_plan_make(const pb_beam_choice *ch, int32_t nc, int32_t nb, pb_beam_plan *p);

/* One step of a beam group at its full width under the synthetic model, without
 * token ids (the replay's hot path, engine.c beam_forward), on the beams by rank:
 * beam order[m] has score c[m] (best first, ties by index; any other order is
 * sorted first).  Exactly what, with cum[order[m]] = c[m],
 *     nc = pb_beam_synth_select(r, cum, order, nb, 2 * nb, 0, nb, ch);
 *     pb_beam_plan_make(ch, nc, nb, &pl);
 *     for each m: order[m] = pl.next[m], c[m] = ch[m].score;
 *     for each e: parent[e] = ch[pl.at[e]].parent
 * gives -- the same draws, the same beams (tests/test_engine.c) -- without the
 * choices' ranks and the plan's children and dead: order and c updated (the new
 * ranks: choice m is rank m), parent[e] the beam (index before the step) that beam
 * e continues.  Kept by rank, the scores need no gather and no sort the next step. */
void pb_beam_synth_advance(pb_rng *r, double *c, int32_t *order, int32_t nb, int32_t *parent);

#ifdef __cplusplus
}
#endif
#endif /* PB_BEAM_H */
