/* executor_cpu.c -- the `cpu` executor: a real tiny model (executors/model.h, cpu
 * backend) behind the executor interface, with a paged or contiguous KV cache, a
 * host swap pool, copy-on-write copies and wall-clock latencies.  See
 * executor_real.h for the contract. */
#include "executor_real.h"

#include <stdlib.h>
#include <string.h>

#include "block_manager.h"   /* PB_PAGED_BLOCK_SIZE */
#include "cache_ops.h"   /* pb_copy_blocks_ref, pb_swap_blocks_ref */
#include "model.h"
#include "slot_copy.h"   /* pb_copy_slots_ref */

void pb_real_exec_params_default(pb_real_exec_params *p) {
    memset(p, 0, sizeof *p);
    p->block_size = PB_PAGED_BLOCK_SIZE;
    p->num_gpu_blocks = 256;
    p->sampling.temperature = 0.0f;
    p->sampling.top_p = 1.0f;
    p->max_tokens_hint = 2560;
    p->tp = 1;
    p->nvtx = true;
    p->kv_scale = 1.0f;
}

typedef struct {
    pb_real_exec_stats stats;    /* first member: shared with executor_cuda.c */
    pb_model spec;
    pb_real_exec_params p;
    pb_cpu_ctx ctx;
    pb_lm *lm;
    pb_kv_cache gpu;             /* the "device" cache (host memory here)      */
    pb_kv_cache host;            /* the swap pool                              */
    pb_fwd_meta meta;
    int32_t *tok;                /* [cap * PB_MAX_TOP]                         */
    float *lp;
    int32_t *nout;
    int32_t cap;
} cpu_exec;

void pb_real_exec_get_stats(const pb_executor *ex, pb_real_exec_stats *out) {
    memset(out, 0, sizeof *out);
    if (!ex || !ex->iface || !ex->iface->name) return;
    if (strcmp(ex->iface->name, "cpu") && strcmp(ex->iface->name, "cuda")) return;
    *out = *(const pb_real_exec_stats *)ex->impl;
}

void pb_real_scatter_candidates(const pb_fwd_meta *m, const int32_t *tok, const float *lp, const int32_t *nout,
                                int32_t n_top, int32_t n_seqs, pb_candidates *cand) {
    for (int32_t i = 0; i < n_seqs; i++) cand[i].n = 0;
    for (int32_t i = 0; i < m->n_sample; i++) {
        pb_candidates *c = &cand[m->sample_seq[i]];
        c->n = nout[i];
        memcpy(c->token, tok + (size_t)i * n_top, (size_t)c->n * sizeof(int32_t));
        memcpy(c->logprob, lp + (size_t)i * n_top, (size_t)c->n * sizeof(float));
    }
}

void pb_real_account_step(pb_real_exec_stats *st, const pb_batch *b, int64_t tokens, double forward_s,
                          double swap_s, double copy_s) {
    st->steps++;
    st->tokens += tokens;
    st->swapped_out_blocks += b->n_swap_out;
    st->swapped_in_blocks += b->n_swap_in;
    st->copied_blocks += b->n_copies;
    for (int32_t i = 0; i < b->n_seqs; i++)
        if (b->seqs[i].is_prefill) st->cached_prefill_tokens += b->seqs[i].n_cached;
    st->forward_s += forward_s;
    st->swap_s += swap_s;
    st->copy_s += copy_s;
}

pb_status pb_real_check_pairs(const char *who, const char *what, const pb_block_pair *pairs, int32_t n,
                              int32_t src_blocks, int32_t dst_blocks) {
    if (n > 0 && !pairs) return PB_ERR_INVALID;
    for (int32_t i = 0; i < n; i++)
        if (pairs[i].src < 0 || pairs[i].src >= src_blocks || pairs[i].dst < 0 ||
            pairs[i].dst >= dst_blocks) {
            pb_log_error("executor %s: %s pair %d (%d -> %d) outside the pools (%d -> %d blocks)",
                         who, what, i, pairs[i].src, pairs[i].dst, src_blocks, dst_blocks);
            return PB_ERR_INVALID;
        }
    return PB_OK;
}

