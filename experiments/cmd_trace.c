/* cmd_trace.c -- `pagedbench trace`: write a request trace (CSV) for a dataset and an
 * arrival process; check a trace file; write the data of the paper's Fig. 11.
 *
 *   pagedbench trace --dataset sharegpt --rate 2 --duration 3600 --seed 0 -o out/trace.csv
 *   pagedbench trace --dataset sharegpt --arrivals gamma --burstiness 0.5 --rate 2 --num 1000
 *   pagedbench trace --dataset alpaca --ramp linear --ramp-start 1 --ramp-end 8 --duration 600
 *   pagedbench trace --check trace.csv
 *   pagedbench trace --fig11 results/fig11.csv
 *   pagedbench trace --from sharegpt.json --format sharegpt-json --rate 2 > trace.csv
 * Exit status: 0 ok, 1 runtime failure (unreadable file), 2 usage, config or data error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"   /* pb_trace_conversations, pb_trace_append_history: --history */
#include "commands.h"
#include "config.h"
#include "dataset.h"
#include "pb.h"
#include "spec.h"   /* pb_model_from_node, pb_spec_dir: --model */
#include "trace_from.h"
#include "trace_io.h"
#include "workload.h"

enum { O_CONFIG = 256, O_CHECK, O_FIG11, O_DATASET, O_RATE, O_DURATION, O_NUM, O_SEED, O_ARRIVALS, O_QUANTUM,
       O_FILTER, O_FILE, O_REPLAY, O_N, O_BEAM, O_PREFIX, O_FROM, O_FORMAT, O_TOKENIZER, O_NO_BOS, O_BURSTINESS,
       O_RAMP, O_RAMP_START, O_RAMP_END, O_IN_COL, O_OUT_COL, O_ARR_COL, O_MODEL, O_CONV_COL, O_TURN_COL,
       O_HISTORY };
static const pb_cli_opt OPTS[] = {
    {"dataset", O_DATASET, "NAME", PB_DATASET_NAMES},
    {"rate", O_RATE, "R", "requests per second (poisson, exponential, gamma; replay and --from: rescale to R)"},
    {"duration", O_DURATION, "S", "seconds of arrivals (default 3600 unless --num is given)"},
    {"num", O_NUM, "N", "number of requests (with --duration: whichever comes first)"},
    {"seed", O_SEED, "N", "seed (default 0); same options + seed = byte-identical output"},
    {"arrivals", O_ARRIVALS, "KIND", PB_ARRIVAL_NAMES " (default poisson, 10 ms quanta)"},
    {"burstiness", O_BURSTINESS, "B", "gamma arrivals: the gaps' shape, vLLM bench serve's --burstiness\n"
                                      "(1 = exponential; < 1 burstier; coefficient of variation 1/sqrt(B))"},
    {"ramp", O_RAMP, "SHAPE", "linear | exponential: the rate moves from --ramp-start to --ramp-end over\n"
                              "--duration (or, without one, over --num requests: vLLM's\n"
                              "--ramp-up-strategy); replaces --rate"},
    {"ramp-start", O_RAMP_START, "R", "requests per second at the start of the ramp"},
    {"ramp-end", O_RAMP_END, "R", "requests per second at the end of the ramp"},
    {"quantum", O_QUANTUM, "S", "poisson time quantum in seconds (default 0.01)"},
    {"filter", O_FILTER, "F", PB_FILTER_NAMES " (default paper for sharegpt/alpaca, else none)"},
    {"file", O_FILE, "PATH", "exact lengths CSV (auto: ../shared/data when present);\n"
                             "default: the built-in distribution derived from it"},
    {"replay-file", O_REPLAY, "PATH", "timestamps for --arrivals replay (Azure LLM trace CSV; default auto)"},
    {"n", O_N, "K", "parallel samples per request"},
    {"beam", O_BEAM, "K", "beam search with width K (n = K)"},
    {"prefix", O_PREFIX, "P", "translation: 1shot | 5shot; other datasets: a shared prefix of P tokens"},
    {"config", O_CONFIG, "EXP.yaml", "start from the experiment's `workload:` section (options override)"},
    {"output", 'o', "FILE", "write the CSV to FILE atomically (its folder made) instead of stdout"},
    {"check", O_CHECK, "TRACE.csv", "validate a trace file, print a summary (verdict on stdout; - = stdin)"},
    {"fig11", O_FIG11, "OUT.csv", "Fig. 11: length densities of ShareGPT and Alpaca"},
    {"from", O_FROM, "FILE", "a trace from a real dataset or log (with --format)"},
    {"format", O_FORMAT, "FMT", PB_FROM_FORMATS},
    {"input-column", O_IN_COL, "NAME", "--from csv / vllm-json: the prompt-length column or key"},
    {"output-column", O_OUT_COL, "NAME", "--from csv / vllm-json: the output-length column or key"},
    {"arrival-column", O_ARR_COL, "NAME", "--from csv / vllm-json: the arrival column or key (seconds)"},
    {"conversation-column", O_CONV_COL, "NAME", "--from csv: the conversation column (integers, -1 = none; default\n"
                                                "conversation_id when there is one)"},
    {"turn-column", O_TURN_COL, "NAME", "--from csv: the turn column (default turn; without one, a conversation's\n"
                                        "rows are its turns in row order)"},
    {"history", O_HISTORY, "H", "as_given | append: a conversation's later turns re-send the conversation so\n"
                                "far (append: the previous turn's prompt + output added to the prompt;\n"
                                "workload.conversation.history)"},
    {"tokenizer", O_TOKENIZER, "CMD", "run CMD instead of python3 tools/tokenize/pb_tokenize.py"},
    {"no-bos", O_NO_BOS, NULL, "sharegpt-json: do not count OPT's </s>"},
    {"model", O_MODEL, "M", "(--from, --check) count the requests model M (experiments/models/M.yaml)\n"
                            "cannot serve: prompts longer than its context, which a run drops from\n"
                            "the trace for every system (docs/outputs.md n_dropped), and prompt +\n"
                            "output over it, whose outputs the engine cuts at the context"},
    {NULL, 0, NULL, NULL}};
