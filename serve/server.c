/* server.c -- the OpenAI-compatible HTTP server (see server.h).
 *
 * One mutex guards every request context and the histograms.  libmicrohttpd's
 * polling thread parses requests and writes answers; the online loop's thread turns
 * events into text (pb_server_event) and resumes the suspended connections; the
 * watchdog thread notices clients that went away while suspended. */
#include "server.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { K_NONE, K_COMPLETIONS, K_CHAT };

typedef struct rq {
    struct pb_server *srv;
    struct MHD_Connection *c;
    struct rq *prev, *next;     /* the open requests */
    pb_sbuf body;
    bool too_big;
    int kind;
    bool stream, include_usage, token_ids, beam;
    int32_t n_choices, n_seqs, max_tokens, prompt_len;
    char id[48];
    long created;
    int64_t oid;
    bool submitted, terminal, conn_done, suspended, abort_sent, chat_started;
    int refs;                   /* the connection's, and the submission's until terminal */
    pb_sbuf out;                /* streamed bytes not yet written */
    size_t out_pos;
    pb_sbuf *text;              /* per choice (non-streamed) */
    pb_sbuf *pend;              /* per choice: bytes of a UTF-8 character not complete yet */
    json_t **ids;               /* per choice, when token_ids asked */
    int32_t completion_tokens;
} rq;

#define N_TTFT 16
#define N_TPOT 13
#define N_E2E 10
static const double TTFT_B[N_TTFT] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                      0.25,  0.5,   0.75, 1.0,  2.5,  5.0,  7.5,  10.0};
static const double TPOT_B[N_TPOT] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5};
static const double E2E_B[N_E2E] = {1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0};

typedef struct {
    int64_t count[17];          /* per bucket (not cumulative), + the last: over all */
    double sum;
    int64_t n;
} hist;

struct pb_server {
    pb_server_params p;
    pb_online *online;
    struct MHD_Daemon *d;
    pthread_mutex_t mu;
    rq *open;
    int n_open;
    bool quiesced;
    hist ttft, tpot, e2e;
    int64_t n_success;
    pthread_t watchdog;
    bool watching, stop_watch;
    int64_t next_id;
};

/* ---- helpers ---- */

static void hist_add(hist *h, const double *b, int nb, double v) {
    int i = 0;
    while (i < nb && v > b[i]) i++;
    h->count[i]++;
    h->sum += v;
    h->n++;
}

static void hist_print(pb_sbuf *o, const char *name, const char *model, const hist *h, const double *b, int nb) {
    pb_sbuf_printf(o, "# TYPE %s histogram\n", name);
    int64_t cum = 0;
    for (int i = 0; i < nb; i++) {
        cum += h->count[i];
        pb_sbuf_printf(o, "%s_bucket{le=\"%g\",model_name=\"%s\"} %lld\n", name, b[i], model, (long long)cum);
    }
    pb_sbuf_printf(o, "%s_bucket{le=\"+Inf\",model_name=\"%s\"} %lld\n", name, model, (long long)h->n);
    pb_sbuf_printf(o, "%s_count{model_name=\"%s\"} %lld\n", name, model, (long long)h->n);
    pb_sbuf_printf(o, "%s_sum{model_name=\"%s\"} %.9g\n", name, model, h->sum);
}

