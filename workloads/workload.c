/* workload.c -- the `workload:` config section and trace generation (see workload.h). */
#include "workload.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "beam_tables.h"
#include "trace_io.h"

/* ---- datasets ---- */
typedef struct {
    const char *name;
    const char *table, *table5;     /* built-in tables (table5: 5-shot translation)      */
    const char *file;               /* standard exact file under ../shared/data          */
    const char *in_col, *in_col5, *out_col;
    const char *filter;             /* default filter                                    */
} ds_spec;

static const ds_spec SPECS[] = {
    {"sharegpt", "sharegpt", NULL, "sharegpt/vllm_sosp23_sharegpt_opt_lengths.csv", "input_len", NULL,
     "output_len", "paper"},
    {"alpaca", "alpaca", NULL, "alpaca/alpaca_opt_lengths.csv", "input_len", NULL, "output_len", "paper"},
    {"translation", "wmt_1shot", "wmt_5shot", "wmt/newstest2014_en_de_token_lengths.csv",
     "input_len_1shot_llama", "input_len_5shot_llama", "de_llama_tokens", "none"},
    {"chatbot", "sharegpt", NULL, "sharegpt/vllm_sosp23_sharegpt_opt_lengths.csv", "input_len", NULL,
     "output_len", "none"},
    {"azure_conv", "azure_conv", NULL, "azure_llm_trace/AzureLLMInferenceTrace_conv.csv", "ContextTokens",
     NULL, "GeneratedTokens", "none"},
    {"azure_code", "azure_code", NULL, "azure_llm_trace/AzureLLMInferenceTrace_code.csv", "ContextTokens",
     NULL, "GeneratedTokens", "none"},
};

static const ds_spec *find_spec(const char *name) {
    for (size_t i = 0; i < PB_ARRAY_LEN(SPECS); i++)
        if (!strcmp(SPECS[i].name, name)) return &SPECS[i];
    return NULL;
}

int32_t pb_translation_prefix_len(int32_t shots) {
    /* LLaMA tokens with BOS: 1-shot 80, 5-shot 341; shared part rounded down to 16 */
    return shots == 1 ? 80 : shots == 5 ? 336 : 0;
}

/* ---- schema: every key of `workload:`, declared once (config.h pb_key) ---- */
#define BY_DATASET "the dataset's (workloads/workload.c)"

static const pb_key chat_schema[] = {
    {.name = "max_prompt", .type = PB_T_INT, .lo = 1, .hi = 1 << 20, .dflt = "1024",
     .doc = "prompt = the last max_prompt tokens of history + query (the artifact's)"},
    {.name = "max_output", .type = PB_T_INT, .lo = 1, .hi = 1 << 20, .dflt = "1016",
     .doc = "output capped at this many tokens (the artifact's: 2048 - max_prompt - 8)"},
    {.name = "mean_turns", .type = PB_T_NUM, .lo = 1, .hi = 1000, .dflt = "3.51",
     .doc = "mean turns per conversation, geometric (ShareGPT's)"},
    {.name = "new_conversation_prob", .type = PB_T_NUM, .lo = 0, .hi = 1, .dflt = "0.1",
     .doc = "probability that an arrival starts a new conversation (the artifact's)"},
    {0}};

static const pb_key ramp_schema[] = {
    {.name = "shape", .type = PB_T_ENUM, .required = true, .choices = "linear|exponential",
     .doc = "linear: start + (end - start) p; exponential: start (end / start)^p (p: progress 0..1)"},
    {.name = "start_rate", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e9,
     .doc = "requests per second at the start"},
    {.name = "end_rate", .type = PB_T_NUM, .required = true, .lo = 0, .hi = 1e9, .doc = "requests per second at the end"},
    {0}};

static const pb_key conversation_schema[] = {
    {.name = "think_time_s", .type = PB_T_NUM, .lo = 0, .hi = 1e9, .dflt = "0",
     .doc = "wait after a turn's answer before its conversation's next turn is sent, s"},
    {.name = "think", .type = PB_T_ENUM, .choices = PB_THINK_NAMES, .dflt = "fixed",
     .doc = "fixed: think_time_s; exponential: its mean (drawn per turn from the seed)"},
    {.name = "history", .type = PB_T_ENUM, .choices = "as_given|append", .dflt = "as_given",
     .doc = "as_given: a turn's prompt holds the conversation so far (the chatbot dataset's); append: the "
            "previous turn's prompt + output are added to it"},
    {0}};

