/* csv.c -- whole-file CSV reader with line numbers (see csv.h). */
#include "csv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pb_status pb_csv_open(pb_csv *c, const char *path, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err) snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return PB_ERR_IO;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = pb_xmalloc(cap);
    for (;;) {
        if (len + 1 >= cap) { cap *= 2; buf = pb_xrealloc(buf, cap); }
        size_t k = fread(buf + len, 1, cap - len - 1, f);
        len += k;
        if (k == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        if (err) snprintf(err, errlen, "%s: read error", path);
        return PB_ERR_IO;
    }
    buf[len] = 0;
    c->path = pb_xstrdup(path);
    c->buf = buf;
    c->len = len;
    c->next_line = 1;
    return PB_OK;
}

void pb_csv_open_string(pb_csv *c, const char *name, const char *text) {
    memset(c, 0, sizeof *c);
    c->path = pb_xstrdup(name);
    c->buf = pb_xstrdup(text);
    c->len = strlen(text);
    c->next_line = 1;
}

static int is_blank(const char *s) {
    for (; *s; s++)
        if (*s != ' ' && *s != '\t') return 0;
    return 1;
}

int pb_csv_next(pb_csv *c) {
    while (c->pos < c->len) {
        char *s = c->buf + c->pos;
        char *nl = memchr(s, '\n', c->len - c->pos);
        size_t n = nl ? (size_t)(nl - s) : c->len - c->pos;
        c->pos += n + (nl ? 1 : 0);
        c->line = c->next_line++;
        s[n] = 0;
        if (n > 0 && s[n - 1] == '\r') s[--n] = 0;
        if (is_blank(s) || s[0] == '#') continue;
        c->n_fields = 0;
        char *p = s;
        for (;;) {
            char *comma = strchr(p, ',');
            if (comma) *comma = 0;
            if (c->n_fields < PB_CSV_MAX_FIELDS) c->fields[c->n_fields] = p;
            c->n_fields++;
            if (!comma) break;
            p = comma + 1;
        }
        if (c->n_fields > PB_CSV_MAX_FIELDS) c->n_fields = PB_CSV_MAX_FIELDS + 1;
        return 1;
    }
    return 0;
}

int pb_csv_find(const pb_csv *c, const char *name) {
    int n = PB_MIN(c->n_fields, PB_CSV_MAX_FIELDS);
    for (int i = 0; i < n; i++) {
        const char *f = c->fields[i];
        while (*f == ' ') f++;
        size_t k = strlen(f);
        while (k > 0 && f[k - 1] == ' ') k--;
        if (k == strlen(name) && !strncmp(f, name, k)) return i;
    }
    return -1;
}

void pb_csv_close(pb_csv *c) {
    if (!c) return;
    free(c->buf);
    free(c->path);
    memset(c, 0, sizeof *c);
}