static const pb_cli CLI = {
    "trace",
    "--dataset NAME [--rate R] [--duration S] [--num N] [--seed N] [options]\n"
    "--config EXP.yaml [options]\n"
    "--check TRACE.csv [--model M]\n"
    "--fig11 OUT.csv\n"
    "--from FILE --format FMT [--rate R] [--num N] [--seed N] [--filter F] [--model M] [--input-column NAME ...]",
    "Writes a request trace as CSV to stdout (or -o FILE), header\n"
    "  " PB_TRACE_CSV_HEADER "\n"
    "and a one-line summary to stderr.",
    OPTS,
    "Real data (--from): FMT is\n"
    "  sharegpt-json  ShareGPT conversations (text; first turn = prompt, second = completion),\n"
    "                 tokenized with GPT-2 BPE by tools/tokenize/pb_tokenize.py (python3 and the\n"
    "                 `tokenizers` package; OPT's </s> counted unless --no-bos)\n"
    "  vllm-json      benchmark_serving --save-result JSON (input_lens, output_lens), or an array\n"
    "                 of {prompt_len|input_len, output_len[, arrival_s]}\n"
    "  azure-csv      Azure LLM inference trace (TIMESTAMP, ContextTokens, GeneratedTokens)\n"
    "  csv            prompt_len|input_len, output_len[, arrival_s|timestamp]\n"
    "  The file's timestamps are kept (shifted to 0; --rate rescales them); without any,\n"
    "  --rate gives Poisson arrivals (10 ms quanta, --seed).  --filter defaults to none.\n"
    "  FILE - reads stdin (csv, vllm-json).",
    "unreadable file", NULL};

static int bad_opt(const char *opt, const char *what, const char *val) {
    return pb_cli_fail(&CLI, "%s: %s, got '%s'", opt, what, val ? val : "(nothing)");
}