const pb_key pb_workload_schema[] = {
    {.name = "dataset", .type = PB_T_ENUM, .choices = PB_DATASET_NAMES, .dflt_rule = "none (then `trace:` is required)",
     .doc = "which lengths"},
    {.name = "file", .type = PB_T_STR, .dflt = "",
     .doc = "exact lengths CSV: auto (../shared/data when present) or a path; '' = the built-in distribution"},
    {.name = "input_column", .type = PB_T_STR, .dflt_rule = BY_DATASET, .doc = "input-length column of file"},
    {.name = "output_column", .type = PB_T_STR, .dflt_rule = BY_DATASET, .doc = "output-length column of file"},
    {.name = "filter", .type = PB_T_ENUM, .choices = PB_FILTER_NAMES, .dflt_rule = BY_DATASET,
     .doc = "length filter (paper: in+out < 2048; vllm: benchmark filter)"},
    {.name = "arrivals", .type = PB_T_ENUM, .choices = PB_ARRIVAL_NAMES, .dflt = "poisson",
     .doc = "arrival process (poisson: in quanta of quantum_s)"},
    {.name = "rate", .type = PB_T_NUM, .lo = 0, .hi = 1e9, .dflt_rule = "none (poisson, exponential and gamma need one)",
     .doc = "requests per second"},
    {.name = "burstiness", .type = PB_T_NUM, .lo = 1e-3, .hi = 1e3, .dflt = "1",
     .doc = "gamma arrivals: the gaps' shape, vLLM's --burstiness (1 = exponential, < 1 burstier; CV 1/sqrt)"},
    {.name = "ramp", .type = PB_T_MAP, .sub = ramp_schema,
     .doc = "rate ramp over the run instead of rate (vLLM's --ramp-up-strategy; arrivals.h)"},
    {.name = "duration_s", .type = PB_T_NUM, .lo = 0, .hi = 1e9,
     .dflt_rule = PB_XSTR(PB_WL_DURATION_S) ", or 0 (none) when num_requests is given", .doc = "trace length, s"},
    {.name = "num_requests", .type = PB_T_INT, .lo = 0, .hi = 1e9, .dflt = "0",
     .doc = "number of requests (0 = by duration)"},
    {.name = "quantum_s", .type = PB_T_NUM, .lo = 1e-6, .hi = 3600, .dflt = "0.01", .doc = "poisson time quantum, s"},
    {.name = "replay_file", .type = PB_T_STR, .dflt = "auto",
     .doc = "replay: Azure trace CSV with TIMESTAMP (auto = the dataset's own, else the conversation trace)"},
    {.name = "n", .type = PB_T_INT, .lo = 1, .hi = 4096, .dflt = "1", .doc = "parallel samples per request"},
    {.name = "beam_width", .type = PB_T_INT, .lo = 1, .hi = 4096, .dflt = "1", .doc = "beam search width (1 = none)"},
    {.name = "beam_scores", .type = PB_T_ENUM, .choices = PB_BEAM_SCORES_NAMES, .dflt = "synthetic",
     .doc = "beam search's next-token scores without a real model: synthetic (engine/beam.h) or a table "
            "measured from a language model (workloads/beam_tables.h)"},
    {.name = "shots", .type = PB_T_ENUM, .choices = "1|5", .dflt = "1",
     .doc = "translation: 1-shot (80 tokens) or 5-shot (341) prefix"},
    {.name = "prefix_len", .type = PB_T_INT, .lo = 0, .hi = 1 << 20, .dflt = "0",
     .doc = "synthetic shared prefix tokens (not translation)"},
    {.name = "chat", .type = PB_T_MAP, .sub = chat_schema, .doc = "chatbot conversation model"},
    {.name = "trace", .type = PB_T_STR, .dflt = "", .doc = "replay this trace CSV instead of generating ('' = generate)"},
    {.name = "conversation", .type = PB_T_MAP, .sub = conversation_schema,
     .doc = "closed-loop conversations: a turn is sent think_time_s after the previous turn's answer (client.h)"},
    {.name = "max_concurrency", .type = PB_T_INT, .lo = 0, .hi = 1e6, .dflt = "0",
     .doc = "at most this many requests outstanding, the next sent at a finish (vLLM's --max-concurrency; 0 = none)"},
    {0}};

/* A string key into dst: its value, else its declared default (derived: ""). */
static pb_status copy_str(char *dst, size_t n, const pb_node *root, const char *key, pb_cfg_err *err) {
    const pb_key *k = pb_schema_find(pb_workload_schema, key);
    const char *v = k->dflt ? pb_schema_str(pb_workload_schema, root, key)
                            : pb_schema_str_or(pb_workload_schema, root, key, "");
    if (strlen(v) >= n) return pb_cfg_fail(err, pb_node_get(root, key), false, "workload.%s: too long (max %zu)", key, n - 1);
    snprintf(dst, n, "%s", v);
    return PB_OK;
}