static void buf_add(pb_sbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = PB_MAX(b->len + n + 1, 2 * b->cap);
        b->s = pb_xrealloc(b->s, b->cap);
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

static void text_of(const pb_server *s, const int32_t *ids, int32_t n, pb_sbuf *out) {
    if (s->p.tok) {
        pb_tok_decode(s->p.tok, ids, n, out);
        return;
    }
    for (int32_t i = 0; i < n; i++) pb_sbuf_printf(out, " <%d>", ids[i]);
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, const char *type, const char *body,
                              size_t n) {
    struct MHD_Response *r = MHD_create_response_from_buffer(n, (void *)body, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", type);
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result answer_json(struct MHD_Connection *c, unsigned status, json_t *j) {
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    enum MHD_Result ok = answer(c, status, "application/json", s, strlen(s));
    free(s);
    return ok;
}

static json_t *error_json(unsigned status, const char *param, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static json_t *error_json(unsigned status, const char *param, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *type = status == 404 ? "NotFoundError" : status == 401 ? "AuthenticationError"
                     : status == 429 ? "RateLimitError" : status == 503 ? "ServiceUnavailableError"
                     : status == 413 ? "RequestTooLargeError" : status >= 500 ? "InternalServerError"
                                                                           : "BadRequestError";
    return json_pack("{s:{s:s,s:s,s:s?,s:i}}", "error", "message", msg, "type", type, "param", param, "code",
                     (int)status);
}

static void rq_free(rq *r) {
    free(r->body.s);
    free(r->out.s);
    for (int32_t i = 0; r->text && i < r->n_choices; i++) free(r->text[i].s);
    free(r->text);
    for (int32_t i = 0; r->pend && i < r->n_choices; i++) free(r->pend[i].s);
    free(r->pend);
    for (int32_t i = 0; r->ids && i < r->n_choices; i++) json_decref(r->ids[i]);
    free(r->ids);
    free(r);
}

/* Drop one reference (under mu): the last frees r. */
static void rq_unref(pb_server *s, rq *r) {
    if (--r->refs > 0) return;
    if (r->prev) r->prev->next = r->next;
    else if (s->open == r) s->open = r->next;
    if (r->next) r->next->prev = r->prev;
    s->n_open--;
    rq_free(r);
}

/* ---- streamed chunks ---- */

static void sse(rq *r, json_t *j) {
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    buf_add(&r->out, "data: ", 6);
    buf_add(&r->out, s, strlen(s));
    buf_add(&r->out, "\n\n", 2);
    free(s);
}

static json_t *usage_json(const rq *r) {
    return json_pack("{s:i,s:i,s:i}", "prompt_tokens", r->prompt_len, "total_tokens",
                     r->prompt_len + r->completion_tokens, "completion_tokens", r->completion_tokens);
}

static json_t *chunk_head(const pb_server *s, const rq *r) {
    return json_pack("{s:s,s:s,s:i,s:s}", "id", r->id, "object",
                     r->kind == K_CHAT ? "chat.completion.chunk" : "text_completion", "created", (json_int_t)r->created,
                     "model", s->p.model);
}

static void stream_choice(const pb_server *s, rq *r, int32_t i, const char *text, size_t n, const char *finish,
                          const int32_t *ids, int32_t n_ids) {
    json_t *j = chunk_head(s, r), *ch;
    if (r->kind == K_CHAT) {
        json_t *delta = json_object();
        if (!r->chat_started) json_object_set_new(delta, "role", json_string("assistant"));
        json_object_set_new(delta, "content", json_stringn(text, n));
        ch = json_pack("{s:i,s:o,s:n,s:s?}", "index", i, "delta", delta, "logprobs", "finish_reason", finish);
    } else {
        ch = json_pack("{s:i,s:s%,s:n,s:s?}", "index", i, "text", text, n, "logprobs", "finish_reason", finish);
    }
    if (r->token_ids) {
        json_t *a = json_array();
        for (int32_t k = 0; k < n_ids; k++) json_array_append_new(a, json_integer(ids[k]));
        json_object_set_new(ch, "token_ids", a);
    }
    json_object_set_new(j, "choices", json_pack("[o]", ch));
    if (r->include_usage) json_object_set_new(j, "usage", json_null());
    sse(r, j);
}

/* ---- answers at the end ---- */

static json_t *final_json(const pb_server *s, rq *r) {
    json_t *choices = json_array();
    for (int32_t i = 0; i < r->n_choices; i++) {
        const char *t = r->text[i].s ? r->text[i].s : "";
        json_t *ch;
        if (r->kind == K_CHAT)
            ch = json_pack("{s:i,s:{s:s,s:s%},s:n,s:s,s:n}", "index", i, "message", "role", "assistant", "content", t,
                           r->text[i].len, "logprobs", "finish_reason", "length", "stop_reason");
        else
            ch = json_pack("{s:i,s:s%,s:n,s:s,s:n}", "index", i, "text", t, r->text[i].len, "logprobs",
                           "finish_reason", "length", "stop_reason");
        if (r->token_ids) json_object_set(ch, "token_ids", r->ids[i]);
        json_array_append_new(choices, ch);
    }
    return json_pack("{s:s,s:s,s:i,s:s,s:o,s:o}", "id", r->id, "object",
                     r->kind == K_CHAT ? "chat.completion" : "text_completion", "created", (json_int_t)r->created,
                     "model", s->p.model, "choices", choices, "usage", usage_json(r));
}

/* Length of the UTF-8 character at p[0 .. n): 1-4 when complete and valid, 0 when
   p may begin one that is cut short, -1 when invalid. */
static int utf8_char(const unsigned char *p, size_t n) {
    int len = p[0] < 0x80 ? 1 : (p[0] & 0xE0) == 0xC0 ? 2 : (p[0] & 0xF0) == 0xE0 ? 3 : (p[0] & 0xF8) == 0xF0 ? 4 : -1;
    if (len < 0 || (len == 2 && p[0] < 0xC2) || (len == 4 && p[0] > 0xF4)) return -1;
    for (int k = 1; k < len; k++) {
        if ((size_t)k >= n) return 0;
        if ((p[k] & 0xC0) != 0x80) return -1;
    }
    if (len == 3 && ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] >= 0xA0))) return -1;
    if (len == 4 && ((p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] >= 0x90))) return -1;
    return len;
}

