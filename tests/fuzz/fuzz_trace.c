/* fuzz_trace.c -- libFuzzer harness: the trace CSV reader (libcsv underneath).
 * Any input must be read into a trace that passes pb_trace_check, or be refused with
 * a "file:line:col: message" error.
 *   build/<preset>/fuzz/fuzz_trace tests/fuzz/corpus/trace -max_total_time=15 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "trace_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    pb_trace t = {0};
    char err[1024] = "";
    pb_status st = pb_trace_read_string("fuzz.csv", text, &t, err, sizeof err);
    if (st == PB_OK) {
        char why[256];
        if (pb_trace_check(&t, why, sizeof why) != PB_OK) abort();   /* the reader let a bad trace through */
    } else if (t.n != 0 || t.reqs != NULL || strncmp(err, "fuzz.csv:", 9) != 0) {
        abort();   /* an error leaves nothing behind and names the file */
    }
    pb_trace_free(&t);
    free(text);
    return 0;
}
