/* cmd_list.c -- `pagedbench list`: what can be run, one line each.
 *
 *   pagedbench list            figures (with their experiments), experiments, models,
 *                              hardware, policies
 *   pagedbench list --keys     every key an experiment YAML may hold, from its declaration
 * Reads the YAMLs under the spec directory (pb_spec_dir(): $PAGEDBENCH_SPECS or
 * <source>/experiments). */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "config.h"
#include "executor_sim.h"   /* pb_sim_system_schema, pb_sim_cost_schema */
#include "experiment.h"
#include "pb.h"
#include "policy.h"
#include "spec.h"
#include "system.h"         /* pb_system_types_describe */
#include "workload.h"       /* pb_workload_schema */

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted *.yaml file names of dir (caller frees each and the array). */
static int yaml_files(const char *dir, char ***out) {
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 6 || strcmp(de->d_name + l - 5, ".yaml")) continue;
        if (n == cap) { cap = cap ? 2 * cap : 32; *out = pb_xrealloc(*out, (size_t)cap * sizeof **out); }
        (*out)[n++] = pb_xstrdup(de->d_name);
    }
    closedir(d);
    if (n > 1) qsort(*out, (size_t)n, sizeof **out, name_cmp);
    return n;
}

/* One line per key, from its declaration (config.h pb_key): name, doc, then type,
   range or choices, default and scope; a map's own keys follow it (skip: a key whose
   keys get a section of their own). */
static void print_keys(const pb_key *schema, const char *prefix, const char *skip) {
    for (const pb_key *k = schema; k->name; k++) {
        char what[512], name[160];
        pb_key_describe(schema, k, what, sizeof what);
        snprintf(name, sizeof name, "%s%s", prefix, k->name);
        printf("  %-34s %s (%s)\n", name, k->doc, what);
        if (k->sub && !(skip && !strcmp(k->name, skip))) {
            char sub[160];
            snprintf(sub, sizeof sub, "%s%s%s.", prefix, k->name, k->type == PB_T_LIST ? "[]" : "");
            print_keys(k->sub, sub, NULL);
        }
    }
}

/* The policies' options and the type keys each never reads, from their declarations
   (policy.h pb_policy_keys). */
static void print_policy_keys(void) {
    for (const pb_policy_entry *e = pb_policy_registry; e->name; e++) {
        for (const pb_policy_option *o = e->keys->options; o && o->name; o++) {
            pb_key k = pb_policy_option_key(o);
            char what[512], name[160];
            pb_key_describe(&k, &k, what, sizeof what);
            snprintf(name, sizeof name, "systems[].%s", o->name);
            printf("  %-34s policy %s: %s (%s)\n", name, e->name, o->doc, what);
        }
        if (e->keys->ignores) printf("  (policy %s never reads %s: an error when given)\n", e->name, e->keys->ignores);
    }
}

enum { O_KEYS = 256 };
static const pb_cli_opt OPTS[] = {
    {"keys", O_KEYS, NULL, "the experiment YAML keys instead (each entry of systems and executor too)"},
    {NULL, 0, NULL, NULL}};
static const pb_cli CLI = {
    "list", "[--keys]",
    "Figures (with their experiments), experiments, models, hardware and policies,\n"
    "one line each, from the YAMLs under the spec directory.  Output columns: docs/outputs.md.",
    OPTS, NULL, NULL, NULL};