/* Every key of n (NULL: none given) into c, from the declarations above. */
static pb_status read_keys(const pb_node *n, pb_workload_cfg *c, pb_cfg_err *err) {
    const pb_key *S = pb_workload_schema;
    memset(c, 0, sizeof *c);
    pb_status s = PB_OK;
    s |= copy_str(c->dataset, sizeof c->dataset, n, "dataset", err);
    s |= copy_str(c->file, sizeof c->file, n, "file", err);
    s |= copy_str(c->input_column, sizeof c->input_column, n, "input_column", err);
    s |= copy_str(c->output_column, sizeof c->output_column, n, "output_column", err);
    s |= copy_str(c->filter, sizeof c->filter, n, "filter", err);
    s |= copy_str(c->replay_file, sizeof c->replay_file, n, "replay_file", err);
    s |= copy_str(c->trace, sizeof c->trace, n, "trace", err);
    s |= copy_str(c->beam_scores, sizeof c->beam_scores, n, "beam_scores", err);
    pb_arrival_kind_by_name(pb_schema_str(S, n, "arrivals"), &c->arrivals.kind);   /* validated */
    c->arrivals.rate = pb_schema_num_or(S, n, "rate", 0);
    c->arrivals.num = pb_schema_int(S, n, "num_requests");
    c->arrivals.duration_s = pb_schema_num_or(S, n, "duration_s", c->arrivals.num > 0 ? 0 : PB_WL_DURATION_S);
    c->arrivals.quantum_s = pb_schema_num(S, n, "quantum_s");
    c->arrivals.burstiness = pb_schema_num(S, n, "burstiness");
    if (pb_node_has(n, "ramp")) {   /* its keys are required */
        pb_ramp_kind_by_name(pb_schema_str(S, n, "ramp.shape"), &c->arrivals.ramp);   /* validated */
        c->arrivals.ramp_start = pb_schema_num(S, n, "ramp.start_rate");
        c->arrivals.ramp_end = pb_schema_num(S, n, "ramp.end_rate");
    }
    c->n = (int32_t)pb_schema_int(S, n, "n");
    c->beam_width = (int32_t)pb_schema_int(S, n, "beam_width");
    c->shots = (int32_t)pb_schema_int(S, n, "shots");
    c->prefix_len = (int32_t)pb_schema_int(S, n, "prefix_len");
    c->chat_max_prompt = (int32_t)pb_schema_int(S, n, "chat.max_prompt");
    c->chat_max_output = (int32_t)pb_schema_int(S, n, "chat.max_output");
    c->chat_mean_turns = pb_schema_num(S, n, "chat.mean_turns");
    c->chat_new_prob = pb_schema_num(S, n, "chat.new_conversation_prob");
    c->client.closed_loop = pb_node_has(n, "conversation");
    c->client.think_time_s = pb_schema_num(S, n, "conversation.think_time_s");
    pb_think_kind_by_name(pb_schema_str(S, n, "conversation.think"), &c->client.think);   /* validated */
    c->history_append = !strcmp(pb_schema_str(S, n, "conversation.history"), "append");
    c->client.max_concurrency = (int32_t)pb_schema_int(S, n, "max_concurrency");
    return s ? PB_ERR_INVALID : PB_OK;
}

void pb_workload_defaults(pb_workload_cfg *c) { PB_ASSERT(read_keys(NULL, c, NULL) == PB_OK); }

