/* test_vllm_layout.c -- every point's JSON in vLLM bench serve's --save-result layout.
 *
 * VLLM_NAMES below is this test's own transcription of the fields the pinned writer
 * emits: vllm-project/vllm, vllm/benchmarks/serve.py at commit
 * def9ce85ba1079af970a58ed3d42dd861ae35d58 -- main_async's result_json (setup: date,
 * endpoint_type, backend, label, model_id, tokenizer_id, num_prompts; traffic:
 * request_rate, burstiness, max_concurrency; ramp_up_*), benchmark()'s result (totals,
 * throughputs, the --save-detailed lists, peak throughput and concurrency,
 * rps_change_events) and process_one_metric's mean_/median_/std_/p<P>_<metric>_ms.  It
 * checks that
 *   - vllm_layout.h's table (pb_vllm_fields) names exactly these fields, so none is
 *     forgotten, and says why each one it leaves out does not apply;
 *   - a run with a ramp, an SLO and --requests writes every other field, under vLLM's
 *     name, and no key that is neither vLLM's nor --metadata's (experiment, system, seed,
 *     the sweep axes);
 *   - the values are the point's (CSV) in vLLM's units: latencies ms, ttfts s, duration s;
 *     goodput null without an SLO; the lists have a value per request;
 *   - vLLM's names read as ours (pb_vllm_field_to_ours), so `compare` pairs them.
 * Runs the real binary (PAGEDBENCH_BIN, set by ctest) on the sim executor. */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "pbtest.h"
#include "report.h"        /* pb_csv_table */
#include "vllm_layout.h"

static const char *const VLLM_NAMES[] = {
    "date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts",
    "request_rate", "burstiness", "max_concurrency", "ramp_up_strategy", "ramp_up_start_rps", "ramp_up_end_rps",
    "duration", "completed", "failed", "total_input_tokens", "total_output_tokens", "request_throughput",
    "request_goodput", "output_throughput", "total_token_throughput", "input_lens", "output_lens", "ttfts", "itls",
    "generated_texts", "errors", "max_output_tokens_per_s", "max_concurrent_requests", "rps_change_events",
    "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "std_tpot_ms",
    "p99_tpot_ms", "mean_itl_ms", "median_itl_ms", "std_itl_ms", "p99_itl_ms", "mean_e2el_ms", "median_e2el_ms",
    "std_e2el_ms", "p99_e2el_ms", NULL};
static const char *const METADATA[] = {"experiment", "system", "seed", "request_rate_axis", NULL};

static const pb_vllm_field *field(const char *name) {
    for (const pb_vllm_field *f = pb_vllm_fields; f->name; f++)
        if (!strcmp(f->name, name)) return f;
    return NULL;
}

static bool in(const char *const *list, const char *s) {
    for (; *list; list++)
        if (!strcmp(*list, s)) return true;
    return false;
}

/* vLLM's p<P>_<metric>_ms for a percentile other than the transcribed p99 */
static bool other_percentile(const char *k) {
    static const char *const M[] = {"ttft", "tpot", "itl", "e2el"};
    for (size_t i = 0; i < 4; i++) {
        char suf[16];
        snprintf(suf, sizeof suf, "_%s_ms", M[i]);
        size_t l = strlen(k), s = strlen(suf);
        if (l > s + 1 && k[0] == 'p' && !strcmp(k + l - s, suf) && strspn(k + 1, "0123456789.") == l - s - 1) return true;
    }
    return false;
}

PB_TEST(the_table_names_exactly_vllms_fields) {
    for (const char *const *n = VLLM_NAMES; *n; n++) {
        const pb_vllm_field *f = field(*n);
        if (!f) fprintf(stderr, "  vLLM's %s is not in pb_vllm_fields\n", *n);
        PB_CHECK(f != NULL);
        if (f && f->not_here) PB_CHECK(strlen(f->not_here) > 20);   /* a reason, not a placeholder */
    }
    for (const pb_vllm_field *f = pb_vllm_fields; f->name; f++) {
        if (!in(VLLM_NAMES, f->name)) fprintf(stderr, "  pb_vllm_fields has %s, which vLLM does not write\n", f->name);
        PB_CHECK(in(VLLM_NAMES, f->name));
    }
}