static int parse_int_opt(const char *opt, const char *v, int64_t lo, int64_t hi, int64_t *out) {
    if (!v || !pb_parse_int(v, out) || *out < lo || *out > hi) {
        char what[96];
        snprintf(what, sizeof what, "expected an integer in [%lld, %lld]", (long long)lo, (long long)hi);
        return bad_opt(opt, what, v);
    }
    return 0;
}
static int parse_num_opt(const char *opt, const char *v, double lo, double *out) {
    if (!v || !pb_parse_num(v, out) || *out < lo) {
        char what[64];
        snprintf(what, sizeof what, "expected a number >= %g", lo);
        return bad_opt(opt, what, v);
    }
    return 0;
}
static int copy_opt(const char *opt, const char *v, char *dst, size_t n) {
    if (!v) return bad_opt(opt, "needs a value", v);
    if (strlen(v) >= n) return bad_opt(opt, "too long", v);
    snprintf(dst, n, "%s", v);
    return 0;
}

/* ---- Fig. 11 ---- */
#define FIG11_WIDTH 8       /* tokens per bin: 1-4 token bins draw as spikes */
#define FIG11_BINS 256      /* 0 .. 2048 tokens */

static int write_fig11(const char *path) {
    static const char *const SETS[] = {"sharegpt", "alpaca"};
    size_t cap = 1 << 16, used = 0;
    char *buf = pb_xmalloc(cap);
    used += (size_t)snprintf(buf, cap, "dataset,series,bin_lo,bin_hi,density,mean,source\n");
    pb_length_filter f;
    pb_filter_by_name("fig11", &f);
    for (size_t s = 0; s < PB_ARRAY_LEN(SETS); s++) {
        pb_workload_cfg c;
        pb_workload_defaults(&c);
        snprintf(c.dataset, sizeof c.dataset, "%s", SETS[s]);
        snprintf(c.file, sizeof c.file, "auto");
        char p[PB_WL_PATH], err[512];
        const char *file = pb_workload_resolve_file(&c, p, sizeof p);
        pb_dataset *d = NULL;
        pb_status st = file ? pb_dataset_load_csv(file, "input_len", "output_len", &d, err, sizeof err)
                            : pb_dataset_builtin(SETS[s], &d);
        if (st) {
            fprintf(stderr, "pagedbench trace: %s\n", file ? err : "no built-in table");
            free(buf);
            return st == PB_ERR_IO ? PB_EXIT_RUNTIME : PB_EXIT_USAGE;
        }
        double mi, mo, kept, hin[FIG11_BINS], hout[FIG11_BINS];
        pb_dataset_means(d, &f, &mi, &mo, &kept);
        pb_dataset_hist(d, &f, FIG11_WIDTH, FIG11_BINS, hin, hout);
        const char *src = file ? "exact" : "built-in";
        fprintf(stderr, "fig11: %-8s input mean %.2f, output mean %.2f (%s, filter input+output <= 2048, %.0f rows)\n",
                SETS[s], mi, mo, src, kept);
        for (int series = 0; series < 2; series++) {
            const double *h = series ? hout : hin;
            for (int k = 0; k < FIG11_BINS; k++) {
                if (cap - used < 256) { cap *= 2; buf = pb_xrealloc(buf, cap); }
                used += (size_t)snprintf(buf + used, cap - used, "%s,%s,%d,%d,%.8g,%.4f,%s\n", SETS[s],
                                         series ? "output" : "input", k * FIG11_WIDTH, (k + 1) * FIG11_WIDTH,
                                         h[k] / FIG11_WIDTH, series ? mo : mi, src);
            }
        }
        pb_dataset_destroy(d);
    }
    pb_status st = pb_write_file_atomic(path, buf, used);
    free(buf);
    if (st) {
        fprintf(stderr, "pagedbench trace: %s: cannot write\n", path);
        return PB_EXIT_RUNTIME;
    }
    fprintf(stderr, "fig11: wrote %s\n", path);
    return PB_EXIT_OK;
}