pb_status pb_workload_from_node(const pb_node *n, pb_workload_cfg *out, pb_cfg_err *err) {
    pb_workload_defaults(out);
    if (!n) return PB_OK;
    if (n->kind != PB_NODE_MAP) return pb_cfg_fail(err, n, false, "workload: expected a map of keys");
    if (pb_config_validate(n, pb_workload_schema, "workload", err)) return PB_ERR_INVALID;
    pb_status s = read_keys(n, out, err);
    if (s) return PB_ERR_INVALID;

    /* cross-key rules */
    if (!out->dataset[0] && !out->trace[0])
        s |= pb_cfg_fail(err, n, true, "workload: needs `dataset:` (%s) or `trace:`", PB_DATASET_NAMES);
    if (out->trace[0])   /* the trace file gives every request: a generation key would change nothing */
        for (int i = 0; i < n->n_kids; i++)
            if (strcmp(n->kids[i]->key, "trace") && strcmp(n->kids[i]->key, "conversation") &&
                strcmp(n->kids[i]->key, "max_concurrency"))
                s |= pb_cfg_fail(err, n->kids[i], true,
                                 "workload.%s: not read with `trace:` (the trace file gives every request, its "
                                 "arrivals and lengths); remove one of them", n->kids[i]->key);
    static const char *const PATHS[] = {"file", "replay_file", "trace"};
    for (size_t i = 0; i < PB_ARRAY_LEN(PATHS); i++)
        if (!strcmp(pb_node_str(n, PATHS[i], ""), "-"))
            s |= pb_cfg_fail(err, pb_node_get(n, PATHS[i]), false,
                             "workload.%s: '-' (standard input) cannot be named in a config: every point reads the "
                             "file (name a file)", PATHS[i]);
    if (out->n > 1 && out->beam_width > 1)
        s |= pb_cfg_fail(err, pb_node_get(n, "beam_width"), true,
                         "workload.beam_width: beam search and parallel sampling (n: %d) are exclusive", out->n);
    const pb_beam_table *bt = pb_beam_table_by_name(out->beam_scores);
    if (bt && out->beam_width > bt->n_top / 2)
        s |= pb_cfg_fail(err, pb_node_get(n, "beam_width"), true,
                         "workload.beam_width: at most %d with beam_scores %s (its rows hold %d candidates)",
                         bt->n_top / 2, out->beam_scores, bt->n_top);
    bool translation = !strcmp(out->dataset, "translation");
    if (pb_node_has(n, "shots") && !translation)
        s |= pb_cfg_fail(err, pb_node_get(n, "shots"), true, "workload.shots: only for dataset translation");
    if (pb_node_has(n, "prefix_len") && translation)
        s |= pb_cfg_fail(err, pb_node_get(n, "prefix_len"), true,
                         "workload.prefix_len: translation has its own prefix (use shots: 1 or 5)");
    if (pb_node_has(n, "chat") && strcmp(out->dataset, "chatbot"))
        s |= pb_cfg_fail(err, pb_node_get(n, "chat"), true, "workload.chat: only for dataset chatbot");
    if (out->arrivals.kind == PB_ARRIVALS_BURST && out->arrivals.num <= 0 && !out->trace[0])
        s |= pb_cfg_fail(err, n, true, "workload: burst arrivals need num_requests > 0");
    if (pb_node_has(n, "burstiness") && out->arrivals.kind != PB_ARRIVALS_GAMMA)
        s |= pb_cfg_fail(err, pb_node_get(n, "burstiness"), true, "workload.burstiness: only with arrivals: gamma");
    if (out->arrivals.ramp != PB_RAMP_NONE) {
        const pb_node *rn = pb_node_get(n, "ramp");
        pb_arrival_kind k = out->arrivals.kind;
        if (pb_node_has(n, "rate"))
            s |= pb_cfg_fail(err, pb_node_get(n, "rate"), true,
                             "workload.rate: the ramp sets the rate (ramp.start_rate to ramp.end_rate); leave rate out");
        if (k == PB_ARRIVALS_BURST || k == PB_ARRIVALS_REPLAY)
            s |= pb_cfg_fail(err, rn, true, "workload.ramp: needs arrivals poisson, exponential or gamma (not %s)",
                             pb_arrival_kind_name(k));
        if (out->arrivals.ramp == PB_RAMP_EXPONENTIAL && !(out->arrivals.ramp_start > 0 && out->arrivals.ramp_end > 0))
            s |= pb_cfg_fail(err, rn, true, "workload.ramp: an exponential ramp needs start_rate and end_rate > 0");
        else if (!(out->arrivals.ramp_start + out->arrivals.ramp_end > 0))
            s |= pb_cfg_fail(err, rn, true, "workload.ramp: start_rate and end_rate cannot both be 0");
        if (k == PB_ARRIVALS_POISSON && !(out->arrivals.duration_s > 0))
            s |= pb_cfg_fail(err, rn, true, "workload.ramp: poisson arrivals ramp over duration_s (set it, or use "
                                            "arrivals: exponential to ramp over num_requests)");
        if (out->arrivals.ramp == PB_RAMP_LINEAR && !(out->arrivals.duration_s > 0) &&
            !(out->arrivals.ramp_start > 0 && out->arrivals.ramp_end > 0))
            s |= pb_cfg_fail(err, rn, true, "workload.ramp: a linear ramp over num_requests needs rates > 0 (a rate of "
                                            "0 has no next arrival); set duration_s");
    }
    if (out->client.closed_loop && !out->trace[0] && strcmp(out->dataset, "chatbot"))
        s |= pb_cfg_fail(err, pb_node_get(n, "conversation"), true,
                         "workload.conversation: needs rows with a conversation_id: dataset chatbot or a `trace:` file "
                         "(dataset %s has none)", out->dataset);
    if (out->history_append && !strcmp(out->dataset, "chatbot"))
        s |= pb_cfg_fail(err, pb_node_get(n, "conversation.history"), true,
                         "workload.conversation.history: append would add the history twice: the chatbot dataset's "
                         "prompts hold it already (as_given)");
    if (pb_node_has(n, "replay_file") && out->arrivals.kind != PB_ARRIVALS_REPLAY)
        s |= pb_cfg_fail(err, pb_node_get(n, "replay_file"), true,
                         "workload.replay_file: only with arrivals: replay");
    return s ? PB_ERR_INVALID : PB_OK;
}

/* ---- files ---- */
/* Something at p: a regular file, or anything else the reader then refuses by name
   (pb_input_open: a directory, FIFO or device is an error, never a fallback). */
