/* tokenizer.c -- GPT-2's byte-level BPE (see tokenizer.h). */
#include "tokenizer.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An open-addressing map from strings to int32 (the vocabulary; the merges' ranks). */
typedef struct {
    char **key;
    int32_t *val;
    size_t cap, n;
} smap;

static uint64_t hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static void smap_put(smap *m, const char *s, size_t n, int32_t v);

static void smap_grow(smap *m) {
    smap old = *m;
    m->cap = old.cap ? 2 * old.cap : 1024;
    m->n = 0;
    m->key = pb_xcalloc(m->cap, sizeof *m->key);
    m->val = pb_xcalloc(m->cap, sizeof *m->val);
    for (size_t i = 0; i < old.cap; i++)
        if (old.key[i]) {
            smap_put(m, old.key[i], strlen(old.key[i]), old.val[i]);
            free(old.key[i]);
        }
    free(old.key);
    free(old.val);
}

static void smap_put(smap *m, const char *s, size_t n, int32_t v) {
    if (2 * (m->n + 1) > m->cap) smap_grow(m);
    size_t i = hash(s, n) & (m->cap - 1);
    while (m->key[i] && !(strlen(m->key[i]) == n && !memcmp(m->key[i], s, n))) i = (i + 1) & (m->cap - 1);
    if (!m->key[i]) {
        m->key[i] = pb_xcalloc(n + 1, 1);
        memcpy(m->key[i], s, n);
        m->n++;
    }
    m->val[i] = v;
}

static int32_t smap_get(const smap *m, const char *s, size_t n) {
    if (!m->cap) return -1;
    size_t i = hash(s, n) & (m->cap - 1);
    while (m->key[i]) {
        if (strlen(m->key[i]) == n && !memcmp(m->key[i], s, n)) return m->val[i];
        i = (i + 1) & (m->cap - 1);
    }
    return -1;
}

static void smap_free(smap *m) {
    for (size_t i = 0; i < m->cap; i++) free(m->key[i]);
    free(m->key);
    free(m->val);
}

struct pb_tok {
    smap vocab, ranks;
    char **str;            /* id -> token string (GPT-2's code points, UTF-8) */
    int32_t n_ids;
    char byte_str[256][3]; /* byte -> its code point's UTF-8 */
    int byte_of[512];      /* code point -> byte (-1: none) */
};

/* GPT-2's bytes_to_unicode: printable bytes keep their code point, the others get
   256, 257, ... in byte order. */
static void byte_map(pb_tok *t) {
    int next = 256;
    for (int i = 0; i < 512; i++) t->byte_of[i] = -1;
    for (int b = 0; b < 256; b++) {
        bool keep = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        int cp = keep ? b : next++;
        t->byte_of[cp] = b;
        if (cp < 0x80) {
            t->byte_str[b][0] = (char)cp;
        } else {
            t->byte_str[b][0] = (char)(0xC0 | (cp >> 6));
            t->byte_str[b][1] = (char)(0x80 | (cp & 0x3F));
        }
    }
}

pb_tok *pb_tok_load(const char *dir, char *err, size_t err_n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/encoder.json", dir);
    json_error_t je;
    json_t *enc = json_load_file(path, 0, &je);
    if (!enc || !json_is_object(enc)) {
        snprintf(err, err_n, "%s: %s", path, enc ? "not a JSON object" : je.text);
        json_decref(enc);
        return NULL;
    }
    pb_tok *t = pb_xcalloc(1, sizeof *t);
    byte_map(t);
    const char *k;
    json_t *v;
    json_object_foreach(enc, k, v) {
        json_int_t id = json_integer_value(v);
        if (!json_is_integer(v) || id < 0 || id > 10000000) continue;
        smap_put(&t->vocab, k, strlen(k), (int32_t)id);
        if (id >= t->n_ids) {
            t->str = pb_xrealloc(t->str, (size_t)(id + 1) * sizeof *t->str);
            memset(t->str + t->n_ids, 0, (size_t)(id + 1 - t->n_ids) * sizeof *t->str);
            t->n_ids = (int32_t)id + 1;
        }
        free(t->str[id]);
        t->str[id] = strdup(k);
    }
    json_decref(enc);
    snprintf(path, sizeof path, "%s/vocab.bpe", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, err_n, "%s: cannot be read", path);
        pb_tok_free(t);
        return NULL;
    }
    char line[1024];
    int32_t rank = 0;
    while (fgets(line, sizeof line, f)) {
        size_t n = strcspn(line, "\r\n");
        if (line[0] == '#' || n == 0 || !memchr(line, ' ', n)) continue;
        smap_put(&t->ranks, line, n, rank++);
    }
    fclose(f);
    return t;
}

void pb_tok_free(pb_tok *t) {
    if (!t) return;
    smap_free(&t->vocab);
    smap_free(&t->ranks);
    for (int32_t i = 0; i < t->n_ids; i++) free(t->str[i]);
    free(t->str);
    free(t);
}

int32_t pb_tok_vocab(const pb_tok *t) { return t->n_ids; }

static void push_id(int32_t id, int32_t **ids, int32_t *n, int32_t *cap) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *ids = pb_xrealloc(*ids, (size_t)*cap * sizeof **ids);
    }
    (*ids)[(*n)++] = id;
}

