/* cmd_loadgen.c -- `pagedbench loadgen`: replay a trace against any OpenAI-compatible
 * server on libcurl's multi interface, one streamed completion per row at its arrival,
 * and record what `run` records (engine/metrics.h: the per-request CSV, the summary). */
#include <curl/curl.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "metrics.h"
#include "pb.h"
#include "trace.h"
#include "trace_io.h"

static void usage(FILE *f) {
    fprintf(f,
"usage: pagedbench loadgen --url URL --trace T.csv [--model M] [--time-scale X]\n"
"                          [--requests OUT.csv] [--api-key K] [--max-model-len N]\n"
"\n"
"Replays a trace (pagedbench trace) against an OpenAI-compatible server: each row is one\n"
"streamed POST URL/v1/completions sent at arrival_s / X seconds after the start, its prompt\n"
"prompt_len token ids, max_tokens = output_len, n (parallel samples) or use_beam_search with\n"
"best_of = beam_width, ignore_eos; each chunk is timestamped as it comes.  Times are\n"
"recorded in trace seconds (wall seconds x X): with X = the --speedup of a `pagedbench serve`\n"
"of the same system, the numbers compare with `pagedbench run` of that trace.\n"
"\n"
"  --url URL          the server (http://127.0.0.1:8000)\n"
"  --trace T.csv      the requests (trace.h columns)\n"
"  --model M          the model name sent (default: the server's first in /v1/models)\n"
"  --time-scale X     trace seconds per wall second (1)\n"
"  --requests F       the per-request CSV, `run --requests`' columns (request_id, arrival_s,\n"
"                     first_token_s, finish_s, ..., ttft_ms, tpot_ms, e2e_s, ...)\n"
"  --api-key K        sent as `Authorization: Bearer K`\n"
"\n"
"Prints vLLM benchmark_serving's block (the same as `run`'s), the target and achieved\n"
"request rates, and a WARNING when the client fell behind its schedule (a request sent more\n"
"than 10 ms of wall time late): then the client, not the server, limits the load.\n"
"Exit status: 0 every request answered, 1 some failed, 2 usage error.\n");
}

typedef struct {
    int64_t id;
    char *body;
    struct curl_slist *hdr;
    pb_sbuf in;            /* SSE bytes not yet parsed */
    double sent, first, last;
    int64_t tokens, usage_tokens;
    long status;
    bool done;
} call;

typedef struct {
    double t0, scale;
    pb_metrics *m;
    double *last_tok;      /* trace time of each request's previous chunk */
} ctx_t;

static ctx_t *G;

static double wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One SSE event's data: a chunk with text counts as a token chunk at now. */
static void on_data(call *c, const char *d, size_t n, double now) {
    if (n == 6 && !memcmp(d, "[DONE]", 6)) return;
    json_t *j = json_loadb(d, n, 0, NULL);
    if (!j) return;
    json_t *ch = json_object_get(j, "choices"), *u = json_object_get(j, "usage");
    if (json_is_array(ch) && json_array_size(ch) > 0) {
        double t = (now - G->t0) * G->scale;
        if (c->tokens == 0) c->first = now;
        pb_metrics_token(G->m, G->last_tok[c->id], t);
        G->last_tok[c->id] = t;
        c->last = now;
        c->tokens++;
    }
    if (json_is_object(u)) c->usage_tokens = json_integer_value(json_object_get(u, "completion_tokens"));
    json_decref(j);
}

static size_t on_body(char *p, size_t sz, size_t nm, void *user) {
    call *c = user;
    size_t n = sz * nm;
    double now = wall();
    pb_sbuf_printf(&c->in, "%.*s", (int)n, p);
    char *s = c->in.s, *e;
    while ((e = strstr(s, "\n\n")) != NULL) {
        if (!strncmp(s, "data: ", 6)) on_data(c, s + 6, (size_t)(e - s - 6), now);
        s = e + 2;
    }
    size_t left = c->in.len - (size_t)(s - c->in.s);
    memmove(c->in.s, s, left);
    c->in.len = left;
    c->in.s[left] = 0;
    return n;
}

static char *request_body(const pb_request *r, const char *model) {
    json_t *ids = json_array();
    for (int32_t i = 0; i < r->prompt_len; i++) json_array_append_new(ids, json_integer(1 + (r->id + i) % 1000));
    json_t *j = json_pack("{s:s,s:o,s:i,s:b,s:b,s:{s:b}}", "model", model, "prompt", ids, "max_tokens", r->output_len,
                          "ignore_eos", 1, "stream", 1, "stream_options", "include_usage", 1);
    if (r->beam_width > 1) {
        json_object_set_new(j, "use_beam_search", json_true());
        json_object_set_new(j, "best_of", json_integer(r->beam_width));
        json_object_set_new(j, "n", json_integer(1));
    } else {
        json_object_set_new(j, "n", json_integer(r->n));
    }
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return s;
}

static size_t to_buf(char *p, size_t sz, size_t nm, void *user) {
    pb_sbuf_printf(user, "%.*s", (int)(sz * nm), p);
    return sz * nm;
}