static bool file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* An explicit `file:` (not auto) that is not there: "path: not found ...", PB_ERR_IO. */
static pb_status file_missing(const pb_workload_cfg *cfg, char *err, size_t errlen) {
    snprintf(err, errlen, "%s: not found (as given, or under the shared data folder %s); `file: auto` or no "
             "`file:` uses the built-in distribution", cfg->file, pb_workload_data_dir() ? pb_workload_data_dir() : "(none)");
    return PB_ERR_IO;
}

const char *pb_workload_data_dir(void) {
    static char buf[PB_WL_PATH];
    const char *env = getenv("PAGEDBENCH_SHARED_DATA");
    struct stat st;
    if (env && *env) return stat(env, &st) == 0 && S_ISDIR(st.st_mode) ? env : NULL;
#ifdef PB_SOURCE_DIR
    snprintf(buf, sizeof buf, "%s/../shared/data", PB_SOURCE_DIR);
    if (stat(buf, &st) == 0 && S_ISDIR(st.st_mode)) return buf;
#endif
    return NULL;
}

/* A file: as given when it exists, else under the shared data folder; NULL if neither. */
static const char *find_file(const char *p, char *buf, size_t n) {
    if (file_exists(p)) { snprintf(buf, n, "%s", p); return buf; }
    const char *dd = pb_workload_data_dir();
    if (p[0] != '/' && dd) {
        snprintf(buf, n, "%s/%s", dd, p);
        if (file_exists(buf)) return buf;
    }
    return NULL;
}

const char *pb_workload_resolve_file(const pb_workload_cfg *cfg, char *buf, size_t n) {
    const ds_spec *sp = find_spec(cfg->dataset);
    if (!cfg->file[0] || !sp) return NULL;
    if (!strcmp(cfg->file, "auto")) {
        const char *dd = pb_workload_data_dir();
        if (!dd) return NULL;
        snprintf(buf, n, "%s/%s", dd, sp->file);
        return file_exists(buf) ? buf : NULL;
    }
    return find_file(cfg->file, buf, n);
}

/* The timestamps file of arrivals: replay, as named: replay_file, or (absent / auto)
 * the dataset's own azure file, else the conversation trace. */
static const char *replay_name(const pb_workload_cfg *cfg) {
    const ds_spec *sp = find_spec(cfg->dataset);
    bool azure = sp && !strncmp(sp->name, "azure_", 6);
    const char *dflt = azure ? sp->file : "azure_llm_trace/AzureLLMInferenceTrace_conv.csv";
    return !cfg->replay_file[0] || !strcmp(cfg->replay_file, "auto") ? dflt : cfg->replay_file;
}

const char *pb_workload_resolve_replay_file(const pb_workload_cfg *cfg, char *buf, size_t n) {
    if (cfg->arrivals.kind != PB_ARRIVALS_REPLAY) return NULL;
    return find_file(replay_name(cfg), buf, n);
}

pb_status pb_workload_check_files(const pb_workload_cfg *cfg, const char **key, char *err, size_t errlen) {
    *key = cfg->trace[0] ? "trace" : "file";
    if (cfg->trace[0]) {
        pb_trace t = {0};
        pb_status st = pb_trace_read_csv(cfg->trace, &t, err, errlen);
        pb_trace_free(&t);
        return st;
    }
    const ds_spec *sp = find_spec(cfg->dataset);
    if (!sp) return PB_OK;   /* pb_workload_from_node reported it */
    char path[PB_WL_PATH];
    const char *file = pb_workload_resolve_file(cfg, path, sizeof path);
    if (!file && cfg->file[0] && strcmp(cfg->file, "auto")) return file_missing(cfg, err, errlen);
    if (file) {
        bool five = !strcmp(sp->name, "translation") && cfg->shots == 5;
        const char *ic = cfg->input_column[0] ? cfg->input_column : five ? sp->in_col5 : sp->in_col;
        const char *oc = cfg->output_column[0] ? cfg->output_column : sp->out_col;
        pb_dataset *d = NULL;
        pb_status st = pb_dataset_load_csv(file, ic, oc, &d, err, errlen);
        pb_dataset_destroy(d);
        if (st) return st;
    }
    if (cfg->arrivals.kind == PB_ARRIVALS_REPLAY) {
        *key = "replay_file";
        const char *rf = replay_name(cfg);
        char rpath[PB_WL_PATH];
        const char *rp = find_file(rf, rpath, sizeof rpath);
        if (!rp) {
            snprintf(err, errlen, "replay needs the timestamps file %s (not found here or under ../shared/data)", rf);
            return PB_ERR_IO;
        }
        double *ts = NULL;
        int64_t n = 0;
        pb_status st = pb_arrivals_read_azure(rp, &ts, &n, err, errlen);
        if (!st && cfg->arrivals.rate > 0 && (n < 2 || !(ts[n - 1] > ts[0]))) {   /* as pb_arrivals_generate */
            snprintf(err, errlen, "%s: cannot rescale a replay of %s to a rate (%lld timestamp%s)", rp,
                     n < 2 ? "one request" : "one instant", (long long)n, n == 1 ? "" : "s");
            st = PB_ERR_INVALID;
        }
        free(ts);
        if (st) return st;
    }
    return PB_OK;
}