static pb_status swap_(cpu_exec *e, pb_kv_cache *dst, const pb_kv_cache *src,
                       const pb_block_pair *pairs, int32_t n) {
    int32_t L = e->gpu.n_layers;
    void **d = pb_xmalloc(2 * (size_t)L * sizeof(void *));
    const void **s = pb_xmalloc(2 * (size_t)L * sizeof(void *));
    for (int32_t l = 0; l < L; l++) {
        d[2 * l] = dst->k[l]; d[2 * l + 1] = dst->v[l];
        s[2 * l] = src->k[l]; s[2 * l + 1] = src->v[l];
    }
    pb_status st = pb_swap_blocks_ref(d, s, 2 * L, pairs, n, pb_kv_block_bytes(&e->gpu.shape));
    free(d);
    free(s);
    return st;
}

static pb_status cpu_execute_(pb_executor *ex, const pb_batch *b, pb_step_result *res,
                              pb_candidates *cand) {
    cpu_exec *e = ex->impl;
    double t0 = pb_now_s();
    memset(res, 0, sizeof *res);
    int32_t n_top = b->n_top > 0 ? b->n_top : 1;
    if (n_top > PB_MAX_TOP || b->n_seqs < 0 || (b->n_seqs > 0 && !b->seqs)) {
        pb_log_error("executor cpu: bad batch (n_top %d, n_seqs %d)", b->n_top, b->n_seqs);
        return PB_ERR_INVALID;
    }
    bool paged = e->p.block_size > 0;
    if ((b->block_size > 0) != paged || (paged && b->block_size != e->p.block_size)) {
        pb_log_error("executor cpu: batch block_size %d, executor built for %d (0 = contiguous)",
                     b->block_size, e->p.block_size);
        return PB_ERR_INVALID;
    }
    int32_t ng = e->gpu.shape.num_blocks, nh = paged ? e->p.num_cpu_blocks : 0;
    if ((!paged && (b->n_copies || b->n_swap_in || b->n_swap_out)) || (paged && b->n_slot_copies)) {
        pb_log_error("executor cpu: block copies / swaps on a contiguous KV cache, or slot copies on a paged one");
        return PB_ERR_INVALID;
    }
    pb_status st;
    if ((st = pb_real_check_pairs("cpu", "swap out", b->swap_out, b->n_swap_out, ng, nh)) != PB_OK ||
        (st = pb_real_check_pairs("cpu", "swap in", b->swap_in, b->n_swap_in, nh, ng)) != PB_OK ||
        (st = pb_real_check_pairs("cpu", "copy", b->copies, b->n_copies, ng, ng)) != PB_OK)
        return st;
    double tp0 = pb_now_s();
    st = pb_fwd_meta_build(&e->meta, b, &e->spec, &e->gpu.shape, e->p.sample_seed);
    if (st != PB_OK) return st;
    double tp1 = pb_now_s();
    /* memory operations: swap out, swap in, copy-on-write (vLLM cache ops) */
    double ts0 = pb_now_s();
    if (b->n_swap_out && (st = swap_(e, &e->host, &e->gpu, b->swap_out, b->n_swap_out)) != PB_OK)
        return st;
    if (b->n_swap_in && (st = swap_(e, &e->gpu, &e->host, b->swap_in, b->n_swap_in)) != PB_OK)
        return st;
    double ts1 = pb_now_s();
    if (b->n_copies &&
        (st = pb_copy_blocks_ref(e->gpu.k, e->gpu.v, e->gpu.n_layers, b->copies, b->n_copies,
                                 pb_kv_block_bytes(&e->gpu.shape))) != PB_OK)
        return st;
    if (b->n_slot_copies &&
        (st = pb_copy_slots_ref(&e->gpu.shape, e->gpu.k, e->gpu.v, e->gpu.n_layers, b->slot_copies,
                                b->n_slot_copies)) != PB_OK) {
        pb_log_error("executor cpu: slot copy outside the contiguous cache");
        return st;
    }
    double tc1 = pb_now_s();
    /* forward pass */
    int32_t S = e->meta.n_sample;
    if (S > e->cap) {
        e->cap = S;
        e->tok = pb_xrealloc(e->tok, (size_t)S * PB_MAX_TOP * sizeof(int32_t));
        e->lp = pb_xrealloc(e->lp, (size_t)S * PB_MAX_TOP * sizeof(float));
        e->nout = pb_xrealloc(e->nout, (size_t)S * sizeof(int32_t));
    }
    st = pb_lm_forward(e->lm, &e->meta, &e->gpu, n_top, &e->p.sampling, e->tok, e->lp, e->nout);
    if (st != PB_OK) return st;
    double t1 = pb_now_s();
    if (cand) pb_real_scatter_candidates(&e->meta, e->tok, e->lp, e->nout, n_top, b->n_seqs, cand);
    res->has_tokens = cand != NULL;
    res->swap_s = ts1 - ts0;
    res->copy_s = tc1 - ts1;
    res->latency_s = e->p.fixed_latency_s > 0 ? e->p.fixed_latency_s : t1 - t0;
    if (e->p.fixed_latency_s > 0) res->swap_s = res->copy_s = 0;
    pb_real_account_step(&e->stats, b, e->meta.T, t1 - tc1, ts1 - ts0, tc1 - ts1);
    e->stats.prepare_s += tp1 - tp0;
    return PB_OK;
}