/* The complete characters at the head of pend moved to out (an invalid byte as U+FFFD);
   a character cut short at its end stays for the next token, unless flush. */
static void utf8_take(pb_sbuf *pend, pb_sbuf *out, bool flush) {
    size_t i = 0;
    const unsigned char *p = (const unsigned char *)pend->s;
    while (i < pend->len) {
        int l = utf8_char(p + i, pend->len - i);
        if (l == 0 && !flush) break;
        if (l > 0) {
            buf_add(out, pend->s + i, (size_t)l);
            i += (size_t)l;
        } else {
            buf_add(out, "\xEF\xBF\xBD", 3);
            i++;
        }
    }
    memmove(pend->s, pend->s + i, pend->len - i);
    pend->len -= i;
    if (pend->s) pend->s[pend->len] = 0;
}

/* Tokens for choice i (of the returned ones); their text as whole UTF-8 characters, as
   vLLM's incremental detokenizer holds back a character cut between tokens. */
static void add_tokens(pb_server *s, rq *r, int32_t i, const int32_t *ids, int32_t n, bool last) {
    r->completion_tokens += n;
    pb_sbuf raw = {0}, t = {0};
    text_of(s, ids, n, &raw);
    if (raw.len) buf_add(&r->pend[i], raw.s, raw.len);
    free(raw.s);
    utf8_take(&r->pend[i], &t, last);
    if (r->stream) {
        stream_choice(s, r, i, t.s ? t.s : "", t.len, last ? "length" : NULL, ids, n);
        if (i == r->n_choices - 1) r->chat_started = true;
    } else {
        if (t.len) buf_add(&r->text[i], t.s, t.len);
        for (int32_t k = 0; r->token_ids && k < n; k++) json_array_append_new(r->ids[i], json_integer(ids[k]));
    }
    free(t.s);
}

