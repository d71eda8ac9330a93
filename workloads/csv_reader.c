/* csv_reader.c -- whole-file CSV parsing with libcsv, lines and columns (csv_reader.h). */
#include "csv_reader.h"

#include <csv.h>    /* libcsv (Debian libcsv-dev) */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libcsv reports fields and record ends through callbacks, without positions: the
   bytes are fed one at a time so each callback knows where it is. */
typedef struct {
    pb_csv *c;
    int64_t n_fields, cap_fields, len_text, cap_text, cap_recs;
    int32_t line, line_start;   /* line of the byte being fed; its line's first byte */
    int64_t pos;                /* index of the byte being fed                       */
    int32_t rec_line;           /* line where the current record started (0: none)   */
    int32_t rec_nf;
    int64_t rec_first;
    int32_t field_col;          /* column where the current field started             */
    bool too_many;              /* more than PB_INPUT_MAX_ROWS records                 */
    int rec_kind;               /* the record's first non-blank byte: 0 none yet,
                                   1 '#' (a comment line), 2 anything else (a quoted
                                   "#..." field is data)                              */
} builder;

static void on_field(void *s, size_t len, void *data) {
    builder *b = data;
    pb_csv *c = b->c;
    if (b->rec_nf > PB_CSV_MAX_FIELDS) {   /* past the fields a reader looks at: counted only */
        b->rec_nf++;
        b->field_col = 0;
        return;
    }
    if (b->n_fields == b->cap_fields) {
        b->cap_fields = b->cap_fields ? 2 * b->cap_fields : 1024;
        c->off = pb_xrealloc(c->off, (size_t)b->cap_fields * sizeof *c->off);
        c->col = pb_xrealloc(c->col, (size_t)b->cap_fields * sizeof *c->col);
    }
    if (b->len_text + (int64_t)len + 1 > b->cap_text) {
        while (b->len_text + (int64_t)len + 1 > b->cap_text) b->cap_text = b->cap_text ? 2 * b->cap_text : 65536;
        c->text = pb_xrealloc(c->text, (size_t)b->cap_text);
    }
    if (b->rec_nf == 0) { b->rec_first = b->n_fields; if (!b->rec_line) b->rec_line = b->line; }
    c->off[b->n_fields] = b->len_text;
    c->col[b->n_fields] = b->field_col ? b->field_col : (int32_t)(b->pos - b->line_start) + 1;
    if (len) memcpy(c->text + b->len_text, s, len);
    b->len_text += (int64_t)len;
    c->text[b->len_text++] = 0;
    b->n_fields++;
    b->rec_nf++;
    b->field_col = 0;
}

static void on_record(int term, void *data) {
    builder *b = data;
    pb_csv *c = b->c;
    (void)term;
    int32_t nf = PB_MIN(b->rec_nf, PB_CSV_MAX_FIELDS + 1);   /* fields stored */
    bool blank = nf == 0 || (nf == 1 && c->text[c->off[b->rec_first]] == 0);
    bool comment = b->rec_kind == 1;
    if (blank || comment) {
        b->n_fields -= nf;   /* drop it (its text stays, unused) */
    } else if (c->n_recs >= PB_INPUT_MAX_ROWS) {
        b->too_many = true;
        b->n_fields -= nf;
    } else {
        if (c->n_recs == b->cap_recs) {
            b->cap_recs = b->cap_recs ? 2 * b->cap_recs : 1024;
            c->recs = pb_xrealloc(c->recs, (size_t)b->cap_recs * sizeof *c->recs);
        }
        c->recs[c->n_recs++] = (pb_csv_record_){b->rec_line, b->rec_nf, b->rec_first};
    }
    b->rec_nf = 0;
    b->rec_line = 0;
    b->field_col = 0;
    b->rec_kind = 0;
}