int pb_cmd_list(int argc, char **argv) {
    bool keys = false;
    pb_cli_parser p;
    pb_cli_begin(&p, &CLI, argc, argv);
    for (int c; (c = pb_cli_next(&p)) != PB_CLI_END;)
        if (c == O_KEYS) keys = true;
    if (p.rc >= 0) return p.rc;
    if (p.optind < argc) return pb_cli_fail(&CLI, "unexpected argument '%s'", argv[p.optind]);
    if (keys) {
        printf("experiment YAML keys (each: doc (type, range or choices; default; the types that read it)):\n");
        print_keys(pb_experiment_schema, "", "systems");
        printf("keys of each entry of systems:\n");
        print_keys(pb_system_entry_schema, "systems[].", NULL);
        print_keys(pb_sim_system_schema, "systems[].sim.", NULL);
        printf("options of the policies (keys of a system's map, read by the policy it names):\n");
        print_policy_keys();
        printf("keys of executor when it is a map (executor: {type: cpu, ...}):\n");
        print_keys(pb_executor_schema, "executor.", NULL);
        printf("keys of workload:\n");
        print_keys(pb_workload_schema, "workload.", NULL);
        printf("keys of a model spec (experiments/models/<name>.yaml, or model: {...}):\n");
        print_keys(pb_model_schema, "model.", NULL);
        printf("keys of a hardware spec (experiments/hardware/<name>.yaml, or hardware: {...}):\n");
        print_keys(pb_hardware_schema, "hardware.", NULL);
        print_keys(pb_sim_cost_schema, "hardware.cost_model.", NULL);
        return PB_EXIT_OK;
    }
    const char *dir = pb_spec_dir();
    char **files;
    int n = yaml_files(dir, &files);

    /* figures: distinct `figure:` values in file order, with their experiments */
    printf("figures (./run_all.sh <figure>, or pagedbench run --figure <figure>):\n");
    printf("  %-8s %s\n", "table1", "Table 1: model sizes, KV capacity (pagedbench table1)");
    printf("  %-8s %s\n", "fig1", "Fig. 1: memory and throughput vs batch size (cost model)");
    printf("  %-8s %s\n", "fig11", "Fig. 11: input/output length histograms of ShareGPT and Alpaca");
    char *seen[64];
    int ns = 0;
    for (int i = 0; i < n; i++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        pb_config *c;
        pb_cfg_err err;
        pb_cfg_err_clear(&err);
        if (pb_config_load(path, &c, &err)) continue;
        const char *fig = pb_node_str(pb_config_root(c), "figure", NULL);
        bool dup = !fig;
        for (int k = 0; fig && k < ns; k++)
            if (!strcmp(seen[k], fig)) dup = true;
        if (!dup && ns < 64) {
            seen[ns++] = pb_xstrdup(fig);
            printf("  %-8s", fig);
            int cnt = 0;
            for (int j = 0; j < n; j++) {
                char p2[2048];
                snprintf(p2, sizeof p2, "%s/%s", dir, files[j]);
                pb_config *c2;
                if (pb_config_load(p2, &c2, &err)) continue;
                if (!strcmp(pb_node_str(pb_config_root(c2), "figure", ""), fig)) {
                    printf("%s%.*s", cnt++ ? ", " : " ", (int)(strlen(files[j]) - 5), files[j]);
                }
                pb_config_destroy(c2);
            }
            printf("\n");
        }
        pb_config_destroy(c);
    }
    printf("  %-8s %s\n", "fig18a", "Fig. 18(a): attention kernel latency (cost model; our kernels on a GPU)");
    printf("  %-8s %s\n", "fig18", "Fig. 18 = fig18a + fig18b");
    printf("  %-8s %s\n", "fig19a", "Fig. 19(a): swap vs recompute micro-benchmark (cost model)");
    printf("  %-8s %s\n", "fig19", "Fig. 19 = fig19a + fig19b");
    for (int k = 0; k < ns; k++) free(seen[k]);

    printf("experiments (pagedbench run experiments/<name>.yaml):\n");
    for (int i = 0; i < n; i++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        pb_config *c;
        pb_cfg_err err;
        pb_cfg_err_clear(&err);
        if (pb_config_load(path, &c, &err)) {
            printf("  %-26s (does not load: %s)\n", files[i], err.msg);
            continue;
        }
        const pb_node *r = pb_config_root(c);
        const pb_node *sy = pb_node_get(r, "systems");
        printf("  %-26s %-7s %-10s %-9s x%-2lld %-12s %d systems  %s\n", pb_node_str(r, "name", "?"),
               pb_node_str(r, "figure", "?"), pb_node_str(r, "model", "(inline)"), pb_node_str(r, "hardware", "(inline)"),
               (long long)pb_schema_int(pb_experiment_schema, r, "gpus"), pb_node_str(r, "workload.dataset", "?"),
               sy ? sy->n_kids : 0,
               pb_node_str(r, "title", ""));
        pb_config_destroy(c);
    }
    for (int i = 0; i < n; i++) free(files[i]);
    free(files);

    const char *subs[2] = {"models", "hardware"};
    for (int s = 0; s < 2; s++) {
        char sub[2048];
        snprintf(sub, sizeof sub, "%s/%s", dir, subs[s]);
        n = yaml_files(sub, &files);
        printf("%s (%s/<name>.yaml):\n", subs[s], sub);
        for (int i = 0; i < n; i++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", sub, files[i]);
            pb_config *c;
            pb_cfg_err err;
            pb_cfg_err_clear(&err);
            const char *disp = "?";
            if (!pb_config_load(path, &c, &err)) {
                const pb_node *r = pb_config_root(c);
                disp = pb_node_str(r, "name", "?");
                if (s == 0)
                    printf("  %-12s %-10s %3lld layers, hidden %6lld, max_len %lld\n", (files[i][strlen(files[i]) - 5] = 0, files[i]),
                           disp, (long long)pb_node_int(r, "n_layers", 0), (long long)pb_node_int(r, "hidden", 0),
                           (long long)pb_node_int(r, "max_len", 0));
                else
                    printf("  %-12s %-10s %.0f GB/s HBM, %.0f TFLOP/s fp16\n", (files[i][strlen(files[i]) - 5] = 0, files[i]),
                           disp, pb_node_num(r, "hbm_bandwidth_GBps", 0), pb_node_num(r, "fp16_tflops", 0));
                pb_config_destroy(c);
            }
            free(files[i]);
        }
        free(files);
    }
    printf("policies (systems[].policy):\n");
    for (const pb_policy_entry *p = pb_policy_registry; p->name; p++) printf("  %-12s %s\n", p->name, p->summary);
    printf("system types (systems[].type; the defaults that follow from the type):\n");
    pb_system_types_describe(stdout);
    printf("executors: sim (cost model)  cpu (tiny real model)  cuda (real model; GPU builds)\n");
    return PB_EXIT_OK;
}