static void cpu_destroy_(pb_executor *ex) {
    cpu_exec *e = ex->impl;
    if (e) {
        if (e->lm) {
            pb_kv_cache_free(&e->gpu, e->lm);
            pb_kv_cache_free(&e->host, e->lm);
        }
        pb_lm_destroy(e->lm);
        pb_cpu_ctx_free(&e->ctx);
        pb_fwd_meta_free(&e->meta);
        free(e->tok);
        free(e->lp);
        free(e->nout);
        free(e);
    }
    free(ex);
}

static const pb_executor_i cpu_iface = {.name = "cpu", .execute = cpu_execute_, .destroy = cpu_destroy_,
                                        .caps = PB_EXEC_KV_LAYOUT | PB_EXEC_TOKENS};

pb_status pb_executor_cpu_create(const pb_model *m, const pb_real_exec_params *p,
                                 pb_executor **out) {
    *out = NULL;
    if (!m || !p || p->block_size < 0 || (p->block_size > 0 && p->num_gpu_blocks < 1) ||
        (p->block_size == 0 && (p->num_slots < 1 || p->num_slots > INT32_MAX)) ||
        p->num_cpu_blocks < 0 || (p->sampling.temperature > 0 &&
                                  !(p->sampling.top_p > 0 && p->sampling.top_p <= 1))) {
        pb_log_error("executor cpu: bad parameters (block_size %d, gpu blocks %d, slots %lld, "
                     "cpu blocks %d, top_p %g)", p ? p->block_size : 0, p ? p->num_gpu_blocks : 0,
                     p ? (long long)p->num_slots : 0LL, p ? p->num_cpu_blocks : 0,
                     p ? (double)p->sampling.top_p : 0.0);
        return PB_ERR_INVALID;
    }
    cpu_exec *e = pb_xcalloc(1, sizeof *e);
    e->spec = *m;
    e->p = *p;
    pb_lm_params lp;
    memset(&lp, 0, sizeof lp);
    lp.spec = &e->spec;
    lp.ops = p->cpu_split_attention ? &pb_model_ops_cpu_split : &pb_model_ops_cpu;
    lp.ctx = &e->ctx;
    lp.tp_rank = 0;
    lp.tp_size = 1;
    lp.weight_seed = p->weight_seed;
    lp.max_tokens_hint = PB_MIN(PB_MAX(p->max_tokens_hint, 1), 4096);
    lp.kv_cache_dtype = p->kv_cache_dtype;
    lp.kv_scale = p->kv_scale;
    pb_executor *ex = pb_xcalloc(1, sizeof *ex);
    ex->iface = &cpu_iface;
    ex->impl = e;
    pb_status st = pb_lm_create(&lp, &e->lm);
    if (st == PB_OK) {
        bool contig = p->block_size == 0;
        st = pb_kv_cache_alloc(&e->gpu, e->lm, contig ? 1 : p->num_gpu_blocks,
                               contig ? (int32_t)p->num_slots : p->block_size, contig);
    }
    if (st == PB_OK && p->block_size > 0 && p->num_cpu_blocks > 0)
        st = pb_kv_cache_alloc(&e->host, e->lm, p->num_cpu_blocks, p->block_size, false);
    if (st != PB_OK) {
        cpu_destroy_(ex);
        return st;
    }
    *out = ex;
    return PB_OK;
}