void pb_server_event(void *user, const pb_online_event *ev) {
    pb_server *s = user;
    rq *r = ev->tag;
    pthread_mutex_lock(&s->mu);
    switch (ev->what) {
    case PB_ONLINE_TOKENS:
        for (int32_t i = 0; i < r->n_choices && i < ev->n_seqs; i++)
            add_tokens(s, r, i, ev->tokens + (int64_t)i * ev->n_new, ev->n_new, ev->n_generated >= r->max_tokens);
        break;
    case PB_ONLINE_DONE:
        for (int32_t i = 0; i < r->n_choices && i < ev->n_seqs; i++)   /* beam search: the final beams */
            add_tokens(s, r, i, ev->tokens + (int64_t)i * ev->n_new, ev->n_new, true);
        s->n_success++;
        if (ev->first_token_s >= 0) {
            hist_add(&s->ttft, TTFT_B, N_TTFT, ev->first_token_s - ev->arrival_s);
            if (ev->n_generated > 1)
                hist_add(&s->tpot, TPOT_B, N_TPOT, (ev->now_s - ev->first_token_s) / (ev->n_generated - 1));
        }
        hist_add(&s->e2e, E2E_B, N_E2E, ev->now_s - ev->arrival_s);
        break;
    default: break;
    }
    if (ev->what != PB_ONLINE_TOKENS) {
        r->terminal = true;
        if (r->stream) {
            if (ev->what == PB_ONLINE_REJECTED)
                sse(r, error_json(400, NULL, "the request can never fit the KV cache"));
            if (ev->what == PB_ONLINE_DONE && r->include_usage) {
                json_t *j = chunk_head(s, r);
                json_object_set_new(j, "choices", json_array());
                json_object_set_new(j, "usage", usage_json(r));
                sse(r, j);
            }
            if (ev->what != PB_ONLINE_ABORTED) buf_add(&r->out, "data: [DONE]\n\n", 14);
        } else if (!r->conn_done) {
            json_t *j = ev->what == PB_ONLINE_DONE       ? final_json(s, r)
                      : ev->what == PB_ONLINE_REJECTED ? error_json(400, NULL, "the request can never fit the KV cache")
                                                       : error_json(503, NULL, "the server stopped before the answer");
            unsigned st = ev->what == PB_ONLINE_DONE ? 200 : ev->what == PB_ONLINE_REJECTED ? 400 : 503;
            answer_json(r->c, st, j);
        }
    }
    if (r->suspended && !r->conn_done && (r->stream || r->terminal)) {   /* an answer queued, or bytes to send */
        r->suspended = false;
        MHD_resume_connection(r->c);
    }
    if (ev->what != PB_ONLINE_TOKENS) rq_unref(s, r);
    pthread_mutex_unlock(&s->mu);
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    rq *r = cls;
    pb_server *s = r->srv;
    ssize_t n;
    pthread_mutex_lock(&s->mu);
    if (r->out_pos < r->out.len) {
        size_t k = PB_MIN(max, r->out.len - r->out_pos);
        memcpy(buf, r->out.s + r->out_pos, k);
        r->out_pos += k;
        if (r->out_pos == r->out.len) r->out.len = r->out_pos = 0;
        n = (ssize_t)k;
    } else if (r->terminal) {
        n = MHD_CONTENT_READER_END_OF_STREAM;
    } else {
        r->suspended = true;
        MHD_suspend_connection(r->c);
        n = 0;
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* ---- parsing a request ---- */

typedef struct {
    unsigned status;
    json_t *err;
} fail_t;

#define FAIL(code, param, ...) do { f->status = (code); f->err = error_json((code), (param), __VA_ARGS__); return false; } while (0)

static bool int_field(json_t *o, const char *k, int64_t lo, int64_t hi, int64_t *v, fail_t *f) {
    json_t *x = json_object_get(o, k);
    if (!x || json_is_null(x)) return true;
    if (!json_is_integer(x)) FAIL(400, k, "'%s' must be an integer", k);
    int64_t y = json_integer_value(x);
    if (y < lo || y > hi) FAIL(400, k, "'%s' must be in [%lld, %lld], got %lld", k, (long long)lo, (long long)hi, (long long)y);
    *v = y;
    return true;
}

static bool bool_field(json_t *o, const char *k, bool *v, fail_t *f) {
    json_t *x = json_object_get(o, k);
    if (!x || json_is_null(x)) return true;
    if (!json_is_boolean(x)) FAIL(400, k, "'%s' must be a boolean", k);
    *v = json_is_true(x);
    return true;
}

/* The prompt's token count: token ids counted exactly; text through the tokenizer, or
   one token per 4 bytes (rounded up) without one. */
static int32_t text_tokens(const pb_server *s, const char *t, size_t n) {
    if (!s->p.tok) return (int32_t)PB_MIN((n + 3) / 4, (size_t)INT32_MAX);
    int32_t *ids = NULL, n_ids = 0, cap = 0;
    pb_tok_encode(s->p.tok, t, n, &ids, &n_ids, &cap);
    free(ids);
    return n_ids;
}

static bool prompt_of(const pb_server *s, json_t *j, int kind, int64_t *len, fail_t *f) {
    if (kind == K_COMPLETIONS) {
        json_t *p = json_object_get(j, "prompt");
        if (json_is_array(p) && json_array_size(p) == 1 && json_is_string(json_array_get(p, 0)))
            p = json_array_get(p, 0);
        if (json_is_string(p)) {
            *len = text_tokens(s, json_string_value(p), json_string_length(p));
        } else if (json_is_array(p) && json_array_size(p) > 0) {
            size_t i;
            json_t *x;
            json_array_foreach(p, i, x) {
                if (!json_is_integer(x) || json_integer_value(x) < 0)
                    FAIL(400, "prompt", "'prompt' must be a string, one string in a list, or a list of token ids "
                                        "(one prompt per request)");
            }
            *len = (int64_t)json_array_size(p);
        } else {
            FAIL(400, "prompt", "'prompt' must be a string, one string in a list, or a non-empty list of token ids");
        }
        return true;
    }
    json_t *m = json_object_get(j, "messages");
    if (!json_is_array(m) || json_array_size(m) == 0) FAIL(400, "messages", "'messages' must be a non-empty list");
    pb_sbuf t = {0};   /* "role: content\n" per message, then "assistant:" */
    size_t i;
    json_t *x;
    json_array_foreach(m, i, x) {
        json_t *role = json_object_get(x, "role"), *c = json_object_get(x, "content");
        if (!json_is_string(role)) {
            free(t.s);
            FAIL(400, "messages", "messages[%zu].role must be a string", i);
        }
        pb_sbuf_printf(&t, "%s: ", json_string_value(role));
        if (json_is_string(c)) {
            buf_add(&t, json_string_value(c), json_string_length(c));
        } else if (json_is_array(c)) {
            size_t k;
            json_t *part;
            json_array_foreach(c, k, part) {
                json_t *tx = json_object_get(part, "text");
                if (json_is_string(tx)) buf_add(&t, json_string_value(tx), json_string_length(tx));
            }
        } else if (!json_is_null(c)) {
            free(t.s);
            FAIL(400, "messages", "messages[%zu].content must be a string or a list of parts", i);
        }
        buf_add(&t, "\n", 1);
    }
    buf_add(&t, "assistant:", 10);
    *len = text_tokens(s, t.s, t.len);
    free(t.s);
    return true;
}

/* Parse and check a completion request into r; on failure f says the answer. */
static bool parse(pb_server *s, rq *r, fail_t *f) {
    json_error_t je;
    json_t *j = json_loadb(r->body.s ? r->body.s : "", r->body.len, 0, &je);
    if (!j) FAIL(400, NULL, "invalid JSON at line %d column %d: %s", je.line, je.column, je.text);
    bool ok = false;
    if (!json_is_object(j)) {
        f->status = 400;
        f->err = error_json(400, NULL, "the body must be a JSON object");
        goto out;
    }
    json_t *model = json_object_get(j, "model");
    if (model && !json_is_null(model) && (!json_is_string(model) || strcmp(json_string_value(model), s->p.model))) {
        f->status = 404;
        f->err = error_json(404, "model", "The model `%s` does not exist.", json_is_string(model) ? json_string_value(model) : "?");
        goto out;
    }
    int64_t plen = 0;
    if (!prompt_of(s, j, r->kind, &plen, f)) goto out;
    int64_t max_tokens = r->kind == K_CHAT ? s->p.max_model_len - plen : 16, n = 1, best_of = 0, min_tokens = 0;
    bool beam = false, ignore_eos = false, stream = false;
    if (!int_field(j, "max_tokens", 1, INT32_MAX, &max_tokens, f) ||
        (r->kind == K_CHAT && !int_field(j, "max_completion_tokens", 1, INT32_MAX, &max_tokens, f)) ||
        !int_field(j, "n", 1, s->p.max_beam, &n, f) || !int_field(j, "best_of", 1, s->p.max_beam, &best_of, f) ||
        !int_field(j, "min_tokens", 0, INT32_MAX, &min_tokens, f) || !bool_field(j, "use_beam_search", &beam, f) ||
        !bool_field(j, "ignore_eos", &ignore_eos, f) || !bool_field(j, "stream", &stream, f) ||
        !bool_field(j, "return_token_ids", &r->token_ids, f))
        goto out;
    json_t *stop = json_object_get(j, "stop");
    if (stop && !json_is_null(stop) && !(json_is_array(stop) && json_array_size(stop) == 0)) {
        f->status = 400;
        f->err = error_json(400, "stop", "stop strings are not supported: generation stops by length (max_tokens)");
        goto out;
    }
    if (min_tokens > max_tokens) {
        f->status = 400;
        f->err = error_json(400, "min_tokens", "min_tokens (%lld) must be at most max_tokens (%lld)", (long long)min_tokens,
                            (long long)max_tokens);
        goto out;
    }
    if (!beam && best_of > n) {
        f->status = 400;
        f->err = error_json(400, "best_of", "best_of > n needs use_beam_search: the engine returns every sample it draws");
        goto out;
    }
    if (plen + max_tokens > s->p.max_model_len || max_tokens < 1) {
        f->status = 400;
        f->err = error_json(400, "max_tokens", "This model's maximum context length is %d tokens. However, you requested "
                            "%lld tokens (%lld in the prompt, %lld in the completion). Please reduce the length of the "
                            "prompt or completion.", s->p.max_model_len, (long long)(plen + max_tokens), (long long)plen,
                            (long long)max_tokens);
        goto out;
    }
    json_t *so = json_object_get(j, "stream_options");
    if (so && !json_is_null(so)) {
        if (!stream || !json_is_object(so)) {
            f->status = 400;
            f->err = error_json(400, "stream_options", "stream_options needs stream: true and must be an object");
            goto out;
        }
        if (!bool_field(so, "include_usage", &r->include_usage, f)) goto out;
    }
    int64_t width = beam ? PB_MAX(n, best_of) : n;
    if (beam && width < 2) width = 2;   /* vLLM's beam search keeps at least 2 beams */
    (void)ignore_eos;                   /* the engine always generates max_tokens */
    r->stream = stream;
    r->prompt_len = (int32_t)plen;
    r->max_tokens = (int32_t)max_tokens;
    r->beam = beam;
    r->n_choices = (int32_t)n;
    r->n_seqs = beam ? (int32_t)width : (int32_t)n;
    r->created = (long)time(NULL);
    ok = true;
out:
    json_decref(j);
    return ok;
}

/* ---- routes ---- */

static enum MHD_Result metrics_text(pb_server *s, struct MHD_Connection *c) {
    pb_online_stats st;
    pb_online_stats_get(s->online, &st);
    const char *m = s->p.model;
    pb_sbuf o = {0};
    pthread_mutex_lock(&s->mu);
    pb_sbuf_printf(&o, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"%s\"} %d\n", m,
                   st.load.n_running);
    pb_sbuf_printf(&o, "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"%s\"} %d\n", m,
                   st.load.n_waiting);
    pb_sbuf_printf(&o, "# TYPE vllm:num_requests_swapped gauge\nvllm:num_requests_swapped{model_name=\"%s\"} %d\n", m,
                   st.load.n_swapped);
    pb_sbuf_printf(&o, "# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc{model_name=\"%s\"} %.6g\n", m,
                   st.kv_usage);
    pb_sbuf_printf(&o, "# TYPE vllm:num_preemptions_total counter\nvllm:num_preemptions_total{model_name=\"%s\"} %lld\n",
                   m, (long long)st.load.n_preempted);
    pb_sbuf_printf(&o, "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{model_name=\"%s\"} %lld\n", m,
                   (long long)st.prompt_tokens);
    pb_sbuf_printf(&o, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=\"%s\"} %lld\n",
                   m, (long long)st.generation_tokens);
    pb_sbuf_printf(&o, "# TYPE vllm:request_success_total counter\nvllm:request_success_total{finished_reason=\"length\",model_name=\"%s\"} %lld\n",
                   m, (long long)s->n_success);
    hist_print(&o, "vllm:time_to_first_token_seconds", m, &s->ttft, TTFT_B, N_TTFT);
    hist_print(&o, "vllm:time_per_output_token_seconds", m, &s->tpot, TPOT_B, N_TPOT);
    hist_print(&o, "vllm:e2e_request_latency_seconds", m, &s->e2e, E2E_B, N_E2E);
    pb_sbuf_printf(&o, "# TYPE pagedbench:engine_lag_seconds gauge\npagedbench:engine_lag_seconds{model_name=\"%s\"} %.6g\n",
                   m, st.lag_s);
    pthread_mutex_unlock(&s->mu);
    enum MHD_Result ok = answer(c, 200, "text/plain; version=0.0.4", o.s, o.len);
    free(o.s);
    return ok;
}

static enum MHD_Result completion(pb_server *s, rq *r) {
    fail_t f = {0, NULL};
    if (r->too_big) return answer_json(r->c, 413, error_json(413, NULL, "the body is over %d bytes", PB_SERVER_MAX_BODY));
    if (!parse(s, r, &f)) return answer_json(r->c, f.status, f.err);
    pb_request q = pb_request_make(0, r->prompt_len, r->max_tokens);
    q.n = (int16_t)r->n_seqs;
    q.beam_width = (int16_t)(r->beam ? r->n_seqs : 1);   /* beam search: n == beam_width (trace.h) */
    pthread_mutex_lock(&s->mu);
    snprintf(r->id, sizeof r->id, "%s-%lld", r->kind == K_CHAT ? "chatcmpl" : "cmpl", (long long)s->next_id++);
    r->text = pb_xcalloc((size_t)r->n_choices, sizeof *r->text);
    r->pend = pb_xcalloc((size_t)r->n_choices, sizeof *r->pend);
    if (r->token_ids) {
        r->ids = pb_xcalloc((size_t)r->n_choices, sizeof *r->ids);
        for (int32_t i = 0; i < r->n_choices; i++) r->ids[i] = json_array();
    }
    pb_status st = s->quiesced ? PB_ERR_INVALID : pb_online_submit(s->online, &q, r, &r->oid);
    if (st != PB_OK) {
        pthread_mutex_unlock(&s->mu);
        unsigned code = st == PB_ERR_NO_SPACE ? 429 : 503;
        return answer_json(r->c, code, error_json(code, NULL, st == PB_ERR_NO_SPACE ? "too many requests are waiting"
                                                                                 : "the server is shutting down"));
    }
    r->submitted = true;
    r->refs++;
    enum MHD_Result ok = MHD_YES;
    if (r->stream) {
        struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_reader, r, NULL);
        MHD_add_response_header(resp, "Content-Type", "text/event-stream");
        MHD_add_response_header(resp, "Cache-Control", "no-cache");
        ok = MHD_queue_response(r->c, 200, resp);
        MHD_destroy_response(resp);
    } else if (!r->terminal) {
        r->suspended = true;
        MHD_suspend_connection(r->c);
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

static bool authorized(const pb_server *s, struct MHD_Connection *c) {
    if (!s->p.api_key) return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    return h && !strncmp(h, "Bearer ", 7) && !strcmp(h + 7, s->p.api_key);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    pb_server *s = cls;
    rq *r = *con_cls;
    if (!r) {
        r = pb_xcalloc(1, sizeof *r);
        r->srv = s;
        r->c = c;
        r->refs = 1;
        pthread_mutex_lock(&s->mu);
        r->next = s->open;
        if (s->open) s->open->prev = r;
        s->open = r;
        s->n_open++;
        pthread_mutex_unlock(&s->mu);
        *con_cls = r;
        return MHD_YES;
    }
    if (r->kind != K_NONE) return MHD_YES;   /* called again after a resume: the answer is queued */
    if (*upload_size) {
        if (r->body.len + *upload_size > PB_SERVER_MAX_BODY) r->too_big = true;
        else buf_add(&r->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    if (get && !strcmp(url, "/health")) return answer(c, s->quiesced ? 503 : 200, "text/plain", "", 0);
    if (get && !strcmp(url, "/metrics")) return metrics_text(s, c);
    if (!strncmp(url, "/v1/", 4) && !authorized(s, c)) return answer_json(c, 401, error_json(401, NULL, "invalid API key"));
    if (get && !strcmp(url, "/v1/models"))
        return answer_json(c, 200, json_pack("{s:s,s:[{s:s,s:s,s:i,s:s,s:i}]}", "object", "list", "data", "id", s->p.model,
                                             "object", "model", "created", (json_int_t)time(NULL), "owned_by",
                                             "pagedbench", "max_model_len", s->p.max_model_len));
    if (post && !strcmp(url, "/v1/completions")) r->kind = K_COMPLETIONS;
    else if (post && !strcmp(url, "/v1/chat/completions")) r->kind = K_CHAT;
    else return answer_json(c, 404, error_json(404, NULL, "no route %s %s", method, url));
    if (s->quiesced) return answer_json(c, 503, error_json(503, NULL, "the server is shutting down"));
    return completion(s, r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)c;
    (void)toe;
    pb_server *s = cls;
    rq *r = *con_cls;
    if (!r) return;
    *con_cls = NULL;
    pthread_mutex_lock(&s->mu);
    r->conn_done = true;
    if (r->submitted && !r->terminal && !r->abort_sent) {
        r->abort_sent = true;
        pb_online_abort(s->online, r->oid);
    }
    rq_unref(s, r);
    pthread_mutex_unlock(&s->mu);
}

/* Every 20 ms: the suspended connections whose client hung up get their submission
   aborted (the ABORTED event resumes them; libmicrohttpd then closes them). */
static void *watch(void *arg) {
    pb_server *s = arg;
    for (;;) {
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&s->mu);
        if (s->stop_watch) {
            pthread_mutex_unlock(&s->mu);
            return NULL;
        }
        for (rq *r = s->open; r; r = r->next) {
            if (!r->suspended || !r->submitted || r->terminal || r->abort_sent || r->conn_done) continue;
            const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->c, MHD_CONNECTION_INFO_CONNECTION_FD);
            if (!ci) continue;
            struct pollfd p = {.fd = ci->connect_fd, .events = POLLIN};
            char b;
            if (poll(&p, 1, 0) > 0 && ((p.revents & (POLLHUP | POLLERR)) ||
                                       ((p.revents & POLLIN) && recv(p.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0))) {
                r->abort_sent = true;
                pb_online_abort(s->online, r->oid);
            }
        }
        pthread_mutex_unlock(&s->mu);
    }
}

/* ---- lifecycle ---- */

pb_server *pb_server_create(const pb_server_params *p) {
    pb_server *s = pb_xcalloc(1, sizeof *s);
    s->p = *p;
    pthread_mutex_init(&s->mu, NULL);
    return s;
}

pb_status pb_server_listen(pb_server *s, pb_online *online, char *err, size_t err_n) {
    s->online = online;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->p.port)};
    if (inet_pton(AF_INET, s->p.host, &a.sin_addr) != 1) {
        snprintf(err, err_n, "--host %s: not a numeric IPv4 address", s->p.host);
        return PB_ERR_INVALID;
    }
    s->d = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG,
                            (uint16_t)s->p.port, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, &a,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)s->p.max_connections, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60,
                            MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)4096, MHD_OPTION_END);
    if (!s->d) {
        snprintf(err, err_n, "cannot listen on %s:%d (in use, or not an address of this machine)", s->p.host, s->p.port);
        return PB_ERR_IO;
    }
    s->watching = pthread_create(&s->watchdog, NULL, watch, s) == 0;
    return PB_OK;
}

