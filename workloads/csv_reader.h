/* csv_reader.h -- CSV files of workloads and traces, read with Debian's libcsv.
 *
 * The whole file is parsed up front by libcsv (RFC 4180: quoted fields with commas,
 * quotes and line breaks inside; strict quoting), so a malformed file is an error at
 * open time.  The file is an input of pb.h's rules: a regular file (or "-", stdin) of
 * at most PB_INPUT_MAX_BYTES, at most PB_INPUT_MAX_ROWS records, and no NUL byte (which
 * would cut a field short).  Line ends may be LF, CRLF or CR alone; a UTF-8 byte-order mark is
 * skipped; blank lines and lines whose first non-blank byte is '#' (comments; a quoted
 * "#..." field is data) are
 * skipped; spaces around unquoted fields are trimmed.  Every record keeps its 1-based
 * line and every field its 1-based column (bytes), so callers report
 * `file:line:col: message`.
 *
 * Usage:
 *   pb_csv c;  if (pb_csv_open(&c, path, err, sizeof err)) return ...;
 *   if (!pb_csv_next(&c)) -> empty file;  header = c.fields[0..c.n_fields-1]
 *   while (pb_csv_next(&c)) { ... c.fields[i], c.line, c.cols[i] ... }
 *   pb_csv_close(&c); */
#ifndef PB_CSV_READER_H
#define PB_CSV_READER_H

#include <stddef.h>
#include <stdint.h>

#include "pb.h"

#define PB_CSV_MAX_FIELDS 256

typedef struct {
    int32_t line;           /* 1-based line where the record starts                  */
    int32_t n_fields;       /* fields (> PB_CSV_MAX_FIELDS: only the first are kept)  */
    int64_t first;          /* index of its first field in the field arrays          */
} pb_csv_record_;

typedef struct {
    char *path;             /* owned copy, for messages                              */
    char *text;             /* every field, NUL-terminated, back to back             */
    int64_t *off;           /* [n_fields_total] offset of each field in text         */
    int32_t *col;           /* [n_fields_total] 1-based column of each field         */
    pb_csv_record_ *recs;
    int64_t n_recs, next;
    /* the current record */
    int line;               /* 1-based line                                           */
    char *fields[PB_CSV_MAX_FIELDS];
    int cols[PB_CSV_MAX_FIELDS];
    int n_fields;           /* > PB_CSV_MAX_FIELDS is reported as PB_CSV_MAX_FIELDS + 1 */
} pb_csv;

/* Read and parse `path` ("-": stdin).  PB_ERR_IO with "path: <strerror>" when it cannot
 * be read, PB_ERR_INVALID with "path: why" when it is not a regular file or is too large,
 * "path:line:col: why" when it does not parse (malformed CSV, a NUL byte, too many rows). */
pb_status pb_csv_open(pb_csv *c, const char *path, char *err, size_t errlen);
/* The same from a string; `name` is used in messages. */
pb_status pb_csv_open_string(pb_csv *c, const char *name, const char *text, char *err, size_t errlen);
/* Advance to the next record.  Returns 1 with fields set, 0 at end of file. */
int pb_csv_next(pb_csv *c);
/* Index of `name` among the fields of the current record (the header), or -1. */
int pb_csv_find(const pb_csv *c, const char *name);
void pb_csv_close(pb_csv *c);

#endif /* PB_CSV_READER_H */
