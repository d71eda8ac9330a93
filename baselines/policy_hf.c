/* policy_hf.c -- HF Transformers (2023) as vLLM's launch post ran it: static
 * request-level batching (vLLM benchmarks/benchmark_throughput.py, run_hf, v0.1.0).
 *
 *   - when no batch is running, requests are packed in arrival order while the batch
 *     has fewer than max_batch requests and the longest prompt plus the longest
 *     output of the batch stays within the model's max length (2048 for LLaMA: the
 *     script's rule, so that generate()'s padded batch fits the model);
 *   - the prompts run as one padded [rows, longest prompt] batch (tokenizer
 *     padding=True; pb_sched_pad_prompts);
 *   - the batch decodes until its longest output is done; nothing joins it;
 *   - every request of the batch completes when the batch completes
 *     (pb_policy_hf_finalize, the static batches of static_batch.h);
 *   - no sharing between parallel samples: generate(num_return_sequences = n)
 *     expands each prompt n times, so with the contiguous KV manager every sample
 *     holds its own region (reservation max: n x max_len slots per request, the
 *     largest batch that never runs out of memory; the script's hf_max_batch_size was
 *     not published).
 * Not modelled, stated: the padded positions of the KV cache in decode attention
 * (each row attends over its own tokens), the n-fold prompt computation of a
 * request with n samples (its prompt runs once, then forks), and a finished row's
 * further decoding until its batch ends (it leaves the batch, as in FT's policy;
 * decode steps are weight-bound, so this flatters HF a little).
 *
 * Option (the system's YAML map): max_batch, PB_BASELINE_MAX_BATCH (baselines.h).
 * Registered as "hf"; pair it with `type: ft` (contiguous KV, reservation max). */
#include <stdlib.h>

#include "baselines.h"
#include "engine.h"
#include "static_batch.h"

typedef struct {
    int32_t max_batch;       /* requests per batch, 0 = as many as memory allows */
    pb_static_batches batches;
} hf_policy;

static const pb_policy_i hf_iface;

/* Admit the batch: waiting heads in order while the packing rule, the KV space and
   max_num_seqs allow. */
static pb_status hf_form_batch(hf_policy *h, pb_sched *s) {
    int32_t n = 0, max_prompt = 0, max_output = 0;
    pb_group *g;
    while ((g = pb_sched_waiting_peek(s)) != NULL) {
        if (h->max_batch > 0 && n >= h->max_batch) break;
        int32_t mp = PB_MAX(max_prompt, g->prompt_len), mo = PB_MAX(max_output, g->output_len);
        if (n > 0 && mp + mo > g->max_len) break;   /* run_hf's packing rule */
        pb_alloc_status a = pb_sched_can_admit(s, g);
        if (a == PB_ALLOC_NEVER) { pb_sched_reject(s, g); continue; }
        if (a == PB_ALLOC_LATER) break;
        if (pb_sched_running_seqs(s) + PB_MAX(g->n_seqs, g->max_seqs) > pb_sched_params(s)->max_num_seqs) break;
        pb_status st = pb_sched_admit(s, g, INT32_MAX);
        if (st == PB_ERR_NO_SPACE) break;
        if (st != PB_OK) return st;
        max_prompt = mp;
        max_output = mo;
        n++;
    }
    if (n == 0) return PB_OK;
    pb_sched_pad_prompts(s);
    pb_static_batches_note(&h->batches, s, n);
    return PB_OK;
}

static pb_status hf_schedule(pb_policy *p, pb_sched *s) {
    hf_policy *h = p->impl;
    if (pb_sched_n_running(s) > 0) return pb_sched_decode_running(s, NULL, NULL);   /* the batch runs on */
    return hf_form_batch(h, s);
}

static void hf_destroy(pb_policy *p) {
    if (!p) return;
    hf_policy *h = p->impl;
    pb_static_batches_free(&h->batches);
    free(h);
    free(p);
}

static const pb_policy_i hf_iface = {
    .name = "hf",
    .waiting_key = NULL,          /* arrival order */
    .schedule = hf_schedule,
    .destroy = hf_destroy,
};

static const pb_policy_option HF_OPTIONS[] = {PB_BASELINE_MAX_BATCH, {0}};
const pb_policy_keys pb_policy_hf_keys = {HF_OPTIONS, NULL};

pb_status pb_policy_hf_create(const pb_node *opts, pb_policy **out, pb_cfg_err *err) {
    *out = NULL;
    if (pb_policy_opts_check(hf_iface.name, &pb_policy_hf_keys, opts, err)) return PB_ERR_INVALID;
    hf_policy *h = pb_xcalloc(1, sizeof *h);
    h->max_batch = (int32_t)pb_policy_opt_int(&pb_policy_hf_keys, opts, "max_batch");
    pb_policy *p = pb_xcalloc(1, sizeof *p);
    p->iface = &hf_iface;
    p->impl = h;
    *out = p;
    return PB_OK;
}

bool pb_policy_is_hf(const pb_policy *p) { return p && p->iface == &hf_iface; }

int64_t pb_policy_hf_batch_of(const pb_policy *p, int64_t id) {
    PB_ASSERT(pb_policy_is_hf(p));
    return pb_static_batches_of(&((const hf_policy *)p->impl)->batches, id);
}

void pb_policy_hf_finalize(pb_policy *p, pb_metrics *m) {
    PB_ASSERT(pb_policy_is_hf(p));
    pb_static_batches_finalize(&((hf_policy *)p->impl)->batches, m);
}
