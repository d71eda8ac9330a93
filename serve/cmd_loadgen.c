/* cmd_loadgen.c -- `pagedbench loadgen`: send a workload to any OpenAI-compatible server
 * on libcurl's multi interface, one streamed completion per request, and record what
 * `run` records for a point (point_out.h: the metrics, the per-request CSV; with an
 * experiment YAML also the results CSV and JSON and the vLLM-layout JSON).
 *
 * What is sent when is the workload's arrival source (workloads/client.h) run against
 * the wall clock: trace time = (wall - start) x --time-scale; a request whose send time
 * has come is sent, and each answer is told to the source (a conversation's next turn,
 * a free slot under max_concurrency).  The metrics are the engine's (metrics.h) recorded
 * from the client's side: arrival = the time the request was due, first token and
 * finish = the first and last streamed chunk, one ITL sample per chunk. */
#include <curl/curl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "client.h"
#include "commands.h"
#include "measure.h"
#include "metrics.h"
#include "pb.h"
#include "point_out.h"
#include "results_json.h"
#include "runner.h"
#include "sequence.h"   /* pb_group: what the arrival source is told */
#include "served_point.h"
#include "system.h"
#include "trace.h"
#include "trace_io.h"
#include "vllm_layout.h"

#define LATE_S 0.010   /* a request sent this much wall time after it was due is late */

enum { O_URL = 256, O_TRACE, O_MODEL, O_SCALE, O_REQ, O_KEY, O_MAXLEN, O_SYSTEM, O_SET, O_WARMUP, O_RESULTS };
static const pb_cli_opt LOADGEN_OPTS[] = {
    {"url", O_URL, "URL", "the server (http://127.0.0.1:8000)"},
    {"trace", O_TRACE, "T.csv", "the requests (trace.h columns); with a YAML it replaces the workload's\n"
                                "(as --set workload.trace=T.csv), its lengths then fitted to the model"},
    {"system", O_SYSTEM, "NAME", "the YAML's system whose point is measured (default: its first of type\n"
                                 "vllm, else its first): its outputs are named by it"},
    {"set", O_SET, "K=V", "override a YAML key, as `run --set` (sweeps take their first value)"},
    {"model", O_MODEL, "M", "the model name sent (default: the server's first in /v1/models)"},
    {"time-scale", O_SCALE, "X", "trace seconds per wall second (1)"},
    {"warmup-s", O_WARMUP, "S", "requests arriving before S trace seconds are left out of the latency\n"
                                "and normalized-latency averages (the YAML's measure.warmup_s, measure.h;\n"
                                "throughputs and counts stay the whole run's); said in the output"},
    {"requests", O_REQ, "F", "the per-request CSV, `run --requests`' columns (point_out.h)"},
    {"results", O_RESULTS, "DIR", "with a YAML: DIR/<name>.csv and DIR/<name>.json (the point, as `run`\n"
                                  "writes them) and DIR/vllm/<name>/<point>.json (vLLM bench serve's\n"
                                  "--save-result layout, with --requests its per-request lists)"},
    {"api-key", O_KEY, "K", "sent as `Authorization: Bearer K`"},
    {"max-model-len", O_MAXLEN, "N", "without a YAML: outputs are capped to N - prompt (default: no cap)"},
    {NULL, 0, NULL, NULL}};
static const pb_cli LOADGEN_CLI = {
    "loadgen", "--url URL EXPERIMENT.yaml [--system NAME] [--set K=V]... [options]\n"
               "--url URL --trace T.csv [options]",
    "Sends a workload to an OpenAI-compatible server: each request is one streamed POST\n"
    "URL/v1/completions, its prompt prompt_len token ids, max_tokens = output_len, n (parallel\n"
    "samples) or use_beam_search with best_of = beam_width, ignore_eos; each chunk is timestamped\n"
    "as it comes.  The workload is an experiment YAML's, as `pagedbench run` makes it for its\n"
    "first sweep point (dataset, arrival process, `conversation:` closed loop with think time,\n"
    "`max_concurrency`; the same seed, the same requests), or a trace CSV (pagedbench trace).\n"
    "Times are recorded in trace seconds (wall seconds x X): with X = the --speedup of a\n"
    "`pagedbench serve` of the same system, the numbers compare with `pagedbench run`.",
    LOADGEN_OPTS,
    "Prints vLLM benchmark_serving's block (the same as `run`'s, with its checks), the target and\n"
    "achieved request rates, the warm-up left out, and a WARNING when the client fell behind its\n"
    "schedule (a request sent more than 10 ms of wall time after it was due): then the client, not\n"
    "the server, limits the load.  A request the server refused (HTTP 4xx/5xx) counts as rejected,\n"
    "one whose connection failed or whose stream ended short as aborted.\n"
    "  pagedbench loadgen --url http://127.0.0.1:8000 tests/serve/serve_cmp.yaml --results out/lg\n"
    "  pagedbench compare out/lg/vllm/<name>/<point>.json out/vllm/<name>/<point>.json",
    "some request was not answered in full", NULL};