static void print_summary(const char *what, const pb_trace *t) {
    pb_trace_stats s = pb_trace_summary(t);
    int64_t n_conv, n_later;
    pb_trace_conversations(t, &n_conv, &n_later);
    char conv[160] = "";
    if (n_conv > 0)
        snprintf(conv, sizeof conv, "; %lld conversations, %lld of their turns after a first one (a closed-loop run "
                 "sends them after the previous answer)", (long long)n_conv, (long long)n_later);
    fprintf(stderr, "trace: %s: %lld requests, arrivals over %.2f s (%.3f req/s), mean prompt %.2f, "
            "mean output %.2f, max prompt %d, max output %d%s\n", what, (long long)s.n, s.duration_s, s.rate,
            s.mean_prompt, s.mean_output, s.max_prompt, s.max_output, conv);
}

/* --model NAME: the requests of t that model NAME's context (max_len) cannot serve,
   on stderr.  PB_EXIT_OK, or PB_EXIT_USAGE for an unknown model. */
static int report_model_fit(const pb_trace *t, const char *model) {
    char text[512], dir[4096];
    snprintf(text, sizeof text, "model: '%s'\n", model);
    snprintf(dir, sizeof dir, "%s/models", pb_spec_dir());
    pb_config *c = NULL;
    pb_cfg_err e;
    pb_cfg_err_clear(&e);
    pb_model m;
    if (strchr(model, '\'') || pb_config_load_string("--model", text, &c, &e) || pb_config_include(c, "model", dir, &e) ||
        pb_model_from_node(pb_node_get(pb_config_root(c), "model"), &m, &e)) {
        fprintf(stderr, "pagedbench trace: --model %s: %s\n", model, *e.msg ? e.msg : "not a model name");
        pb_config_destroy(c);
        return PB_EXIT_USAGE;
    }
    pb_config_destroy(c);
    int64_t longer = 0, cut = 0;
    for (int64_t i = 0; i < t->n; i++) {
        if (t->reqs[i].prompt_len > m.max_len) longer++;
        else if ((int64_t)t->reqs[i].prompt_len + t->reqs[i].output_len > m.max_len) cut++;
    }
    fprintf(stderr, "trace: %s (context %d tokens): %lld of %lld requests have a prompt longer than the context "
            "(a run drops them for every system), %lld more have prompt + output over it (outputs cut)\n",
            m.name, m.max_len, (long long)longer, (long long)t->n, (long long)cut);
    return PB_EXIT_OK;
}

/* Write t to output (stdout when NULL) and free it: the exit status of a trace command. */
static int emit_trace(pb_trace *t, const char *output) {
    char err[1024] = "";
    if (output && pb_cli_make_parent(&CLI, output)) {
        pb_trace_free(t);
        return PB_EXIT_RUNTIME;
    }
    pb_status st = output ? pb_trace_write_file(output, t, err, sizeof err) : pb_trace_write_csv(stdout, t);
    pb_trace_free(t);
    if (st) {
        fprintf(stderr, "pagedbench trace: %s\n", output ? err : "cannot write to stdout");
        return PB_EXIT_RUNTIME;
    }
    return PB_EXIT_OK;
}


/* `trace --from FILE --format F`: a trace from a real dataset or log (trace_from.h) */
static int trace_from(const char *file, const pb_trace_from_opts *o, bool append, const char *model,
                      const char *output) {
    pb_trace t = {0};
    int64_t dropped = 0;
    char err[2048];
    pb_status st = pb_trace_from_file(file, o, &t, &dropped, err, sizeof err);
    if (st) {
        fprintf(stderr, "pagedbench trace: %s\n", err);
        return st == PB_ERR_IO ? PB_EXIT_RUNTIME : PB_EXIT_USAGE;
    }
    int64_t n_conv, n_later;
    pb_trace_conversations(&t, &n_conv, &n_later);
    if (append && n_conv == 0) {
        pb_trace_free(&t);
        return pb_cli_fail(&CLI, "--history append: %s has no conversations (a conversation_id column, or "
                                 "--conversation-column)", file);
    }
    if (append) pb_trace_append_history(&t);
    char what[1400];
    snprintf(what, sizeof what, "%s (%s, %lld records dropped by the length checks and filter%s)", file, o->format,
             (long long)dropped, append ? "; history appended" : "");
    print_summary(what, &t);
    int rc = model ? report_model_fit(&t, model) : PB_EXIT_OK;
    if (rc) {
        pb_trace_free(&t);
        return rc;
    }
    return emit_trace(&t, output);
}

