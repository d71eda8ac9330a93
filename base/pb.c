/* pb.c -- status strings, logging, checked allocation, atomic file writes. */
#define _POSIX_C_SOURCE 200809L
#include "pb.h"

#include <errno.h>

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef PB_GIT_REV
#define PB_GIT_REV "unknown"
#endif

int pb_log_level = 1;

const char *pb_status_str(pb_status s) {
    switch (s) {
    case PB_OK: return "ok";
    case PB_ERR_INVALID: return "invalid argument";
    case PB_ERR_NOMEM: return "out of host memory";
    case PB_ERR_NO_SPACE: return "no free KV space";
    case PB_ERR_CUDA: return "CUDA error";
    case PB_ERR_IO: return "I/O error";
    case PB_ERR_UNSUPPORTED: return "not supported in this build";
    }
    return "unknown status";
}

static void vlog(const char *tag, const char *fmt, va_list ap) {
    fputs(tag, stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}
void pb_log_error(const char *fmt, ...) { va_list ap; va_start(ap, fmt); vlog("error: ", fmt, ap); va_end(ap); }
void pb_log_info(const char *fmt, ...) {
    if (pb_log_level < 1) return;
    va_list ap; va_start(ap, fmt); vlog("", fmt, ap); va_end(ap);
}
void pb_log_debug(const char *fmt, ...) {
    if (pb_log_level < 2) return;
    va_list ap; va_start(ap, fmt); vlog("debug: ", fmt, ap); va_end(ap);
}

static void oom(size_t n, const char *file, int line) {
    fprintf(stderr, "%s:%d: out of memory allocating %zu bytes\n", file, line, n);
    abort();
}
void *pb_xmalloc_(size_t n, const char *file, int line) {
    void *p = malloc(n ? n : 1);
    if (!p) oom(n, file, line);
    return p;
}
void *pb_xcalloc_(size_t n, size_t size, const char *file, int line) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) oom(n * size, file, line);
    return p;
}
void *pb_xrealloc_(void *p, size_t n, const char *file, int line) {
    void *q = realloc(p, n ? n : 1);
    if (!q) oom(n, file, line);
    return q;
}
char *pb_xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = pb_xmalloc(n);
    memcpy(d, s, n);
    return d;
}

void pb_assert_fail_(const char *expr, const char *file, int line) {
    fprintf(stderr, "%s:%d: assertion failed: %s\n", file, line, expr);
    abort();
}

pb_status pb_write_file_atomic(const char *path, const void *data, size_t n) {
    size_t len = strlen(path) + 32;
    char *tmp = pb_xmalloc(len);
    snprintf(tmp, len, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) { int e = errno; free(tmp); errno = e; return PB_ERR_IO; }
    int e = 0;
    if (fwrite(data, 1, n, f) != n) e = errno;
    if (fflush(f) != 0 && !e) e = errno;
    if (fclose(f) != 0 && !e) e = errno;
    if (e || rename(tmp, path) != 0) {
        if (!e) e = errno;
        remove(tmp);
        free(tmp);
        errno = e ? e : EIO;   /* why, for the caller's message */
        return PB_ERR_IO;
    }
    free(tmp);
    return PB_OK;
}

void pb_sbuf_printf(pb_sbuf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int k = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? room : 0, fmt, ap);
        va_end(ap);
        if (k < 0) return;
        if (b->s && (size_t)k < room) { b->len += (size_t)k; return; }
        b->cap = b->cap ? 2 * b->cap + (size_t)k + 1 : 4096 + (size_t)k;
        b->s = pb_xrealloc(b->s, b->cap);
    }
}

double pb_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *pb_git_rev(void) { return PB_GIT_REV; }
