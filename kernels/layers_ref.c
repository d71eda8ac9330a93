/* layers_ref.c -- plain C11 references of the decoder layers (see layers.h).
 *
 * fp32 in and out; every output row depends only on its own input row and is
 * summed in a fixed order, so a row's result does not depend on the batch it is
 * computed in (the CPU model's batch-independence rests on this). */
#include "layers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- linear algebra and norms ---- */

void pb_gemm_ref(float *PB_RESTRICT out, const float *PB_RESTRICT in, const float *PB_RESTRICT w,
                 const float *bias, int32_t M, int32_t N, int32_t K) {
    for (int32_t m = 0; m < M; m++) {
        const float *x = in + (size_t)m * K;
        float *o = out + (size_t)m * N;
        for (int32_t n = 0; n < N; n++) {
            const float *wr = w + (size_t)n * K;
            float acc = bias ? bias[n] : 0.0f;
            for (int32_t k = 0; k < K; k++) acc += x[k] * wr[k];
            o[n] = acc;
        }
    }
}

void pb_bias_act_ref(float *x, const float *bias, int32_t M, int32_t N, int relu) {
    for (int32_t m = 0; m < M; m++) {
        float *r = x + (size_t)m * N;
        for (int32_t n = 0; n < N; n++) {
            float v = r[n] + (bias ? bias[n] : 0.0f);
            r[n] = relu && v < 0.0f ? 0.0f : v;
        }
    }
}

void pb_layernorm_ref(float *out, const float *in, const float *gamma, const float *beta,
                      int32_t M, int32_t N, float eps) {
    for (int32_t m = 0; m < M; m++) {
        const float *x = in + (size_t)m * N;
        float *o = out + (size_t)m * N;
        float mean = 0.0f;
        for (int32_t n = 0; n < N; n++) mean += x[n];
        mean /= (float)N;
        float var = 0.0f;
        for (int32_t n = 0; n < N; n++) var += (x[n] - mean) * (x[n] - mean);
        var /= (float)N;
        float rstd = 1.0f / sqrtf(var + eps);
        for (int32_t n = 0; n < N; n++)
            o[n] = (x[n] - mean) * rstd * gamma[n] + (beta ? beta[n] : 0.0f);
    }
}

void pb_rmsnorm_ref(float *out, const float *in, const float *gamma, int32_t M, int32_t N,
                    float eps) {
    for (int32_t m = 0; m < M; m++) {
        const float *x = in + (size_t)m * N;
        float *o = out + (size_t)m * N;
        float ss = 0.0f;
        for (int32_t n = 0; n < N; n++) ss += x[n] * x[n];
        float rstd = 1.0f / sqrtf(ss / (float)N + eps);
        for (int32_t n = 0; n < N; n++) o[n] = x[n] * rstd * gamma[n];
    }
}

void pb_silu_mul_ref(float *PB_RESTRICT out, const float *PB_RESTRICT gu, int32_t M, int32_t F) {
    for (int32_t m = 0; m < M; m++) {
        const float *g = gu + (size_t)m * 2 * F, *u = g + F;
        float *o = out + (size_t)m * F;
        for (int32_t f = 0; f < F; f++) o[f] = g[f] / (1.0f + expf(-g[f])) * u[f];
    }
}

void pb_rope_ref(float *qkv, int32_t stride, const int32_t *positions, int32_t T,
                 int32_t n_q_heads, int32_t n_k_heads, int32_t head_size, float theta) {
    int32_t half = head_size / 2;
    for (int32_t t = 0; t < T; t++) {
        float *row = qkv + (size_t)t * stride;
        for (int32_t hh = 0; hh < n_q_heads + n_k_heads; hh++) {
            float *v = row + (size_t)hh * head_size;
            for (int32_t j = 0; j < half; j++) {
                float inv_freq = powf(theta, -2.0f * (float)j / (float)head_size);
                float ang = (float)positions[t] * inv_freq;
                float c = cosf(ang), s = sinf(ang);
                float a = v[j], b = v[j + half];
                v[j] = a * c - b * s;
                v[j + half] = b * c + a * s;
            }
        }
    }
}

void pb_embed_ref(float *PB_RESTRICT out, const float *wte, const int32_t *tokens,
                  const float *wpe, const int32_t *positions, int32_t pos_offset, int32_t T,
                  int32_t h) {
    for (int32_t t = 0; t < T; t++) {
        const float *e = wte + (size_t)tokens[t] * h;
        float *o = out + (size_t)t * h;
        if (wpe) {
            const float *p = wpe + (size_t)(positions[t] + pos_offset) * h;
            for (int32_t i = 0; i < h; i++) o[i] = e[i] + p[i];
        } else {
            memcpy(o, e, (size_t)h * sizeof(float));
        }
    }
}

void pb_add_ref(float *PB_RESTRICT x, const float *PB_RESTRICT y, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] += y[i];
}

void pb_gather_rows_ref(float *PB_RESTRICT out, const float *PB_RESTRICT in, const int32_t *rows,
                        int32_t n_rows, int32_t h) {
    for (int32_t i = 0; i < n_rows; i++)
        memcpy(out + (size_t)i * h, in + (size_t)rows[i] * h, (size_t)h * sizeof(float));
}

