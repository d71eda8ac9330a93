/* trace_io.h -- trace files: write and read the request CSV.
 *
 * Format (one header line, then one request per line, arrivals non-decreasing):
 *   arrival_s,prompt_len,output_len,n,beam_width,prefix_id,prefix_len,conversation_id,turn
 * arrival_s is printed with 6 decimals, the rest as integers, so the same trace always
 * gives the same bytes.  The reader matches columns by header NAME (any order);
 * arrival_s, prompt_len and output_len are required, the others default to the plain
 * mode (n = beam_width = 1, prefix_id = conversation_id = -1, prefix_len = turn = 0);
 * an `id` column is ignored; any other column, a missing required column, a wrong field
 * count, a non-numeric or out-of-range value (lengths < 1 or > PB_TRACE_MAX_LEN,
 * negative arrival, ...), arrivals out of order, malformed CSV quoting, an empty file or
 * a file with no requests is an error with the message "file:line:col: message".  The
 * file is parsed by libcsv (csv_reader.h): quoted fields, a UTF-8 BOM, LF / CRLF / CR
 * line ends; blank lines and lines starting with '#' are skipped.  The whole trace is
 * also run through pb_trace_check(). */
#ifndef PB_TRACE_IO_H
#define PB_TRACE_IO_H

#include <stdio.h>

#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PB_TRACE_CSV_HEADER \
    "arrival_s,prompt_len,output_len,n,beam_width,prefix_id,prefix_len,conversation_id,turn"

/* Write the header and all requests to f.  PB_ERR_IO on a write error. */
pb_status pb_trace_write_csv(FILE *f, const pb_trace *t);
/* The same text in a malloc'd NUL-terminated buffer (*len without the NUL). */
char *pb_trace_to_csv(const pb_trace *t, size_t *len);
/* Write to path atomically (tmp + rename). */
pb_status pb_trace_write_file(const char *path, const pb_trace *t, char *err, size_t errlen);

/* Read a trace file into *out (previous content is NOT freed; start from {0}).
 * PB_ERR_IO when the file cannot be read ("path: reason"), PB_ERR_INVALID on a
 * malformed trace ("path:line:col: message"); *out is empty on any error. */
pb_status pb_trace_read_csv(const char *path, pb_trace *out, char *err, size_t errlen);
/* The same from a string; `name` stands for the file name in messages. */
pb_status pb_trace_read_string(const char *name, const char *text, pb_trace *out,
                               char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* PB_TRACE_IO_H */