int pb_server_port(const pb_server *s) {
    const union MHD_DaemonInfo *i = s->d ? MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT) : NULL;
    return i ? i->port : s->p.port;
}

void pb_server_quiesce(pb_server *s) {
    pthread_mutex_lock(&s->mu);
    s->quiesced = true;
    pthread_mutex_unlock(&s->mu);
}

int pb_server_open_requests(pb_server *s) {
    pthread_mutex_lock(&s->mu);
    int n = 0;
    for (rq *r = s->open; r; r = r->next) n += !r->conn_done && r->submitted;
    pthread_mutex_unlock(&s->mu);
    return n;
}

void pb_server_destroy(pb_server *s) {
    if (!s) return;
    if (s->watching) {
        pthread_mutex_lock(&s->mu);
        s->stop_watch = true;
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->watchdog, NULL);
    }
    if (s->d) {
        pthread_mutex_lock(&s->mu);   /* every submission is terminal by now: none stays suspended */
        for (rq *r = s->open; r; r = r->next)
            if (r->suspended) {
                r->suspended = false;
                MHD_resume_connection(r->c);
            }
        pthread_mutex_unlock(&s->mu);
        MHD_stop_daemon(s->d);
    }
    while (s->open) {   /* contexts whose connection never completed */
        rq *r = s->open;
        s->open = r->next;
        rq_free(r);
    }
    pthread_mutex_destroy(&s->mu);
    free(s);
}