/* ---- weights ---- */

void pb_weight_init_ref(float *dst, int32_t rows, int32_t cols, uint64_t seed, uint64_t tensor,
                        int64_t row0, int64_t col0, int64_t full_cols, float scale) {
    for (int32_t r = 0; r < rows; r++)
        for (int32_t c = 0; c < cols; c++) {
            uint64_t i = (uint64_t)((row0 + r) * full_cols + col0 + c);
            dst[(size_t)r * cols + c] = scale * (2.0f * pb_hash_uniform(seed, tensor, i) - 1.0f);
        }
}

void pb_fill_ref(float *dst, int64_t n, float v) {
    for (int64_t i = 0; i < n; i++) dst[i] = v;
}

/* ---- next-token candidates ---- */

/* Insert (val, id) into the descending top list of length *len (capacity cap):
 * larger val first, equal val -> lower id first. */
static void top_insert_(float *vals, int32_t *ids, int32_t *len, int32_t cap, float v, int32_t id) {
    int32_t n = *len;
    if (n == cap && !(v > vals[n - 1] || (v == vals[n - 1] && id < ids[n - 1]))) return;
    int32_t pos = n < cap ? n : cap - 1;
    while (pos > 0 && (v > vals[pos - 1] || (v == vals[pos - 1] && id < ids[pos - 1]))) {
        vals[pos] = vals[pos - 1];
        ids[pos] = ids[pos - 1];
        pos--;
    }
    vals[pos] = v;
    ids[pos] = id;
    if (n < cap) *len = n + 1;
}

typedef struct { float p; int32_t id; } prob_id_;
static int cmp_prob_desc_(const void *a, const void *b) {
    const prob_id_ *x = a, *y = b;
    if (x->p > y->p) return -1;
    if (x->p < y->p) return 1;
    return (x->id > y->id) - (x->id < y->id);
}

pb_status pb_candidates_ref(const float *logits, int32_t S, int32_t V, int32_t n_top,
                            const pb_sample_params *sp, const uint64_t *keys,
                            int32_t *tokens, float *logprobs, int32_t *n_out) {
    if (!logits || S < 0 || V <= 0 || n_top < 1 || n_top > PB_LAYERS_MAX_TOP || !sp ||
        !tokens || !logprobs || !n_out)
        return PB_ERR_INVALID;
    int greedy = !(sp->temperature > 0.0f);
    if (!greedy && (!keys || !(sp->top_p > 0.0f) || sp->top_p > 1.0f)) return PB_ERR_INVALID;
    float *p = greedy ? NULL : pb_xmalloc((size_t)V * sizeof(float));
    prob_id_ *order = greedy || sp->top_p >= 1.0f ? NULL : pb_xmalloc((size_t)V * sizeof(prob_id_));
    for (int32_t r = 0; r < S; r++) {
        const float *z = logits + (size_t)r * V;
        float inv_t = greedy ? 1.0f : 1.0f / sp->temperature;
        float m = -INFINITY;
        for (int32_t i = 0; i < V; i++) m = fmaxf(m, z[i] * inv_t);
        double sum = 0.0;
        for (int32_t i = 0; i < V; i++) sum += exp((double)(z[i] * inv_t - m));
        float lse = m + (float)log(sum);
        float vals[PB_LAYERS_MAX_TOP];
        int32_t ids[PB_LAYERS_MAX_TOP], len = 0;
        if (greedy) {
            for (int32_t i = 0; i < V; i++) top_insert_(vals, ids, &len, n_top, z[i], i);
        } else {
            float pcut = 0.0f;
            for (int32_t i = 0; i < V; i++) p[i] = expf(z[i] * inv_t - lse);
            if (order) {
                for (int32_t i = 0; i < V; i++) { order[i].p = p[i]; order[i].id = i; }
                qsort(order, (size_t)V, sizeof(prob_id_), cmp_prob_desc_);
                double cum = 0.0;
                for (int32_t k = 0; k < V; k++) {
                    cum += order[k].p;
                    pcut = order[k].p;
                    if (cum >= sp->top_p) break;
                }
            }
            for (int32_t i = 0; i < V; i++) {
                if (p[i] < pcut) continue;
                float u = pb_hash_uniform(keys[r], 0, (uint64_t)i);
                float g = -logf(-logf(u));
                top_insert_(vals, ids, &len, n_top, z[i] * inv_t + g, i);
            }
        }
        for (int32_t k = 0; k < len; k++) {
            tokens[(size_t)r * n_top + k] = ids[k];
            logprobs[(size_t)r * n_top + k] = z[ids[k]] * inv_t - lse;
        }
        for (int32_t k = len; k < n_top; k++) {
            tokens[(size_t)r * n_top + k] = -1;
            logprobs[(size_t)r * n_top + k] = -INFINITY;
        }
        n_out[r] = len;
    }
    free(p);
    free(order);
    return PB_OK;
}