int pb_cmd_trace(int argc, char **argv) {
    pb_workload_cfg c;
    pb_workload_defaults(&c);
    const char *config = NULL, *check = NULL, *fig11 = NULL, *output = NULL, *from = NULL, *format = NULL,
               *tokenizer = NULL, *model = NULL, *cols[5] = {NULL, NULL, NULL, NULL, NULL};
    bool bos = true;
    /* pass 1: collect; --config is applied before the other options */
    int *codes = pb_xcalloc((size_t)argc + 1, sizeof *codes);
    const char **vals = pb_xcalloc((size_t)argc + 1, sizeof *vals);
    int nopt = 0, rc = PB_EXIT_OK;
    pb_cli_parser p;
    pb_cli_begin(&p, &CLI, argc, argv);
    for (int ch; (ch = pb_cli_next(&p)) != PB_CLI_END;) {
        switch (ch) {
        case O_CONFIG: config = p.arg; break;
        case O_CHECK: check = p.arg; break;
        case O_FIG11: fig11 = p.arg; break;
        case O_FROM: from = p.arg; break;
        case O_FORMAT: format = p.arg; break;
        case O_TOKENIZER: tokenizer = p.arg; break;
        case O_NO_BOS: bos = false; break;
        case O_MODEL: model = p.arg; break;
        case O_IN_COL: cols[0] = p.arg; break;
        case O_OUT_COL: cols[1] = p.arg; break;
        case O_ARR_COL: cols[2] = p.arg; break;
        case O_CONV_COL: cols[3] = p.arg; break;
        case O_TURN_COL: cols[4] = p.arg; break;
        case 'o': output = p.arg; break;
        default: codes[nopt] = ch; vals[nopt++] = p.arg; break;
        }
    }
    if (p.rc >= 0) rc = p.rc == 0 ? -1 : p.rc;
    if (rc == PB_EXIT_OK && p.optind < argc) rc = pb_cli_fail(&CLI, "unexpected argument '%s'", argv[p.optind]);
    if (rc == PB_EXIT_OK && argc < 2) rc = pb_cli_fail(&CLI, "name a dataset (--dataset), --config, --check, --fig11 or --from");
    if (rc == PB_EXIT_OK && !from && !format && (cols[0] || cols[1] || cols[2] || cols[3] || cols[4]))
        rc = pb_cli_fail(&CLI, "--input-column, --output-column, --arrival-column, --conversation-column and "
                               "--turn-column map the columns of --from FILE");
    for (int i = 0; i < nopt && rc == PB_EXIT_OK; i++)
        if (codes[i] == O_HISTORY && strcmp(vals[i], "as_given") && strcmp(vals[i], "append"))
            rc = bad_opt("--history", "expected as_given or append", vals[i]);
    if (rc != PB_EXIT_OK) {
        free(codes);
        free(vals);
        return rc == -1 ? PB_EXIT_OK : rc;
    }
    if (fig11) { free(codes); free(vals); return write_fig11(fig11); }
    if (check) {
        free(codes);
        free(vals);
        pb_trace t = {0};
        char err[1024];
        pb_status st = pb_trace_read_csv(check, &t, err, sizeof err);
        if (st) {
            fprintf(stderr, "%s\n", err);
            printf("%s: INVALID\n", check);
            return st == PB_ERR_IO ? PB_EXIT_RUNTIME : PB_EXIT_USAGE;
        }
        print_summary(check, &t);
        int rc2 = model ? report_model_fit(&t, model) : PB_EXIT_OK;
        pb_trace_stats ts = pb_trace_summary(&t);
        if (!rc2) printf("%s: ok, %lld requests over %.2f s\n", check, (long long)ts.n, ts.duration_s);
        pb_trace_free(&t);
        return rc2;
    }
    if (from || format) {
        pb_trace_from_opts fo = {format, 0, 0, 0, {0}, tokenizer, bos, cols[0], cols[1], cols[2], cols[3], cols[4]};
        bool append = false;
        pb_filter_by_name("none", &fo.filter);
        if (!from || !format) rc = bad_opt(from ? "--from" : "--format", "--from FILE needs --format " PB_FROM_FORMATS, NULL);
        for (int i = 0; i < nopt && rc == PB_EXIT_OK; i++) {
            int64_t x;
            const char *v = vals[i];
            switch (codes[i]) {
            case O_RATE: rc = parse_num_opt("--rate", v, 0, &fo.rate); break;
            case O_NUM: rc = parse_int_opt("--num", v, 0, 1000000000, &fo.num); break;
            case O_SEED:
                if (!pb_parse_int(v, &x) || x < 0) rc = bad_opt("--seed", "expected an integer >= 0", v);
                else fo.seed = (uint64_t)x;
                break;
            case O_FILTER:
                if (pb_filter_by_name(v, &fo.filter)) rc = bad_opt("--filter", "expected " PB_FILTER_NAMES, v);
                break;
            case O_HISTORY: append = !strcmp(v, "append"); break;
            default:
                rc = pb_cli_fail(&CLI, "--from takes --rate, --num, --seed, --filter, --tokenizer, --no-bos, the "
                                       "--*-column mapping, --history and -o only");
            }
        }
        free(codes);
        free(vals);
        return rc ? rc : trace_from(from, &fo, append, model, output);
    }
    if (model) {
        free(codes);
        free(vals);
        return bad_opt("--model", "goes with --from or --check", model);
    }
    if (config) {
        pb_config *cf = NULL;
        pb_cfg_err e;
        pb_cfg_err_clear(&e);
        if (pb_config_load(config, &cf, &e) ||
            pb_workload_from_node(pb_node_get(pb_config_root(cf), "workload"), &c, &e)) {
            fprintf(stderr, "%s\n", e.msg);
            pb_config_destroy(cf);
            free(codes);
            free(vals);
            return PB_EXIT_USAGE;
        }
        pb_config_destroy(cf);
    }
    /* pass 2: the options, in order, over the config */
    uint64_t seed = 0;
    bool dur_set = false, num_set = false, burst_set = false, rate_set = false;
    for (int i = 0; i < nopt && rc == PB_EXIT_OK; i++) {
        const char *v = vals[i];
        int64_t x;
        double y;
        switch (codes[i]) {
        case O_DATASET: rc = copy_opt("--dataset", v, c.dataset, sizeof c.dataset); break;
        case O_RATE: if (!(rc = parse_num_opt("--rate", v, 0, &y))) c.arrivals.rate = y; rate_set = true; break;
        case O_DURATION: if (!(rc = parse_num_opt("--duration", v, 0, &y))) c.arrivals.duration_s = y; dur_set = true; break;
        case O_NUM: if (!(rc = parse_int_opt("--num", v, 0, 1000000000, &x))) c.arrivals.num = x; num_set = true; break;
        case O_SEED:
            if (!pb_parse_int(v, &x) || x < 0) rc = bad_opt("--seed", "expected an integer >= 0", v);
            else seed = (uint64_t)x;
            break;
        case O_ARRIVALS:
            if (pb_arrival_kind_by_name(v, &c.arrivals.kind)) rc = bad_opt("--arrivals", "expected " PB_ARRIVAL_NAMES, v);
            break;
        case O_QUANTUM: if (!(rc = parse_num_opt("--quantum", v, 1e-6, &y))) c.arrivals.quantum_s = y; break;
        case O_BURSTINESS:
            if (!(rc = parse_num_opt("--burstiness", v, 0, &y)) && !(y > 0)) rc = bad_opt("--burstiness", "expected a number > 0", v);
            if (!rc) c.arrivals.burstiness = y;
            burst_set = true;
            break;
        case O_RAMP:
            if (pb_ramp_kind_by_name(v, &c.arrivals.ramp) || c.arrivals.ramp == PB_RAMP_NONE)
                rc = bad_opt("--ramp", "expected linear or exponential", v);
            break;
        case O_RAMP_START: if (!(rc = parse_num_opt("--ramp-start", v, 0, &y))) c.arrivals.ramp_start = y; break;
        case O_RAMP_END: if (!(rc = parse_num_opt("--ramp-end", v, 0, &y))) c.arrivals.ramp_end = y; break;
        case O_FILTER: {
            pb_length_filter f;
            if (pb_filter_by_name(v, &f)) rc = bad_opt("--filter", "expected " PB_FILTER_NAMES, v);
            else rc = copy_opt("--filter", v, c.filter, sizeof c.filter);
            break;
        }
        case O_FILE: rc = copy_opt("--file", v, c.file, sizeof c.file); break;
        case O_REPLAY: rc = copy_opt("--replay-file", v, c.replay_file, sizeof c.replay_file); break;
        case O_N: if (!(rc = parse_int_opt("--n", v, 1, 4096, &x))) c.n = (int32_t)x; break;
        case O_BEAM: if (!(rc = parse_int_opt("--beam", v, 1, 4096, &x))) c.beam_width = (int32_t)x; break;
        case O_HISTORY: c.history_append = !strcmp(v, "append"); break;
        case O_PREFIX:
            if (!strcmp(v, "1shot")) c.shots = 1;
            else if (!strcmp(v, "5shot")) c.shots = 5;
            else if (!strcmp(v, "none")) c.prefix_len = 0;
            else if (!(rc = parse_int_opt("--prefix", v, 0, 1 << 20, &x))) c.prefix_len = (int32_t)x;
            break;
        }
    }
    free(codes);
    free(vals);
    if (rc) return rc;
    if (num_set && !dur_set && !config) c.arrivals.duration_s = 0;
    if (burst_set && c.arrivals.kind != PB_ARRIVALS_GAMMA) return pb_cli_fail(&CLI, "--burstiness goes with --arrivals gamma");
    if (c.arrivals.ramp != PB_RAMP_NONE && rate_set) return pb_cli_fail(&CLI, "--ramp sets the rate: leave --rate out");
    if (c.arrivals.ramp == PB_RAMP_NONE && (c.arrivals.ramp_start > 0 || c.arrivals.ramp_end > 0))
        return pb_cli_fail(&CLI, "--ramp-start and --ramp-end need --ramp linear or exponential");
    if (!c.dataset[0] && !c.trace[0]) {
        return pb_cli_fail(&CLI, "--dataset is required (%s)", PB_DATASET_NAMES);
    }
    if (strcmp(c.dataset, "translation") && c.shots != 1) {
        return pb_cli_fail(&CLI, "--prefix 1shot/5shot is only for --dataset translation");
    }
    if (!strcmp(c.dataset, "translation") && c.prefix_len) {
        return pb_cli_fail(&CLI, "translation takes --prefix 1shot or 5shot");
    }
    if (c.n > 1 && c.beam_width > 1) {
        return pb_cli_fail(&CLI, "--n and --beam are exclusive (beam search sets n = beam width)");
    }
    if (c.history_append && !c.trace[0])
        return pb_cli_fail(&CLI, "--history append needs conversations whose prompts hold only their own tokens: "
                                 "--from csv with a conversation_id column, or --config with a `trace:` (the chatbot "
                                 "dataset's prompts hold their history already)");
    pb_trace t = {0};
    char err[1024];
    pb_status st = pb_workload_generate(&c, seed, &t, err, sizeof err);
    if (st) {
        fprintf(stderr, "pagedbench trace: %s\n", err);
        return st == PB_ERR_IO ? PB_EXIT_RUNTIME : PB_EXIT_USAGE;
    }
    char desc[2048];
    pb_workload_describe(&c, desc, sizeof desc);
    print_summary(desc, &t);
    return emit_trace(&t, output);
}