/* ---- generation ---- */
#define BAD(...) do { snprintf(err, errlen, __VA_ARGS__); st = PB_ERR_INVALID; goto done; } while (0)

static void build_chat(const pb_workload_cfg *c, const double *t, int64_t N, const int32_t *q,
                       const int32_t *r, pb_rng *rng, pb_trace *out, int64_t *cap) {
    int32_t *prompt = pb_xmalloc((size_t)(N ? N : 1) * sizeof *prompt);
    int32_t *outl = pb_xmalloc((size_t)(N ? N : 1) * sizeof *outl);
    int64_t *start = pb_xmalloc((size_t)(N ? N : 1) * sizeof *start);
    int32_t *turns = pb_xmalloc((size_t)(N ? N : 1) * sizeof *turns);
    int32_t *hist = pb_xmalloc((size_t)(N ? N : 1) * sizeof *hist);   /* history sent whole, else 0 */
    int64_t nconv = 0;
    double p = 1.0 / c->chat_mean_turns;
    int64_t hist_max = 2 * (int64_t)c->chat_max_prompt;
    for (int64_t k = 0; k < N;) {
        int64_t T = 1;
        if (p < 1) {
            double u = 1.0 - pb_rng_uniform(rng);                     /* (0, 1] */
            double g = floor(log(u) / log1p(-p));
            T += g < (double)N ? (int64_t)g : N;
        }
        if (T > N - k) T = N - k;
        int64_t h = 0;
        for (int64_t j = 0; j < T; j++) {
            int64_t i = k + j;
            prompt[i] = (int32_t)PB_MIN(h + q[i], (int64_t)c->chat_max_prompt);
            hist[i] = h + q[i] <= c->chat_max_prompt ? (int32_t)h : 0;
            outl[i] = PB_MIN(r[i], c->chat_max_output);
            h = PB_MIN(h + q[i] + r[i], hist_max);
        }
        start[nconv] = k;
        turns[nconv] = (int32_t)T;
        nconv++;
        k += T;
    }
    /* shuffle the conversations (ids are their creation order) */
    int64_t *unstarted = pb_xmalloc((size_t)(nconv ? nconv : 1) * sizeof *unstarted);
    for (int64_t i = 0; i < nconv; i++) unstarted[i] = i;
    for (int64_t i = nconv - 1; i > 0; i--) {
        int64_t j = (int64_t)pb_rng_below(rng, (uint64_t)i + 1);
        int64_t x = unstarted[i]; unstarted[i] = unstarted[j]; unstarted[j] = x;
    }
    int64_t n_un = nconv, n_open = 0;
    int64_t *open = pb_xmalloc((size_t)(nconv ? nconv : 1) * sizeof *open);
    int32_t *next = pb_xcalloc((size_t)(nconv ? nconv : 1), sizeof *next);
    for (int64_t i = 0; i < N; i++) {
        double u = pb_rng_uniform(rng);
        int64_t cv;
        if ((u < c->chat_new_prob && n_un > 0) || n_open == 0) {
            PB_ASSERT(n_un > 0);
            int64_t j = (int64_t)pb_rng_below(rng, (uint64_t)n_un);
            cv = unstarted[j];
            unstarted[j] = unstarted[--n_un];
            if (turns[cv] > 1) open[n_open++] = cv;
        } else {
            int64_t j = (int64_t)pb_rng_below(rng, (uint64_t)n_open);
            cv = open[j];
            if (next[cv] + 1 >= turns[cv]) open[j] = open[--n_open];
        }
        int32_t turn = next[cv]++;
        int64_t k = start[cv] + turn;
        pb_request rq = pb_request_make(t[i], prompt[k], outl[k]);
        rq.conversation_id = (int32_t)cv;
        rq.turn = turn;
        rq.prefix_len = hist[k];   /* trace.h: a chatbot row's whole history, 0 if cut */
        pb_trace_push(out, cap, &rq);
    }
    free(prompt); free(outl); free(start); free(turns); free(hist); free(unstarted); free(open); free(next);
}