PB_TEST(vllm_names_read_as_ours) {
    static const char *const PAIRS[][2] = {
        {"mean_ttft_ms", "ttft_mean_ms"}, {"median_itl_ms", "itl_p50_ms"}, {"std_e2el_ms", "e2el_std_ms"},
        {"p99_tpot_ms", "tpot_p99_ms"}, {"p99.9_itl_ms", "itl_p99.9_ms"}, {"p25_e2el_ms", "e2el_p25_ms"},
        {"request_throughput", "request_throughput_per_s"}, {"request_goodput", "goodput_per_s"},
        {"total_input_tokens", "input_tokens"}, {"duration", "duration_s"}, {"completed", "n_finished"}};
    for (size_t i = 0; i < sizeof PAIRS / sizeof PAIRS[0]; i++) {
        char buf[64] = "";
        PB_CHECK(pb_vllm_field_to_ours(PAIRS[i][0], buf, sizeof buf));
        PB_CHECK(!strcmp(buf, PAIRS[i][1]));
    }
    char buf[64];
    PB_CHECK(!pb_vllm_field_to_ours("date", buf, sizeof buf));
    PB_CHECK(!pb_vllm_field_to_ours("label", buf, sizeof buf));
}

static const char *YAML =
    "name: vl_t\nfigure: vl_t\nmodel: opt-13b\nhardware: a100-40gb\n"
    "slo: {ttft_ms: 500, tpot_ms: 60, e2el_ms: 20000}\n"
    "workload:\n  dataset: alpaca\n  arrivals: gamma\n  burstiness: 0.5\n  duration_s: 40\n"
    "  ramp: {shape: linear, start_rate: 1, end_rate: 6}\n"
    "sweep:\n  - {axis: request_rate_axis, set: workload.ramp.end_rate, values: [4, 8]}\n"
    "systems:\n  - {name: vllm, label: vLLM, type: vllm}\n";

static const char *cellv(const pb_csv_table *t, int r, const char *col) {
    int c = pb_csv_table_col(t, col);
    return c < 0 ? "" : t->rows[r][c];
}

