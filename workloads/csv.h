/* csv.h -- a small reader for the plain CSV files of workloads and traces.
 *
 * The whole file is read into memory; records are split on ',' in place (no quoting:
 * every file we read holds numbers and simple timestamps).  CRLF and LF line endings,
 * blank lines and lines starting with '#' (comments) are accepted and skipped.  Each
 * record knows its 1-based line number so callers can report `file:line: message`.
 *
 * Usage:
 *   pb_csv c;  if (pb_csv_open(&c, path, err, sizeof err)) return ...;
 *   if (!pb_csv_next(&c)) -> empty file;  header = c.fields[0..c.n_fields-1]
 *   while (pb_csv_next(&c)) { ... c.fields[i], c.line ... }
 *   pb_csv_close(&c); */
#ifndef PB_CSV_H
#define PB_CSV_H

#include <stddef.h>

#include "pb.h"

#define PB_CSV_MAX_FIELDS 64

typedef struct {
    char *path;             /* owned copy, for messages                             */
    char *buf;              /* whole file, NUL-terminated, split in place           */
    size_t len, pos;
    int line;               /* 1-based line of the current record                   */
    int next_line;          /* line number at pos                                   */
    char *fields[PB_CSV_MAX_FIELDS];
    int n_fields;           /* fields of the current record (> PB_CSV_MAX_FIELDS is
                               reported as PB_CSV_MAX_FIELDS + 1, extra not stored)  */
} pb_csv;

/* Read `path`; PB_ERR_IO with "path: <strerror>" in err when it cannot be read. */
pb_status pb_csv_open(pb_csv *c, const char *path, char *err, size_t errlen);
/* Read from a string (copied); `name` is used in messages. */
void pb_csv_open_string(pb_csv *c, const char *name, const char *text);
/* Advance to the next record.  Returns 1 with fields set, 0 at end of file. */
int pb_csv_next(pb_csv *c);
/* Index of `name` among the fields of the current record (the header), or -1. */
int pb_csv_find(const pb_csv *c, const char *name);
void pb_csv_close(pb_csv *c);

#endif /* PB_CSV_H */
