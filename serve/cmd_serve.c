/* cmd_serve.c -- `pagedbench serve`: an OpenAI-compatible server over one system of an
 * experiment YAML, its engine running online (engine/online.h) behind server.h. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "engine.h"
#include "experiment.h"
#include "metrics.h"
#include "online.h"
#include "point.h"
#include "served_point.h"
#include "server.h"
#include "system.h"
#include "tokenizer.h"

enum { O_HOST = 256, O_PORT, O_EXECUTOR, O_SPEEDUP, O_API_KEY, O_SYSTEM, O_SET, O_TOKENIZER, O_NAME, O_WAITING,
       O_CONNS };
static const pb_cli_opt SERVE_OPTS[] = {
    {"host", O_HOST, "ADDR", "numeric IPv4 address to bind (127.0.0.1: this machine only)"},
    {"port", O_PORT, "N", "TCP port (8000; 0 = any free port, printed on stderr)"},
    {"executor", O_EXECUTOR, "E", "the YAML's executor replaced: sim (cost model: each step's predicted\n"
                                  "latency is slept), cpu (the tiny real model computes every step), cuda"},
    {"speedup", O_SPEEDUP, "X", "engine seconds per wall second (1): the sim at X = 100 runs 100 times\n"
                                "faster than the GPU it models; latencies in answers and /metrics stay\n"
                                "in engine seconds"},
    {"api-key", O_API_KEY, "K", "/v1/ routes want `Authorization: Bearer K` (else 401)"},
    {"system", O_SYSTEM, "NAME", "the system of the YAML to serve (default: its first of type vllm,\n"
                                 "else its first)"},
    {"set", O_SET, "K=V", "override a YAML key, as `run --set` (sweeps take their first value)"},
    {"tokenizer", O_TOKENIZER, "DIR", "GPT-2 BPE files (encoder.json, vocab.bpe; default\n"
                                      "$PAGEDBENCH_TOKENIZER_DIR, else ../shared/data/tokenizers/gpt2 beside\n"
                                      "the checkout)"},
    {"served-model-name", O_NAME, "NAME", "the model's name in requests and answers (default: the model\n"
                                          "spec's name in lower case, e.g. opt-13b)"},
    {"max-waiting", O_WAITING, "N", "answer 429 while N requests wait (0: no limit)"},
    {"max-connections", O_CONNS, "N", "open connections at most (4096)"},
    {NULL, 0, NULL, NULL}};
static const pb_cli SERVE_CLI = {
    "serve", "CONFIG.yaml [--host 127.0.0.1] [--port 8000] [--executor sim|cpu|cuda] [--speedup X] [options]",
    "An OpenAI-compatible server over one system of an experiment YAML (its model, hardware,\n"
    "KV space, policy and executor; the workload is not read): POST /v1/completions and\n"
    "/v1/chat/completions (stream: true gives server-sent events as OpenAI's, with\n"
    "stream_options.include_usage), GET /v1/models, /health, /metrics (Prometheus text,\n"
    "vLLM's names: vllm:num_requests_running / _waiting, vllm:gpu_cache_usage_perc,\n"
    "vllm:num_preemptions_total, vllm:prompt_tokens_total, vllm:generation_tokens_total,\n"
    "vllm:time_to_first_token_seconds, vllm:time_per_output_token_seconds,\n"
    "vllm:e2e_request_latency_seconds; times in engine seconds).",
    SERVE_OPTS,
    "Tokens.  The engine computes on lengths: a prompt's length is what the server counts, and\n"
    "the tokens the model sees are the engine's (trace.h: a request's own keyed stream), not the\n"
    "ids sent.  A prompt of token ids counts exactly its ids; a text prompt is tokenized with\n"
    "GPT-2's BPE (OPT's vocabulary) when the files are found, else counted as one token per 4\n"
    "bytes (rounded up); a chat's messages become \"role: content\\n\" lines and \"assistant:\".\n"
    "Every request generates exactly max_tokens tokens per sequence (ignore_eos is implied,\n"
    "min_tokens <= max_tokens is accepted, stop strings are refused: generation stops by\n"
    "length), n samples, or with use_beam_search a beam of max(n, best_of, 2) returning the\n"
    "first n beams.  The sim emits the engine's synthetic ids (uniform in [0, vocab) from the\n"
    "request's seeded stream), the cpu executor the tiny model's greedy ids; text is their GPT-2\n"
    "decoding, an id past the tokenizer's vocabulary (or any id without one) as \" <id>\";\n"
    "`return_token_ids: true` adds each choice's ids.  Defaults: max_tokens 16 (completions),\n"
    "the model's length left (chat).\n"
    "\n"
    "SIGINT / SIGTERM: new requests get 503, the accepted ones finish, exit 0; the KV\n"
    "manager's check (every block returned) runs at the end (exit 1 if it fails).  A client\n"
    "that goes away (or a stop without drain) aborts its request: counted as aborted, apart\n"
    "from the rejected ones (admission refused).",
    NULL, NULL};

static bool is_dir(const char *p) {
    struct stat st;
    return p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The tokenizer folder: --tokenizer, $PAGEDBENCH_TOKENIZER_DIR, ../shared beside the tree. */