pb_status pb_workload_generate(const pb_workload_cfg *cfg, uint64_t seed, pb_trace *out, char *err,
                               size_t errlen) {
    out->reqs = NULL;
    out->n = 0;
    if (cfg->trace[0]) {
        pb_status st = pb_trace_read_csv(cfg->trace, out, err, errlen);
        if (st == PB_OK && cfg->history_append) pb_trace_append_history(out);
        return st;
    }

    pb_status st = PB_OK;
    pb_dataset *d = NULL;
    double *replay = NULL, *times = NULL;
    int32_t *in = NULL, *ou = NULL;
    int64_t nrep = 0, N = 0, cap = 0;
    char path[PB_WL_PATH], rpath[PB_WL_PATH];
    const ds_spec *sp = find_spec(cfg->dataset);
    pb_length_filter f;
    if (!cfg->dataset[0]) BAD("workload: no dataset (set workload.dataset: %s, or workload.trace)", PB_DATASET_NAMES);
    if (!sp) BAD("workload: unknown dataset '%s' (%s)", cfg->dataset, PB_DATASET_NAMES);
    if (pb_filter_by_name(cfg->filter[0] ? cfg->filter : sp->filter, &f))
        BAD("workload: unknown filter '%s' (%s)", cfg->filter, PB_FILTER_NAMES);
    bool translation = !strcmp(sp->name, "translation"), chat = !strcmp(sp->name, "chatbot");
    if (translation && cfg->shots != 1 && cfg->shots != 5) BAD("workload: shots must be 1 or 5 (got %d)", cfg->shots);
    if (cfg->n < 1 || cfg->beam_width < 1 || cfg->n > PB_TRACE_MAX_SEQS || cfg->beam_width > PB_TRACE_MAX_SEQS)
        BAD("workload: n and beam_width must be in [1, %d]", PB_TRACE_MAX_SEQS);
    if (cfg->n > 1 && cfg->beam_width > 1) BAD("workload: n and beam_width are exclusive");
    if (cfg->prefix_len < 0) BAD("workload: prefix_len must be >= 0");
    if (chat && (cfg->chat_max_prompt < 1 || cfg->chat_max_output < 1 || !(cfg->chat_mean_turns >= 1) ||
                 !(cfg->chat_new_prob >= 0 && cfg->chat_new_prob <= 1)))
        BAD("workload: bad chat settings");

    /* lengths: the exact file when there is one, else the built-in distribution */
    bool five = translation && cfg->shots == 5;
    const char *file = pb_workload_resolve_file(cfg, path, sizeof path);
    if (file) {
        const char *ic = cfg->input_column[0] ? cfg->input_column : five ? sp->in_col5 : sp->in_col;
        const char *oc = cfg->output_column[0] ? cfg->output_column : sp->out_col;
        if ((st = pb_dataset_load_csv(file, ic, oc, &d, err, errlen))) goto done;
    } else {
        if (cfg->file[0] && strcmp(cfg->file, "auto")) {
            st = file_missing(cfg, err, errlen);
            goto done;
        }
        if (pb_dataset_builtin(five ? sp->table5 : sp->table, &d)) BAD("workload: no built-in table for %s", sp->name);
    }

    /* arrivals */
    pb_rng ra, rl, rc;
    pb_rng_seed(&ra, seed, 1);
    pb_rng_seed(&rl, seed, 2);
    pb_rng_seed(&rc, seed, 3);
    bool aligned = false;
    if (cfg->arrivals.kind == PB_ARRIVALS_REPLAY) {
        bool azure = !strncmp(sp->name, "azure_", 6);
        const char *rf = replay_name(cfg);
        const char *rp = find_file(rf, rpath, sizeof rpath);
        if (!rp) BAD("workload: replay needs the timestamps file %s (not found here or under ../shared/data)", rf);
        if ((st = pb_arrivals_read_azure(rp, &replay, &nrep, err, errlen))) goto done;
        aligned = azure && file && !strcmp(file, rp);
    }
    char why[512];
    if ((st = pb_arrivals_generate(&cfg->arrivals, &ra, replay, nrep, &times, &N, why, sizeof why))) {
        if (replay) snprintf(err, errlen, "workload: %s: %s", rpath, why);   /* the timestamps' file */
        else snprintf(err, errlen, "workload: %s", why);
        goto done;
    }

    /* The trace holds exactly N rows (no growth slack).  Without a chat or an aligned
     * filter (which drop or reorder arrivals) the rows are made from the arrivals
     * first and their array freed before the lengths are drawn, so that the trace
     * and one N-sized temporary are resident at a time (a 3.6M-request trace: 173 +
     * 29 MB, not + 58 MB).  The length arrays are allocated before the arrivals are
     * freed (untouched pages until the draw) so that large ones are mapped, not
     * carved from the heap that the freed arrivals would leave: freed, they go back. */
    in = pb_xmalloc((size_t)(N ? N : 1) * sizeof *in);
    ou = pb_xmalloc((size_t)(N ? N : 1) * sizeof *ou);
    cap = N ? N : 1;
    out->reqs = pb_xmalloc((size_t)cap * sizeof *out->reqs);
    bool rows_first = !chat && !aligned;
    if (rows_first) {
        for (int64_t i = 0; i < N; i++) {
            pb_request r = pb_request_make(times[i], 1, 1);
            pb_trace_push(out, &cap, &r);
        }
        free(times);
        times = NULL;
    }

    /* lengths for every arrival */
    if (aligned) {
        const int32_t *ri, *ro;
        int64_t nr = pb_dataset_rows(d, &ri, &ro);
        PB_ASSERT(N <= nr);
        memcpy(in, ri, (size_t)N * sizeof *in);
        memcpy(ou, ro, (size_t)N * sizeof *ou);
    } else if (N > 0 && pb_dataset_draw(d, &f, N, &rl, in, ou)) {
        BAD("workload: no (input, output) pair of %s passes the filter %s", pb_dataset_name(d), f.name);
    }

    /* requests */
    if (chat) {
        build_chat(cfg, times, N, in, ou, &rc, out, &cap);
    } else {
        int32_t prefix = translation ? pb_translation_prefix_len(cfg->shots) : cfg->prefix_len;
        for (int64_t i = 0; i < N; i++) {
            if (aligned && !pb_filter_keep(&f, in[i], ou[i])) continue;
            if ((int64_t)in[i] + prefix > INT32_MAX) BAD("workload: prompt too long");
            pb_request r = pb_request_make(rows_first ? out->reqs[i].arrival_s : times[i], in[i] + prefix, ou[i]);
            if (prefix > 0) {
                r.prefix_id = 0;
                r.prefix_len = prefix;
            }
            if (rows_first) {
                r.id = i;
                out->reqs[i] = r;
            } else {
                pb_trace_push(out, &cap, &r);
            }
        }
    }
    for (int64_t i = 0; i < out->n; i++) {
        pb_request *r = &out->reqs[i];
        r->beam_width = (int16_t)cfg->beam_width;   /* <= PB_TRACE_MAX_SEQS (schema) */
        r->n = (int16_t)(cfg->beam_width > 1 ? cfg->beam_width : cfg->n);
    }
    if (out->n == 0) BAD("workload: the trace is empty (rate %g, duration %g s, num %lld)", cfg->arrivals.rate,
                         cfg->arrivals.duration_s, (long long)cfg->arrivals.num);
    if (pb_trace_check(out, why, sizeof why)) BAD("workload: generated an invalid trace: %s", why);
done:
    if (st) pb_trace_free(out);
    pb_dataset_destroy(d);
    free(replay);
    free(times);
    free(in);
    free(ou);
    return st;
}