typedef struct lg lg;

typedef struct {
    lg *g;
    int64_t id;             /* the metrics' (and the client's) request id              */
    char *body;
    struct curl_slist *hdr;
    pb_sbuf in;             /* SSE bytes not yet parsed */
    double sent, first, last;
    int64_t tokens, usage_tokens;
    long status;
} call;

struct lg {
    double t0, scale;
    pb_metrics *m;
    double *last_tok;       /* trace time of each request's previous chunk */
};

static double wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One SSE event's data: a chunk with choices counts as a token chunk at now. */
static void on_data(call *c, const char *d, size_t n, double now) {
    if (n == 6 && !memcmp(d, "[DONE]", 6)) return;
    json_t *j = json_loadb(d, n, 0, NULL);
    if (!j) return;
    json_t *ch = json_object_get(j, "choices"), *u = json_object_get(j, "usage");
    if (json_is_array(ch) && json_array_size(ch) > 0) {
        double t = (now - c->g->t0) * c->g->scale;
        if (c->tokens == 0) c->first = now;
        pb_metrics_token(c->g->m, c->g->last_tok[c->id], t);
        c->g->last_tok[c->id] = t;
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

static char *request_body(const pb_request *r, int64_t id, const char *model) {
    json_t *ids = json_array();
    for (int32_t i = 0; i < r->prompt_len; i++) json_array_append_new(ids, json_integer(1 + (id + i) % 1000));
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

/* What the run did on the client's side. */
typedef struct {
    int64_t sent, n_late;
    double late_sum, late_max;    /* wall s after the request was due                    */
    double first_sent, last_sent;  /* when the first and the last request went (trace s)  */
} sched_stats;

/* Send every request of client cl to url/v1/completions as its time comes; record into
   m (begun over an empty trace: each request's row is made as it is sent).  Returns the
   clock (trace s) at the end. */
static double drive(pb_client *cl, const char *url, const char *model, const char *key, double scale, pb_metrics *m,
                    sched_stats *ss) {
    const pb_trace *t = pb_client_trace(cl);
    const pb_arrival_source *src = pb_client_source(cl);
    lg g = {.scale = scale, .m = m, .last_tok = pb_xcalloc((size_t)PB_MAX(t->n, 1), sizeof(double))};
    call *calls = pb_xcalloc((size_t)PB_MAX(t->n, 1), sizeof *calls);
    CURLM *mh = curl_multi_init();
    curl_multi_setopt(mh, CURLMOPT_MAX_TOTAL_CONNECTIONS, 0L);
    char u[2048], auth[1024];
    snprintf(u, sizeof u, "%s/v1/completions", url);
    if (key) snprintf(auth, sizeof auth, "Authorization: Bearer %s", key);
    memset(ss, 0, sizeof *ss);
    int running = 0;
    g.t0 = wall();
    for (;;) {
        double now = wall(), due;
        while ((due = src->next_s(src->user)) <= (now - g.t0) * scale) {
            const pb_request *r = src->take(src->user);
            int64_t id = pb_metrics_add_request(m, r);
            PB_ASSERT(id == r->id && id < t->n);
            call *c = &calls[id];
            c->g = &g;
            c->id = id;
            g.last_tok[id] = -1;
            c->body = request_body(r, pb_client_row_of(cl, id), model);
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
            double late = c->sent - (g.t0 + due / scale);
            ss->late_max = PB_MAX(ss->late_max, late);
            ss->late_sum += late;
            ss->n_late += late > LATE_S;
            double at = (c->sent - g.t0) * scale;   /* when it went, trace s */
            if (ss->sent++ == 0) ss->first_sent = at;
            ss->last_sent = at;
            curl_multi_add_handle(mh, h);
            running++;
        }
        curl_multi_perform(mh, &running);
        CURLMsg *msg;
        int q;
        while ((msg = curl_multi_info_read(mh, &q)) != NULL) {
            if (msg->msg != CURLMSG_DONE) continue;
            call *c;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c);
            curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &c->status);
            double end = (wall() - g.t0) * scale;
            pb_req_metrics *rm = pb_metrics_req(m, c->id);
            int64_t want = (int64_t)rm->output_len * (rm->beam_width > 1 ? 1 : rm->n);
            if (msg->data.result == CURLE_OK && c->status == 200 && c->tokens > 0 && c->usage_tokens == want) {
                rm->first_token_s = (c->first - g.t0) * scale;
                rm->finish_s = (c->last - g.t0) * scale;
                rm->finished = true;
                end = rm->finish_s;
            } else {
                if (c->tokens > 0) rm->first_token_s = (c->first - g.t0) * scale;
                if (msg->data.result == CURLE_OK && c->status >= 400) rm->rejected = true;   /* refused */
                else rm->aborted = true;   /* the connection failed or the stream ended short */
                fprintf(stderr, "pagedbench loadgen: request %lld: %s, HTTP %ld, %lld chunks, %lld of %lld tokens\n",
                        (long long)c->id, curl_easy_strerror(msg->data.result), c->status, (long long)c->tokens,
                        (long long)c->usage_tokens, (long long)want);
            }
            pb_group done;
            memset(&done, 0, sizeof done);
            done.id = (int32_t)c->id;
            src->done(src->user, &done, end);
            curl_multi_remove_handle(mh, msg->easy_handle);
            curl_easy_cleanup(msg->easy_handle);
        }
        due = src->next_s(src->user);
        if (running == 0 && !isfinite(due)) break;   /* everything sent and answered */
        double wait_s = isfinite(due) ? g.t0 + due / scale - wall() : 0.05;
        int ms = (int)PB_MIN(50.0, PB_MAX(0.0, wait_s * 1e3));
        if (running > 0 || ms > 0) curl_multi_poll(mh, NULL, 0, ms, NULL);
    }
    double clock = (wall() - g.t0) * scale;
    for (int64_t i = 0; i < t->n; i++) {
        free(calls[i].body);
        free(calls[i].in.s);
        curl_slist_free_all(calls[i].hdr);
    }
    free(calls);
    free(g.last_tok);
    curl_multi_cleanup(mh);
    return clock;
}

/* DIR/<name>.csv, DIR/<name>.json, DIR/vllm/<name>/<point>.json of the measured point. */
static pb_status write_results(const pb_served_point *sp, const pb_point_metrics *pm, const char *dir,
                               const char *req_csv, const char *model, const char *date, char *err, size_t err_n) {
    pb_experiment *e = sp->e;
    pb_result_row *row = pb_xcalloc(1, sizeof *row);
    row->sys = sp->sys;
    memcpy(row->axis, sp->vals, sizeof row->axis);
    row->m = *pm;
    pb_results res = {&sp->e, 1, row, 1};
    char csv[1400], json[1400], vdir[1400], vpath[2000];
    snprintf(csv, sizeof csv, "%s/%s.csv", dir, e->name);
    snprintf(json, sizeof json, "%s/%s.json", dir, e->name);
    snprintf(vdir, sizeof vdir, "%s/vllm/%s", dir, e->name);
    pb_vllm_point_file(e, sp->sys, sp->vals, vdir, vpath, sizeof vpath);
    pb_vllm_measured meas = {date, model};
    pb_status st = PB_OK;
    if (pb_cli_make_parent(&LOADGEN_CLI, vpath)) st = PB_ERR_IO;
    if (!st && (st = pb_results_write_csv(&res, csv))) snprintf(err, err_n, "%s: cannot be written", csv);
    if (!st && (st = pb_results_write_json(json, e->figure, &sp->e, 1, false, &res)))
        snprintf(err, err_n, "%s: cannot be written", json);
    if (!st) st = pb_vllm_write_point(e, sp->sys, 0, sp->vals, pm, req_csv, &meas, vpath, err, err_n);
    if (!st) fprintf(stderr, "pagedbench loadgen: wrote %s, %s and %s\n", csv, json, vpath);
    free(row);
    return st;
}

int pb_cmd_loadgen(int argc, char **argv) {
    const char *url = NULL, *trace_path = NULL, *model_opt = NULL, *req_path = NULL, *key = NULL, *system = NULL,
               *results = NULL;
    double scale = 1, warmup = 0;
    int64_t max_len = 1 << 20;
    bool max_len_set = false;
    const char **sets = pb_xcalloc((size_t)argc + 3, sizeof *sets);
    int n_sets = 0;
    pb_cli_parser p;
    pb_cli_begin(&p, &LOADGEN_CLI, argc, argv);
    for (int c; (c = pb_cli_next(&p)) != PB_CLI_END;) {
        switch (c) {
        case O_URL: url = p.arg; break;
        case O_TRACE: trace_path = p.arg; break;
        case O_MODEL: model_opt = p.arg; break;
        case O_REQ: req_path = p.arg; break;
        case O_KEY: key = p.arg; break;
        case O_SYSTEM: system = p.arg; break;
        case O_SET: sets[n_sets++] = p.arg; break;
        case O_RESULTS: results = p.arg; break;
        case O_SCALE:
            if (pb_cli_num(&p, 0, 1e9, &scale) && !(scale > 0)) pb_cli_bad(&p, "expected a number > 0");
            break;
        case O_WARMUP: pb_cli_num(&p, 0, 1e9, &warmup); break;
        case O_MAXLEN: max_len_set = pb_cli_int(&p, 2, INT32_MAX, &max_len); break;
        }
    }
    int rc = p.rc, nops = argc - p.optind;
    const char *yaml = nops == 1 ? argv[p.optind] : NULL;
    if (rc < 0 && !url) rc = pb_cli_fail(&LOADGEN_CLI, "--url is needed");
    if (rc < 0 && nops > 1) rc = pb_cli_fail(&LOADGEN_CLI, "name at most one EXPERIMENT.yaml, got %d", nops);
    if (rc < 0 && !yaml && !trace_path) rc = pb_cli_fail(&LOADGEN_CLI, "name an EXPERIMENT.yaml or --trace T.csv");
    if (rc < 0 && !yaml && (system || n_sets || results))
        rc = pb_cli_fail(&LOADGEN_CLI, "--system, --set and --results need an EXPERIMENT.yaml");
    if (rc < 0 && yaml && max_len_set)
        rc = pb_cli_fail(&LOADGEN_CLI, "--max-model-len is the YAML model's with a YAML (set model.max_len)");
    if (rc >= 0) {
        free(sets);
        return rc;
    }

    /* the workload: the YAML's point (as run makes it), or the trace as it is */
    char tset[1100], wset[64], err[2048] = "";
    if (yaml && trace_path) {
        snprintf(tset, sizeof tset, "workload.trace=%s", trace_path);
        sets[n_sets++] = tset;
    }
    if (warmup > 0) {
        snprintf(wset, sizeof wset, "measure.warmup_s=%.17g", warmup);
        sets[n_sets++] = wset;
    }
    pb_served_point sp;
    memset(&sp, 0, sizeof sp);
    pb_config *plain = NULL;   /* without a YAML: the point's settings (the warm-up only) */
    pb_point_ctx pt;
    pb_trace t = {0};
    pb_system_workload_info wi = {.max_model_len = (int32_t)max_len};
    pb_status st;
    if (yaml) {
        st = pb_served_point_open(&sp, "loadgen", yaml, sets, n_sets, NULL, system);
        if (!st) {
            pt = sp.pt;
            st = pb_system_workload(&pt, &t, &wi, err, sizeof err);
            if (st) fprintf(stderr, "pagedbench loadgen: %s\n", err);
        }
    } else {
        pb_cfg_err ce;
        pb_cfg_err_clear(&ce);
        plain = pb_config_new("loadgen");
        st = n_sets ? pb_config_set(plain, sets[0], &ce) : PB_OK;
        if (!st) st = pb_trace_read_csv(trace_path, &t, err, sizeof err);
        if (st) fprintf(stderr, "%s\n", ce.msg[0] ? ce.msg : err);
        pt = (pb_point_ctx){.root = pb_config_root(plain)};
    }
    free(sets);
    pb_client *cl = st ? NULL : pb_client_create(&t, &wi.client, wi.seed);
    if (!st && !cl) st = PB_ERR_INVALID;
    FILE *probe = NULL;   /* the per-request file can be written: said before any request */
    if (!st && req_path && (pb_cli_make_parent(&LOADGEN_CLI, req_path) || !(probe = fopen(req_path, "a")))) {
        fprintf(stderr, "pagedbench loadgen: %s: cannot be written\n", req_path);
        st = PB_ERR_INVALID;
    }
    if (probe) fclose(probe);
    if (st) {
        pb_client_destroy(cl);
        pb_trace_free(&t);
        pb_config_destroy(plain);
        pb_served_point_close(&sp);
        return PB_EXIT_USAGE;
    }

    curl_global_init(CURL_GLOBAL_DEFAULT);
    char *model = model_opt ? strdup(model_opt) : first_model(url, key);
    if (!model) fprintf(stderr, "pagedbench loadgen: %s/v1/models did not answer with a model (give --model)\n", url);
    pb_metrics *m = pb_metrics_create(false);
    pb_trace none = {NULL, 0};
    pb_metrics_begin(m, &none, wi.max_model_len);
    sched_stats ss;
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y%m%d-%H%M%S", localtime(&now));
    rc = PB_EXIT_RUNTIME;
    if (model) {
        pb_metrics_end(m, drive(cl, url, model, key, scale, m, &ss));
        pb_point_metrics *pm = pb_xcalloc(1, sizeof *pm);
        char title[600];
        snprintf(title, sizeof title, "loadgen %s -> %s", yaml ? yaml : trace_path, url);
        pt.requests_path = req_path;
        if (wi.dropped) pb_pm_set(pm, "n_dropped", (double)wi.dropped);
        st = pb_point_out_fill(&pt, m, title, pm, err, sizeof err);
        fputs(pm->summary, stdout);
        double span = ss.last_sent - ss.first_sent;
        double achieved = span > 0 ? (double)(ss.sent - 1) / span : 0;
        double last = t.n ? t.reqs[t.n - 1].arrival_s - t.reqs[0].arrival_s : 0;
        double target = last > 0 && !pb_client_active(&wi.client) ? (double)(t.n - 1) / last : NAN;
        printf("%-40s %.4f%s\n%-40s %.4f\n%-40s %.3f\n%-40s %.3f\n%-40s %lld\n", "Target request rate (req/s, trace):",
               target, isnan(target) ? " (closed loop / concurrency limit: set by the answers)" : "",
               "Achieved send rate (req/s, trace):", achieved, "Mean send lateness (ms, wall):",
               ss.late_sum / (double)PB_MAX(ss.sent, 1) * 1e3, "Max send lateness (ms, wall):", ss.late_max * 1e3,
               "Requests sent > 10 ms late:", (long long)ss.n_late);
        pb_measure w = pb_measure_from_root(pt.root);   /* --warmup-s or the YAML's measure.warmup_s */
        if (w.warmup_s > 0)
            printf("%-40s requests arriving before %g s left out of the latency averages (%.0f of %lld kept)\n",
                   "Warm-up:", w.warmup_s, pb_pm_get(pm, "measured_requests", NAN), (long long)ss.sent);
        if (ss.n_late > 0)
            fprintf(stderr, "pagedbench loadgen: WARNING: %lld of %lld requests were sent more than 10 ms late (max "
                    "%.1f ms, mean %.2f ms): the client, not the server, limited the load\n", (long long)ss.n_late,
                    (long long)ss.sent, ss.late_max * 1e3, ss.late_sum / (double)PB_MAX(ss.sent, 1) * 1e3);
        if (!st && results) st = write_results(&sp, pm, results, req_path, model, date, err, sizeof err);
        if (st) fprintf(stderr, "pagedbench loadgen: %s\n", err);
        rc = st ? PB_EXIT_RUNTIME : pb_pm_get(pm, "n_finished", 0) == (double)t.n ? PB_EXIT_OK : PB_EXIT_RUNTIME;
        free(pm);
    }
    free(model);
    curl_global_cleanup();
    pb_metrics_destroy(m);
    pb_client_destroy(cl);
    pb_trace_free(&t);
    pb_config_destroy(plain);
    pb_served_point_close(&sp);
    return rc;
}
