/* fuzz_yaml.c -- libFuzzer harness: the YAML loader and the experiment schema.
 * Any input must give PB_OK or a config error with a position -- never a crash, a
 * hang or unbounded memory (aliases, nesting, duplicate keys are bounded: config.h).
 *   build/<preset>/fuzz/fuzz_yaml tests/fuzz/corpus/yaml -max_total_time=15 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "experiment.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    pb_config *c = NULL;
    pb_cfg_err err;
    pb_cfg_err_clear(&err);
    if (pb_config_load_string("fuzz.yaml", text, &c, &err) == PB_OK) {
        pb_cfg_err_clear(&err);
        pb_experiment_validate_tree(pb_config_root(c), &err);   /* includes aren't resolved: inline specs only */
        pb_config *k = pb_config_clone(c);
        pb_config_set(k, "workload.rate=[1, {a: 2}]", &err);
        pb_config_destroy(k);
    } else if (err.count == 0) {
        abort();   /* an error must say something */
    }
    pb_config_destroy(c);
    free(text);
    return 0;
}
