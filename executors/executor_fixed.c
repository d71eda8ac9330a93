/* executor_fixed.c -- the fixed-latency test executor (see executor_fixed.h). */
#include "executor_fixed.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    pb_executor base;
    pb_fixed_exec_params p;
} fixed_exec;

void pb_fixed_exec_params_default(pb_fixed_exec_params *p) {
    memset(p, 0, sizeof *p);
    p->step_s = 1e-3;
    p->decode_seq_s = 1e-4;
    p->prefill_token_s = 1e-5;
    p->vocab = 32000;
}

static uint64_t mix(uint64_t x) {   /* splitmix64 finaliser */
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static pb_status fixed_execute(pb_executor *ex, const pb_batch *b, pb_step_result *r,
                               pb_candidates *cand) {
    const fixed_exec *f = (const fixed_exec *)ex->impl;
    double ctx = 0;
    for (int32_t i = 0; i < b->n_seqs; i++)
        if (!b->seqs[i].is_prefill) ctx += b->seqs[i].context_len;
    r->swap_s = f->p.swap_block_s * (b->n_swap_in + b->n_swap_out);
    r->copy_s = f->p.copy_block_s * b->n_copies;
    r->latency_s = f->p.step_s + f->p.prefill_token_s * (double)b->n_prefill_tokens +
                   f->p.decode_seq_s * b->n_decode + f->p.context_token_s * ctx + r->swap_s + r->copy_s;
    r->has_tokens = f->p.tokens;
    if (!f->p.tokens) return PB_OK;
    int32_t n_top = PB_MIN(PB_MAX(b->n_top, 1), PB_MAX_TOP);
    for (int32_t i = 0; i < b->n_seqs; i++) {
        const pb_batch_seq *q = &b->seqs[i];
        pb_candidates *c = &cand[i];
        if (!q->sample) { c->n = 0; continue; }
        uint64_t h = mix(f->p.seed ^ mix((uint64_t)q->group_id * 1000003ULL + (uint64_t)q->context_len));
        if (q->tokens && q->context_len > 0) h = mix(h ^ (uint64_t)q->tokens[q->context_len - 1]);
        double lp = 0;
        for (int32_t j = 0; j < n_top; j++) {
            h = mix(h + (uint64_t)j);
            lp -= 0.05 + (double)(h >> 11) * 0x1.0p-53;   /* gaps in (0.05, 1.05) */
            c->logprob[j] = (float)lp;
            c->token[j] = (int32_t)(mix(h) % (uint64_t)PB_MAX(f->p.vocab, 1));
        }
        c->n = n_top;
    }
    return PB_OK;
}

static void fixed_destroy(pb_executor *ex) { free(ex->impl); }

static const pb_executor_i FIXED_IFACE = {"fixed", fixed_execute, fixed_destroy, PB_EXEC_TOKENS};

pb_status pb_executor_fixed_create(const pb_fixed_exec_params *p, pb_executor **out) {
    fixed_exec *f = pb_xcalloc(1, sizeof *f);
    if (p) f->p = *p; else pb_fixed_exec_params_default(&f->p);
    f->base.iface = &FIXED_IFACE;
    f->base.impl = f;
    *out = &f->base;
    return PB_OK;
}