PB_TEST(a_points_json_holds_every_field_that_applies) {
    const char *bin = getenv("PAGEDBENCH_BIN");
    if (!bin || !*bin) PB_SKIP("PAGEDBENCH_BIN not set (run through ctest)");
    char dir[] = "/tmp/pb_vllm_XXXXXX";
    PB_REQUIRE(mkdtemp(dir));
    char path[512], cmd[2048];
    snprintf(path, sizeof path, "%s/v.yaml", dir);
    FILE *f = fopen(path, "w");
    PB_REQUIRE(f);
    fputs(YAML, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "'%s' run '%s' --results '%s/r' --requests --quiet --no-report >/dev/null 2>'%s/err'",
             bin, path, dir, dir);
    PB_REQUIRE(system(cmd) == 0);
    pb_csv_table res, req;
    snprintf(path, sizeof path, "%s/r/vl_t.csv", dir);
    PB_REQUIRE(pb_csv_table_load(path, &res) == PB_OK);
    snprintf(path, sizeof path, "%s/r/vl_t.requests.csv", dir);
    PB_REQUIRE(pb_csv_table_load(path, &req) == PB_OK);
    PB_CHECK_EQ_INT(res.n_rows, 2);
    for (int r = 0; r < res.n_rows; r++) {
        const char *axis = cellv(&res, r, "request_rate_axis");
        snprintf(path, sizeof path, "%s/r/vllm/vl_t/vl_t-vllm-request_rate_axis%s.json", dir, axis);
        json_error_t je;
        json_t *j = json_load_file(path, 0, &je);
        if (!j) fprintf(stderr, "  %s: %s\n", path, je.text);
        PB_REQUIRE(j);
        /* every key: vLLM's or metadata's; every field that applies: there */
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v) {
            bool ok = (in(VLLM_NAMES, k) && !field(k)->not_here) || in(METADATA, k) || other_percentile(k);
            if (!ok) fprintf(stderr, "  unexpected key %s\n", k);
            PB_CHECK(ok);
        }
        for (const char *const *n = VLLM_NAMES; *n; n++) {
            const pb_vllm_field *fd = field(*n);
            if (!fd || fd->not_here) continue;
            if (!json_object_get(j, *n)) fprintf(stderr, "  missing %s\n", *n);
            PB_CHECK(json_object_get(j, *n) != NULL);
        }
        /* values: the point's, in vLLM's units */
        double csv_v;
        static const char *const SAME[][2] = {{"mean_ttft_ms", "ttft_mean_ms"}, {"p99_e2el_ms", "e2el_p99_ms"},
                                             {"std_tpot_ms", "tpot_std_ms"}, {"median_itl_ms", "itl_p50_ms"},
                                             {"request_goodput", "goodput_per_s"}, {"duration", "duration_s"},
                                             {"total_output_tokens", "output_tokens"},
                                             {"max_concurrent_requests", "max_concurrent_requests"}};
        for (size_t i = 0; i < sizeof SAME / sizeof SAME[0]; i++) {
            csv_v = strtod(cellv(&res, r, SAME[i][1]), NULL);
            PB_CHECK(json_number_value(json_object_get(j, SAME[i][0])) == csv_v);
        }
        PB_CHECK(!strcmp(json_string_value(json_object_get(j, "request_rate")), "inf"));   /* a ramp, as vLLM */
        PB_CHECK(!strcmp(json_string_value(json_object_get(j, "ramp_up_strategy")), "linear"));
        PB_CHECK(json_number_value(json_object_get(j, "ramp_up_end_rps")) == strtod(axis, NULL));
        PB_CHECK(json_number_value(json_object_get(j, "burstiness")) == 0.5);
        PB_CHECK(json_is_null(json_object_get(j, "max_concurrency")));
        long long np = json_integer_value(json_object_get(j, "num_prompts"));
        PB_CHECK_EQ_INT(np, (long long)strtod(cellv(&res, r, "n_requests"), NULL));
        PB_CHECK_EQ_INT(json_array_size(json_object_get(j, "input_lens")), np);
        PB_CHECK_EQ_INT(json_array_size(json_object_get(j, "ttfts")), np);
        PB_CHECK_EQ_INT(json_array_size(json_object_get(j, "errors")), np);
        int q0 = -1;   /* this point's first request row */
        for (int q = 0; q < req.n_rows && q0 < 0; q++)
            if (!strcmp(cellv(&req, q, "request_rate_axis"), axis)) q0 = q;
        PB_REQUIRE(q0 >= 0);
        for (long long i = 0; i < np; i++) {
            double ttft_ms = strtod(cellv(&req, q0 + (int)i, "ttft_ms"), NULL);
            PB_CHECK(json_number_value(json_array_get(json_object_get(j, "ttfts"), (size_t)i)) == ttft_ms / 1e3);
            PB_CHECK(json_integer_value(json_array_get(json_object_get(j, "input_lens"), (size_t)i)) ==
                     atoll(cellv(&req, q0 + (int)i, "prompt_len")));
        }
        json_decref(j);
    }
    pb_csv_table_free(&res);
    pb_csv_table_free(&req);
    /* without --requests: no per-request lists; without an SLO: goodput null */
    snprintf(cmd, sizeof cmd, "sed -i '/^slo:/d' '%s/v.yaml' && '%s' run '%s/v.yaml' --results '%s/r2' --quiet "
             "--no-report >/dev/null 2>&1", dir, bin, dir, dir);
    PB_REQUIRE(system(cmd) == 0);
    snprintf(path, sizeof path, "%s/r2/vllm/vl_t/vl_t-vllm-request_rate_axis4.json", dir);
    json_t *j = json_load_file(path, 0, NULL);
    PB_REQUIRE(j);
    PB_CHECK(json_object_get(j, "input_lens") == NULL && json_object_get(j, "ttfts") == NULL);
    PB_CHECK(json_is_null(json_object_get(j, "request_goodput")));
    json_decref(j);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    PB_CHECK(system(cmd) == 0);
}

PB_TEST_MAIN()