/* BPE over one pre-token p[0 .. n): symbols are strings of GPT-2 code points. */
static void bpe(const pb_tok *t, const char *p, size_t n, int32_t **ids, int32_t *n_ids, int32_t *cap) {
    int32_t ns = (int32_t)n;
    char **sym = pb_xcalloc(n, sizeof *sym);
    for (size_t i = 0; i < n; i++) sym[i] = strdup(t->byte_str[(unsigned char)p[i]]);
    char key[2048];
    for (;;) {
        int32_t best = -1, best_rank = INT32_MAX;
        for (int32_t i = 0; i + 1 < ns; i++) {
            int kl = snprintf(key, sizeof key, "%s %s", sym[i], sym[i + 1]);
            if (kl <= 0 || (size_t)kl >= sizeof key) continue;
            int32_t r = smap_get(&t->ranks, key, (size_t)kl);
            if (r >= 0 && r < best_rank) {
                best_rank = r;
                best = i;
            }
        }
        if (best < 0) break;
        size_t la = strlen(sym[best]), lb = strlen(sym[best + 1]);
        char *m = pb_xcalloc(la + lb + 1, 1);
        memcpy(m, sym[best], la);
        memcpy(m + la, sym[best + 1], lb);
        free(sym[best]);
        free(sym[best + 1]);
        sym[best] = m;
        memmove(&sym[best + 1], &sym[best + 2], (size_t)(ns - best - 2) * sizeof *sym);
        ns--;
    }
    for (int32_t i = 0; i < ns; i++) {
        int32_t id = smap_get(&t->vocab, sym[i], strlen(sym[i]));
        if (id >= 0) {
            push_id(id, ids, n_ids, cap);
        } else {   /* a partial vocabulary: byte by byte */
            for (const char *c = sym[i]; *c;) {
                int cp = (unsigned char)*c < 0x80 ? *c : (((c[0] & 0x1F) << 6) | (c[1] & 0x3F));
                size_t l = (unsigned char)*c < 0x80 ? 1 : 2;
                int b = cp < 512 ? t->byte_of[cp] : -1;
                int32_t bid = b >= 0 ? smap_get(&t->vocab, t->byte_str[b], strlen(t->byte_str[b])) : -1;
                push_id(bid >= 0 ? bid : 0, ids, n_ids, cap);
                c += l;
            }
        }
        free(sym[i]);
    }
    free(sym);
}

enum { C_L, C_N, C_S, C_O };
static int cls(unsigned char c) {
    if (c >= 0x80 || isalpha(c)) return C_L;
    if (isdigit(c)) return C_N;
    if (isspace(c)) return C_S;
    return C_O;
}

void pb_tok_encode(const pb_tok *t, const char *s, size_t n, int32_t **ids, int32_t *n_ids, int32_t *cap) {
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        if (s[i] == '\'' && i + 1 < n) {   /* 's 't 're 've 'm 'll 'd */
            const char *r = s + i + 1;
            size_t left = n - i - 1;
            size_t l = (strchr("stmd", r[0]) ? 1 : 0);
            if (!l && left >= 2 && (!strncmp(r, "re", 2) || !strncmp(r, "ve", 2) || !strncmp(r, "ll", 2))) l = 2;
            if (l) {
                bpe(t, s + i, l + 1, ids, n_ids, cap);
                i += l + 1;
                continue;
            }
        }
        int c = cls((unsigned char)s[i]);
        if (s[i] == ' ' && i + 1 < n && cls((unsigned char)s[i + 1]) != C_S) {
            c = cls((unsigned char)s[i + 1]);
            j = i + 1;
        }
        if (c != C_S) {
            while (j < n && cls((unsigned char)s[j]) == c) j++;
            bpe(t, s + i, j - i, ids, n_ids, cap);
            i = j;
            continue;
        }
        while (j < n && cls((unsigned char)s[j]) == C_S) j++;   /* white space i .. j */
        if (j < n && j - i > 1) j--;   /* \s+(?!\S): the last one goes with the next word */
        bpe(t, s + i, j - i, ids, n_ids, cap);
        i = j;
    }
}

void pb_tok_decode(const pb_tok *t, const int32_t *ids, int32_t n, pb_sbuf *b) {
    for (int32_t k = 0; k < n; k++) {
        const char *s = ids[k] >= 0 && ids[k] < t->n_ids ? t->str[ids[k]] : NULL;
        if (!s) {
            pb_sbuf_printf(b, " <%d>", ids[k]);
            continue;
        }
        char out[256];
        size_t o = 0;
        for (const char *c = s; *c && o < sizeof out - 1;) {
            int cp = (unsigned char)*c < 0x80 ? *c : (((c[0] & 0x1F) << 6) | (c[1] & 0x3F));
            c += (unsigned char)*c < 0x80 ? 1 : 2;
            int by = cp < 512 ? t->byte_of[cp] : -1;
            if (by > 0) out[o++] = (char)by;   /* byte 0 dropped: the buffer is text */
        }
        out[o] = 0;
        pb_sbuf_printf(b, "%s", out);
    }
}