static const char *tokenizer_dir(const char *opt, char *buf, size_t n) {
    if (opt) return opt;
    const char *env = getenv("PAGEDBENCH_TOKENIZER_DIR");
    if (env && *env) return env;
    snprintf(buf, n, "%s/../shared/data/tokenizers/gpt2", PB_SOURCE_DIR);
    return is_dir(buf) ? buf : NULL;
}

static int sig_pipe[2] = {-1, -1};

static void on_signal(int sig) {
    unsigned char c = (unsigned char)sig;
    ssize_t n = write(sig_pipe[1], &c, 1);
    (void)n;
}

int pb_cmd_serve(int argc, char **argv) {
    const char *host = "127.0.0.1", *executor = NULL, *api_key = NULL, *system = NULL, *tok_opt = NULL,
               *name = NULL;
    int64_t port = 8000, waiting = 0, conns = 4096;
    double speedup = 1;
    const char **sets = pb_xcalloc((size_t)argc + 2, sizeof *sets);
    int n_sets = 0;
    pb_cli_parser p;
    pb_cli_begin(&p, &SERVE_CLI, argc, argv);
    for (int c; (c = pb_cli_next(&p)) != PB_CLI_END;) {
        switch (c) {
        case O_HOST: host = p.arg; break;
        case O_PORT: pb_cli_int(&p, 0, 65535, &port); break;
        case O_EXECUTOR:
            executor = p.arg;
            if (strcmp(p.arg, "sim") && strcmp(p.arg, "cpu") && strcmp(p.arg, "cuda"))
                pb_cli_bad(&p, "expected sim, cpu or cuda, got '%s'", p.arg);
            break;
        case O_SPEEDUP:
            if (pb_cli_num(&p, 0, 1e9, &speedup) && !(speedup > 0)) pb_cli_bad(&p, "expected a number > 0");
            break;
        case O_API_KEY: api_key = p.arg; break;
        case O_SYSTEM: system = p.arg; break;
        case O_SET: sets[n_sets++] = p.arg; break;
        case O_TOKENIZER: tok_opt = p.arg; break;
        case O_NAME: name = p.arg; break;
        case O_WAITING: pb_cli_int(&p, 0, INT32_MAX, &waiting); break;
        case O_CONNS: pb_cli_int(&p, 1, 1000000, &conns); break;
        }
    }
    int rc = p.rc;
    if (rc < 0 && argc - p.optind != 1)
        rc = pb_cli_fail(&SERVE_CLI, "name one CONFIG.yaml, got %d operand(s)", argc - p.optind);
    if (rc >= 0) {
        free(sets);
        return rc;
    }
    const char *path = argv[p.optind];

    pb_served_point spt;
    pb_status st = pb_served_point_open(&spt, "serve", path, sets, n_sets, executor, system);
    if (st != PB_OK) {
        free(sets);
        return PB_EXIT_USAGE;
    }
    pb_experiment *e = spt.e;
    int sys = spt.sys;

    char tbuf[4096], err[2048] = "";
    const char *tdir = tokenizer_dir(tok_opt, tbuf, sizeof tbuf);
    pb_tok *tok = NULL;
    if (tdir && !(tok = pb_tok_load(tdir, err, sizeof err))) {
        fprintf(stderr, "pagedbench serve: tokenizer: %s\n", err);
        pb_served_point_close(&spt);
        free(sets);
        return PB_EXIT_USAGE;
    }

    /* the system: KV manager, policy, executor, engine */
    pb_system_parts parts;
    memset(&parts, 0, sizeof parts);
    st = pb_system_build(&spt.pt, &parts, err, sizeof err);
    if (st) fprintf(stderr, "pagedbench serve: %s\n", err);
    pb_engine *eng = NULL;
    pb_metrics *m = pb_metrics_create(false);
    if (st == PB_OK) {
        parts.ep.store_tokens = true;
        parts.ep.vocab_size = parts.model.vocab;
        parts.ep.max_clock_s = 0;
        parts.ep.max_steps = 0;
        parts.ep.fast_forward = false;
        st = pb_engine_create(&parts.ep, parts.kv, parts.policy, parts.ex, &eng);
    }
    char lower[sizeof parts.model.name];
    for (size_t i = 0; i < sizeof lower; i++) lower[i] = (char)tolower((unsigned char)parts.model.name[i]);
    pb_server_params sp = {.host = host, .port = (int)port, .api_key = api_key,
                           .model = name ? name : lower, .max_model_len = parts.model.max_len,
                           .max_beam = 64, .max_connections = (int)conns, .tok = tok};
    pb_server *srv = st == PB_OK ? pb_server_create(&sp) : NULL;
    pb_online *on = NULL;
    /* SIGINT / SIGTERM, whichever thread takes them, write to a pipe this thread reads */
    if (pipe(sig_pipe) != 0) st = PB_ERR_IO;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (st == PB_OK) {
        pb_online_params op = {.speedup = speedup, .max_waiting = (int32_t)waiting, .on_event = pb_server_event,
                               .user = srv};
        st = pb_online_start(eng, parts.kv, m, &op, &on);
    }
    if (st == PB_OK && (st = pb_server_listen(srv, on, err, sizeof err)) != PB_OK)
        fprintf(stderr, "pagedbench serve: %s\n", err);
    int exit_rc = st == PB_OK ? PB_EXIT_OK : st == PB_ERR_INVALID ? PB_EXIT_USAGE : PB_EXIT_RUNTIME;
    if (st == PB_OK) {
        fprintf(stderr, "pagedbench serve: %s (%s executor, system %s of %s, speedup %g) on http://%s:%d; tokenizer: %s\n",
                sp.model, parts.executor, e->systems[sys].id, path, speedup, host, pb_server_port(srv),
                tok ? tdir : "none (text: 1 token per 4 bytes)");
        unsigned char sig = 0;
        while (read(sig_pipe[0], &sig, 1) != 1 && errno == EINTR) {}
        fprintf(stderr, "pagedbench serve: %s: draining %d open request(s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
                pb_server_open_requests(srv));
        pb_server_quiesce(srv);
    }
    if (on) {
        pb_status s2 = pb_online_stop(on, true);
        pb_online_stats os;
        pb_online_stats_get(on, &os);
        fprintf(stderr, "pagedbench serve: %lld requests (%lld finished, %lld aborted, %lld rejected, %lld refused), "
                "%lld steps, engine clock %.3f s; KV check %s\n", (long long)os.n_submitted, (long long)os.n_finished,
                (long long)os.n_aborted, (long long)os.n_rejected, (long long)os.n_refused, (long long)os.n_steps,
                os.engine_s, s2 == PB_OK ? "ok (every block returned)" : "FAILED");
        if (s2 != PB_OK && exit_rc == PB_EXIT_OK) exit_rc = PB_EXIT_RUNTIME;
        for (int i = 0; i < 3000 && pb_server_open_requests(srv) > 0; i++) {   /* the answers sent (30 s at most) */
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
        }
    }
    pb_server_destroy(srv);
    pb_online_destroy(on);
    pb_engine_destroy(eng);
    pb_metrics_destroy(m);
    pb_system_parts_free(&parts);
    pb_tok_free(tok);
    pb_served_point_close(&spt);
    free(sets);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    for (int i = 0; i < 2; i++)
        if (sig_pipe[i] >= 0) close(sig_pipe[i]);
    return exit_rc;
}
