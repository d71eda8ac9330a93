/* pb.c -- status strings, logging, checked allocation, atomic file writes, bounded inputs. */
#define _POSIX_C_SOURCE 200809L
#include "pb.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if __has_include("pb_source_rev.h")
#include "pb_source_rev.h"   /* generated at build time by tools/source_rev.cmake */
#endif
#ifndef PB_SOURCE_DESCRIBE   /* built without the CMake step: the configure-time revision */
#ifdef PB_GIT_REV
#define PB_SOURCE_DESCRIBE PB_GIT_REV
#else
#define PB_SOURCE_DESCRIBE "unknown"
#endif
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

/* ---- temporaries ---- */
static const char *host_name(void) {
    static char host[128];
    if (!host[0]) {
        if (gethostname(host, sizeof host - 1)) snprintf(host, sizeof host, "host");
        host[strcspn(host, "./ ")] = 0;
        if (!host[0]) snprintf(host, sizeof host, "host");
    }
    return host;
}

void pb_tmp_path(const char *path, char *buf, size_t n) {
    static unsigned counter;
    snprintf(buf, n, "%s.tmp.%s.%ld.%u", path, host_name(), (long)getpid(), counter++);
}

bool pb_tmp_stale(const char *name) {
    const char *t = NULL;
    for (const char *p = name; (p = strstr(p, ".tmp.")); p++) t = p;   /* the last ".tmp." */
    if (!t) return false;
    const char *h = t + 5, *dot = strchr(h, '.');
    if (!dot || (size_t)(dot - h) != strlen(host_name()) || strncmp(h, host_name(), (size_t)(dot - h))) return false;
    char *end;
    long pid = strtol(dot + 1, &end, 10);
    if (pid <= 0 || *end != '.' || end[1] < '0' || end[1] > '9') return false;
    strtoul(end + 1, &end, 10);
    if (*end) return false;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

int pb_tmp_sweep(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!pb_tmp_stale(de->d_name)) continue;
        size_t len = strlen(dir) + strlen(de->d_name) + 2;
        char *path = pb_xmalloc(len);
        snprintf(path, len, "%s/%s", dir, de->d_name);
        if (unlink(path) == 0) {
            n++;
            pb_log_debug("removed %s, left by an interrupted run", path);
        }
        free(path);
    }
    closedir(d);
    return n;
}

pb_status pb_write_file_atomic(const char *path, const void *data, size_t n) {
    size_t len = strlen(path) + 200;
    char *tmp = pb_xmalloc(len);
    pb_tmp_path(path, tmp, len);
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

/* ---- bounded inputs ---- */
static const char *file_kind(mode_t m) {
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket"
         : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" : "not a regular file";
}

FILE *pb_input_open(const char *path, pb_status *st, char *err, size_t errlen) {
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; cleared once it is known regular */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (err) snprintf(err, errlen, "%s: %s", path, strerror(errno));
        *st = PB_ERR_IO;
        return NULL;
    }
    struct stat sb;
    const char *why = NULL;
    char size[96];
    if (fstat(fd, &sb) != 0) why = strerror(errno);
    else if (!S_ISREG(sb.st_mode)) why = file_kind(sb.st_mode);
    else if ((int64_t)sb.st_size > PB_INPUT_MAX_BYTES) {
        snprintf(size, sizeof size, "%lld bytes, above the cap of %lld bytes for an input file",
                 (long long)sb.st_size, (long long)PB_INPUT_MAX_BYTES);
        why = size;
    }
    if (why) {
        if (err) snprintf(err, errlen, "%s: %s%s", path, why, S_ISREG(sb.st_mode) ? "" : " (expected a regular file)");
        close(fd);
        *st = PB_ERR_INVALID;
        return NULL;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        if (err) snprintf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
        *st = PB_ERR_IO;
        return NULL;
    }
    *st = PB_OK;
    return f;
}

pb_status pb_input_read(const char *path, bool allow_stdin, char **out, size_t *len, char *err, size_t errlen) {
    *out = NULL;
    *len = 0;
    bool in = !strcmp(path, "-");
    pb_status st = PB_OK;
    if (in && !allow_stdin) {
        if (err) snprintf(err, errlen, "-: standard input is not accepted here (name a file)");
        return PB_ERR_INVALID;
    }
    FILE *f = in ? stdin : pb_input_open(path, &st, err, errlen);
    if (!f) return st;
    size_t cap = 1 << 16, n = 0;
    char *buf = pb_xmalloc(cap);
    for (;;) {
        if (n + 1 >= cap) {
            cap *= 2;
            buf = pb_xrealloc(buf, cap);
        }
        size_t k = fread(buf + n, 1, cap - n - 1, f);
        n += k;
        if (k == 0 || (int64_t)n > PB_INPUT_MAX_BYTES) break;
    }
    bool bad = ferror(f) != 0;
    if (!in) fclose(f);
    if (bad || (int64_t)n > PB_INPUT_MAX_BYTES) {
        if (err && bad) snprintf(err, errlen, "%s: read error", in ? "(stdin)" : path);
        else if (err) snprintf(err, errlen, "%s: more than %lld bytes, the cap for an input file", in ? "(stdin)" : path,
                               (long long)PB_INPUT_MAX_BYTES);
        free(buf);
        return bad ? PB_ERR_IO : PB_ERR_INVALID;
    }
    buf[n] = 0;
    *out = buf;
    *len = n;
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

const char *pb_git_rev(void) { return PB_SOURCE_DESCRIBE; }