static pb_status parse(pb_csv *c, const char *buf, size_t len, char *err, size_t errlen) {
    struct csv_parser p;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_REPALL_NL) != 0) {
        if (err) snprintf(err, errlen, "%s: cannot start the CSV parser", c->path);
        return PB_ERR_NOMEM;
    }
    builder b = {0};
    b.c = c;
    b.line = 1;
    size_t i = 0;
    if (len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3)) i = 3;   /* UTF-8 byte-order mark */
    b.line_start = (int32_t)i;
    pb_status st = PB_OK;
    for (; i < len; i++) {
        char ch = buf[i];
        b.pos = (int64_t)i;
        if (!b.field_col && ch != ',' && ch != '\n' && ch != '\r')
            b.field_col = (int32_t)(i - (size_t)b.line_start) + 1;
        if (!b.rec_line && ch != '\n' && ch != '\r') b.rec_line = b.line;
        if (!b.rec_kind && ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r') b.rec_kind = ch == '#' ? 1 : 2;
        if (ch == 0) {   /* a NUL would cut the field short when it is read as a string */
            if (err) snprintf(err, errlen, "%s:%d:%d: NUL byte in the file (not a text CSV)", c->path, b.line,
                              (int)(i - (size_t)b.line_start) + 1);
            st = PB_ERR_INVALID;
            break;
        }
        if (csv_parse(&p, buf + i, 1, on_field, on_record, &b) != 1) {
            if (err) snprintf(err, errlen, "%s:%d:%d: malformed CSV: %s", c->path, b.line,
                              (int)(i - (size_t)b.line_start) + 1, csv_strerror(csv_error(&p)));
            st = PB_ERR_INVALID;
            break;
        }
        if (b.too_many) {
            if (err) snprintf(err, errlen, "%s:%d:1: more than %d rows, the cap for an input file", c->path, b.line,
                              PB_INPUT_MAX_ROWS);
            st = PB_ERR_INVALID;
            break;
        }
        /* a line ends at LF, or at a CR not followed by LF (CR-only files) */
        if (ch == '\n' || (ch == '\r' && (i + 1 >= len || buf[i + 1] != '\n'))) {
            b.line++;
            b.line_start = (int32_t)(i + 1);
        }
    }
    if (!st && csv_fini(&p, on_field, on_record, &b) != 0) {
        if (err) snprintf(err, errlen, "%s:%d:%d: malformed CSV: %s", c->path, b.line,
                          (int)((int64_t)len - b.line_start) + 1, csv_strerror(csv_error(&p)));
        st = PB_ERR_INVALID;
    }
    if (!st && b.too_many) {
        if (err) snprintf(err, errlen, "%s:%d:1: more than %d rows, the cap for an input file", c->path, b.line,
                          PB_INPUT_MAX_ROWS);
        st = PB_ERR_INVALID;
    }
    csv_free(&p);
    return st;
}

static pb_status open_buf(pb_csv *c, const char *name, const char *buf, size_t len, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    c->path = pb_xstrdup(name);
    pb_status st = parse(c, buf, len, err, errlen);
    if (st) {
        char *path = c->path;
        c->path = NULL;
        pb_csv_close(c);
        free(path);
    }
    return st;
}

pb_status pb_csv_open(pb_csv *c, const char *path, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    char *buf;
    size_t len;
    pb_status st = pb_input_read(path, true, &buf, &len, err, errlen);
    if (st) return st;
    st = open_buf(c, strcmp(path, "-") ? path : "(stdin)", buf, len, err, errlen);
    free(buf);
    return st;
}

pb_status pb_csv_open_string(pb_csv *c, const char *name, const char *text, char *err, size_t errlen) {
    return open_buf(c, name, text, strlen(text), err, errlen);
}

int pb_csv_next(pb_csv *c) {
    if (c->next >= c->n_recs) return 0;
    const pb_csv_record_ *r = &c->recs[c->next++];
    c->line = r->line;
    int n = PB_MIN(r->n_fields, PB_CSV_MAX_FIELDS);
    for (int i = 0; i < n; i++) {
        c->fields[i] = c->text + c->off[r->first + i];
        c->cols[i] = c->col[r->first + i];
    }
    c->n_fields = r->n_fields > PB_CSV_MAX_FIELDS ? PB_CSV_MAX_FIELDS + 1 : r->n_fields;
    return 1;
}

int pb_csv_find(const pb_csv *c, const char *name) {
    int n = PB_MIN(c->n_fields, PB_CSV_MAX_FIELDS);
    for (int i = 0; i < n; i++)
        if (!strcmp(c->fields[i], name)) return i;
    return -1;
}

void pb_csv_close(pb_csv *c) {
    if (!c) return;
    free(c->path);
    free(c->text);
    free(c->off);
    free(c->col);
    free(c->recs);
    memset(c, 0, sizeof *c);
}