/* ", closed loop (think 5 s fixed, history append), max concurrency 8" or "". */
static void describe_client(const pb_workload_cfg *c, char *buf, size_t n) {
    const pb_client_cfg *k = &c->client;
    size_t len = 0;
    buf[0] = 0;
    if (k->closed_loop)
        len = (size_t)snprintf(buf, n, ", closed loop (think %g s %s, history %s)", k->think_time_s,
                               pb_think_kind_name(k->think), c->history_append ? "append" : "as given");
    if (k->max_concurrency > 0 && len < n) snprintf(buf + len, n - len, ", max concurrency %d", k->max_concurrency);
}

void pb_workload_describe(const pb_workload_cfg *c, char *buf, size_t n) {
    char client[160];
    describe_client(c, client, sizeof client);
    if (c->trace[0]) {
        snprintf(buf, n, "trace %s%s", c->trace, client);
        return;
    }
    const ds_spec *sp = find_spec(c->dataset);
    char path[PB_WL_PATH];
    const char *file = pb_workload_resolve_file(c, path, sizeof path);
    char rate[160], kind[64];
    const pb_arrival_cfg *a = &c->arrivals;
    if (a->ramp != PB_RAMP_NONE)
        snprintf(rate, sizeof rate, "%s ramp %g to %g req/s", pb_ramp_kind_name(a->ramp), a->ramp_start, a->ramp_end);
    else snprintf(rate, sizeof rate, "rate %g", a->rate);
    if (a->kind == PB_ARRIVALS_GAMMA) snprintf(kind, sizeof kind, "gamma (burstiness %g)", a->burstiness);
    else snprintf(kind, sizeof kind, "%s", pb_arrival_kind_name(a->kind));
    snprintf(buf, n, "%s (%s) filter %s, %s arrivals %s duration %g s num %lld, n %d beam %d%s%s%s",
             c->dataset, file ? file : "built-in", c->filter[0] ? c->filter : sp ? sp->filter : "?",
             kind, rate, a->duration_s, (long long)a->num, c->n, c->beam_width,
             !strcmp(c->dataset, "translation") ? (c->shots == 5 ? ", 5-shot prefix" : ", 1-shot prefix") : "",
             c->prefix_len > 0 ? ", shared prefix" : "", client);
}