/* The server's first model (GET URL/v1/models), or NULL. */
static char *first_model(const char *url, const char *key) {
    CURL *h = curl_easy_init();
    char u[2048];
    snprintf(u, sizeof u, "%s/v1/models", url);
    pb_sbuf b = {0};
    struct curl_slist *hdr = NULL;
    char auth[1024];
    if (key) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", key);
        hdr = curl_slist_append(hdr, auth);
    }
    curl_easy_setopt(h, CURLOPT_URL, u);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, to_buf);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
    CURLcode rc = curl_easy_perform(h);
    curl_easy_cleanup(h);
    curl_slist_free_all(hdr);
    char *name = NULL;
    json_t *j = rc == CURLE_OK && b.s ? json_loads(b.s, 0, NULL) : NULL;
    const char *id = json_string_value(json_object_get(json_array_get(json_object_get(j, "data"), 0), "id"));
    if (id) name = strdup(id);
    json_decref(j);
    free(b.s);
    return name;
}

int pb_cmd_loadgen(int argc, char **argv) {
    enum { O_URL = 256, O_TRACE, O_MODEL, O_SCALE, O_REQ, O_KEY, O_MAXLEN };
    static const struct option LONG[] = {
        {"url", required_argument, NULL, O_URL},          {"trace", required_argument, NULL, O_TRACE},
        {"model", required_argument, NULL, O_MODEL},      {"time-scale", required_argument, NULL, O_SCALE},
        {"requests", required_argument, NULL, O_REQ},     {"api-key", required_argument, NULL, O_KEY},
        {"max-model-len", required_argument, NULL, O_MAXLEN}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *url = NULL, *trace_path = NULL, *model_opt = NULL, *req_path = NULL, *key = NULL;
    double scale = 1;
    long max_len = 1 << 20;
    int ch;
    char *end;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":h", LONG, NULL)) != -1) {
        switch (ch) {
        case 'h': usage(stdout); return PB_EXIT_OK;
        case O_URL: url = optarg; break;
        case O_TRACE: trace_path = optarg; break;
        case O_MODEL: model_opt = optarg; break;
        case O_REQ: req_path = optarg; break;
        case O_KEY: key = optarg; break;
        case O_SCALE:
            scale = strtod(optarg, &end);
            if (*end || !(scale > 0) || !isfinite(scale)) {
                fprintf(stderr, "pagedbench loadgen: --time-scale %s: expected a number > 0\n", optarg);
                return PB_EXIT_USAGE;
            }
            break;
        case O_MAXLEN:
            max_len = strtol(optarg, &end, 10);
            if (*end || max_len < 1) {
                fprintf(stderr, "pagedbench loadgen: --max-model-len %s: expected >= 1\n", optarg);
                return PB_EXIT_USAGE;
            }
            break;
        default:
            fprintf(stderr, "pagedbench loadgen: bad option '%s' (see --help)\n", argv[optind - 1]);
            return PB_EXIT_USAGE;
        }
    }
    if (!url || !trace_path || optind != argc) {
        fprintf(stderr, "pagedbench loadgen: --url and --trace are needed (see --help)\n");
        return PB_EXIT_USAGE;
    }
    pb_trace t = {0};
    char err[1024];
    pb_status st = pb_trace_read_csv(trace_path, &t, err, sizeof err);
    if (st) {
        fprintf(stderr, "%s\n", err);
        return st == PB_ERR_IO ? PB_EXIT_RUNTIME : PB_EXIT_USAGE;
    }
    FILE *rf = NULL;
    if (req_path && !(rf = fopen(req_path, "w"))) {
        fprintf(stderr, "pagedbench loadgen: %s: cannot be written\n", req_path);
        pb_trace_free(&t);
        return PB_EXIT_RUNTIME;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char *model = model_opt ? strdup(model_opt) : first_model(url, key);
    if (!model) {
        fprintf(stderr, "pagedbench loadgen: %s/v1/models did not answer with a model (give --model)\n", url);
        if (rf) fclose(rf);
        pb_trace_free(&t);
        curl_global_cleanup();
        return PB_EXIT_RUNTIME;
    }
    pb_metrics *m = pb_metrics_create(false);
    pb_metrics_begin(m, &t, (int32_t)max_len);
    ctx_t cx = {.scale = scale, .m = m, .last_tok = pb_xcalloc((size_t)PB_MAX(t.n, 1), sizeof(double))};
    G = &cx;
    call *calls = pb_xcalloc((size_t)PB_MAX(t.n, 1), sizeof *calls);
    CURLM *mh = curl_multi_init();
    curl_multi_setopt(mh, CURLMOPT_MAX_TOTAL_CONNECTIONS, 0L);
    char u[2048], auth[1024];
    snprintf(u, sizeof u, "%s/v1/completions", url);
    if (key) snprintf(auth, sizeof auth, "Authorization: Bearer %s", key);
    double late_max = 0, late_sum = 0;
    int64_t next = 0, n_late = 0;
    int running = 0;
    cx.t0 = wall();
    while (next < t.n || running > 0) {
        double now = wall();
        while (next < t.n && cx.t0 + t.reqs[next].arrival_s / scale <= now) {
            call *c = &calls[next];
            c->id = next;
            cx.last_tok[next] = -1;
            c->body = request_body(&t.reqs[next], model);
            c->hdr = curl_slist_append(NULL, "Content-Type: application/json");
            if (key) c->hdr = curl_slist_append(c->hdr, auth);
            CURL *h = curl_easy_init();
            curl_easy_setopt(h, CURLOPT_URL, u);
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->body);
            curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->hdr);
            curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
            curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
            curl_easy_setopt(h, CURLOPT_PRIVATE, c);
            curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
            c->sent = wall();
            double late = c->sent - (cx.t0 + t.reqs[next].arrival_s / scale);
            late_max = PB_MAX(late_max, late);
            late_sum += late;
            n_late += late > 0.010;
            pb_req_metrics *rm = pb_metrics_req(m, next);
            rm->arrival_s = t.reqs[next].arrival_s;
            curl_multi_add_handle(mh, h);
            next++;
        }
        curl_multi_perform(mh, &running);
        CURLMsg *msg;
        int q;
        while ((msg = curl_multi_info_read(mh, &q)) != NULL) {
            if (msg->msg != CURLMSG_DONE) continue;
            call *c;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c);
            curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &c->status);
            c->done = true;
            pb_req_metrics *rm = pb_metrics_req(m, c->id);
            int64_t want = (int64_t)rm->output_len * (t.reqs[c->id].beam_width > 1 ? 1 : t.reqs[c->id].n);
            if (msg->data.result == CURLE_OK && c->status == 200 && c->tokens > 0 && c->usage_tokens == want) {
                rm->first_token_s = (c->first - cx.t0) * scale;
                rm->finish_s = (c->last - cx.t0) * scale;
                rm->finished = true;
            } else {
                fprintf(stderr, "pagedbench loadgen: request %lld: %s, HTTP %ld, %lld chunks, %lld of %lld tokens\n",
                        (long long)c->id, curl_easy_strerror(msg->data.result), c->status, (long long)c->tokens,
                        (long long)c->usage_tokens, (long long)want);
            }
            curl_multi_remove_handle(mh, msg->easy_handle);
            curl_easy_cleanup(msg->easy_handle);
        }
        double wait_s = next < t.n ? cx.t0 + t.reqs[next].arrival_s / scale - wall() : 0.05;
        int ms = (int)PB_MIN(50.0, PB_MAX(0.0, wait_s * 1e3));
        if (running > 0 || ms > 0) curl_multi_poll(mh, NULL, 0, ms, NULL);
    }
    double span = wall() - cx.t0;
    pb_metrics_end(m, span * scale);
    pb_run_summary s;
    pb_metrics_summary(m, &s);
    char title[512];
    snprintf(title, sizeof title, "loadgen %s -> %s", trace_path, url);
    pb_metrics_print_summary(stdout, &s, title);
    double last_arrival = t.n ? t.reqs[t.n - 1].arrival_s : 0;
    double target = last_arrival > 0 ? (double)t.n / last_arrival : 0;
    double sent_span = t.n ? (calls[t.n - 1].sent - cx.t0) * scale : 0;
    double achieved = sent_span > 0 ? (double)t.n / sent_span : 0;
    printf("%-40s %.4f\n%-40s %.4f\n%-40s %.3f\n%-40s %.3f\n%-40s %lld\n", "Target request rate (req/s, trace):", target,
           "Achieved send rate (req/s, trace):", achieved, "Mean send lateness (ms, wall):",
           late_sum / (double)PB_MAX(t.n, 1) * 1e3, "Max send lateness (ms, wall):", late_max * 1e3,
           "Requests sent > 10 ms late:", (long long)n_late);
    if (n_late > 0)
        fprintf(stderr, "pagedbench loadgen: WARNING: %lld of %lld requests were sent more than 10 ms late (max %.1f ms, "
                "mean %.2f ms): the client, not the server, limited the load\n", (long long)n_late, (long long)t.n,
                late_max * 1e3, late_sum / (double)PB_MAX(t.n, 1) * 1e3);
    if (rf) {
        fprintf(rf, "%s\n", PB_METRICS_REQUEST_COLUMNS);
        pb_metrics_write_requests(m, rf, "");
        fclose(rf);
    }
    int rc = s.n_finished == t.n ? PB_EXIT_OK : PB_EXIT_RUNTIME;
    for (int64_t i = 0; i < t.n; i++) {
        free(calls[i].body);
        free(calls[i].in.s);
        curl_slist_free_all(calls[i].hdr);
    }
    free(calls);
    free(cx.last_tok);
    free(model);
    curl_multi_cleanup(mh);
    curl_global_cleanup();
    pb_metrics_destroy(m);
    pb_trace_free(&t);
    return rc;
}
