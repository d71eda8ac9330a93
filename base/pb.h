/* pb.h -- what every pagedbench module includes: status codes, logging, checked
 * allocation, the PB_RESTRICT macro.
 *
 * Two error modes: reusable code RETURNS a pb_status and never exits;
 * leaf programs (CLI commands, tests, benches) report and exit.  Exit codes of the
 * CLI: 0 ok, 1 runtime failure, 2 usage or config error.
 *
 * This header is C11 and C++17 clean so .cu files may include it. */
#ifndef PB_H
#define PB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
#  define PB_RESTRICT __restrict__
extern "C" {
#else
#  define PB_RESTRICT restrict
#endif

typedef enum {
    PB_OK = 0,
    PB_ERR_INVALID,   /* bad argument or config value                 */
    PB_ERR_NOMEM,     /* host allocation failed                       */
    PB_ERR_NO_SPACE,  /* no free KV space (preemption, not a bug)     */
    PB_ERR_CUDA,      /* CUDA / cuBLAS / CUPTI / NCCL call failed      */
    PB_ERR_IO,        /* file could not be read or written            */
    PB_ERR_UNSUPPORTED/* feature not built in (e.g. no CUDA)          */
} pb_status;

const char *pb_status_str(pb_status s);

/* CLI exit codes */
enum { PB_EXIT_OK = 0, PB_EXIT_RUNTIME = 1, PB_EXIT_USAGE = 2, PB_EXIT_SKIP = 77 };

/* Logging to stderr.  pb_log_level: 0 errors only, 1 info (default), 2 debug. */
extern int pb_log_level;
void pb_log_error(const char *fmt, ...);
void pb_log_info(const char *fmt, ...);
void pb_log_debug(const char *fmt, ...);

/* Checked allocation for leaf-ish code paths where OOM is fatal: abort with
 * file:line on failure.  Never return NULL (n == 0 returns a unique pointer). */
#define pb_xmalloc(n)     pb_xmalloc_((n), __FILE__, __LINE__)
#define pb_xcalloc(n, s)  pb_xcalloc_((n), (s), __FILE__, __LINE__)
#define pb_xrealloc(p, n) pb_xrealloc_((p), (n), __FILE__, __LINE__)
void *pb_xmalloc_(size_t n, const char *file, int line);
void *pb_xcalloc_(size_t n, size_t size, const char *file, int line);
void *pb_xrealloc_(void *p, size_t n, const char *file, int line);
char *pb_xstrdup(const char *s);

/* Internal invariant: abort with file:line and the expression (always on). */
#define PB_ASSERT(cond) do { if (!(cond)) pb_assert_fail_(#cond, __FILE__, __LINE__); } while (0)
void pb_assert_fail_(const char *expr, const char *file, int line);

#define PB_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define PB_MIN(a, b) ((a) < (b) ? (a) : (b))
#define PB_MAX(a, b) ((a) > (b) ? (a) : (b))
#define PB_CDIV(a, b) (((a) + (b) - 1) / (b))
/* The text of a macro's value: PB_XSTR(PB_BLOCK_SIZE) is "16" (a default declared
   once as a number and written into a key's declaration as text). */
#define PB_STR_(x) #x
#define PB_XSTR(x) PB_STR_(x)
/* cond ? a : b (cond 0 or 1) without a branch: for hot paths whose condition is
   random, where a branch would be mispredicted half the time. */
static inline int32_t pb_select_i32(int32_t cond, int32_t a, int32_t b) { return b ^ ((a ^ b) & -cond); }

/* ---- files written: unique temporaries ----
 * Every file is written to a temporary beside it and renamed over it, so readers see
 * the old file or the whole new one.  The temporary's name is unique to this host,
 * process and call, <path>.tmp.<host>.<pid>.<n> (host: gethostname up to its first
 * '.'), so concurrent writers of one file -- two runs, two shards on a shared
 * filesystem -- never share one; a temporary whose writer is gone (same host, pid no
 * longer running) is stale, and pb_tmp_sweep() removes it. */
void pb_tmp_path(const char *path, char *buf, size_t n);
bool pb_tmp_stale(const char *file_name);    /* a name of pb_tmp_path's form, writer gone */
int  pb_tmp_sweep(const char *dir);          /* unlink dir's stale temporaries; how many  */

/* Write a whole file atomically through a pb_tmp_path temporary, then rename().
 * Returns PB_OK or PB_ERR_IO (the target untouched, the temporary removed, errno
 * saying why). */
pb_status pb_write_file_atomic(const char *path, const void *data, size_t n);

/* ---- files read: bounded inputs ----
 * Every input file (a trace, a dataset, timestamps, a profile, a config) must be a
 * regular file -- a directory, FIFO, socket or device could block or never end -- of
 * at most PB_INPUT_MAX_BYTES; "-" (stdin, read up to the same cap) only where a
 * command says so.  Readers of rows stop at PB_INPUT_MAX_ROWS.  Errors name the file:
 * PB_ERR_IO "path: <strerror>" when it cannot be opened or read, PB_ERR_INVALID
 * "path: why" when it is not a regular file or is too large (the CLI exits 2). */
#define PB_INPUT_MAX_BYTES ((int64_t)256 << 20)   /* 256 MiB */
#define PB_INPUT_MAX_ROWS 10000000                /* rows (records) of one input file */
FILE *pb_input_open(const char *path, pb_status *st, char *err, size_t errlen);
/* The whole input in a malloc'd buffer, NUL-terminated (*len excludes the NUL). */
pb_status pb_input_read(const char *path, bool allow_stdin, char **out, size_t *len, char *err, size_t errlen);

/* A growing text buffer: pb_sbuf b = {0}; pb_sbuf_printf(&b, ...); use b.s (NUL-terminated,
 * NULL while empty) and b.len; free(b.s).  Allocation failure aborts (pb_xrealloc). */
typedef struct { char *s; size_t len, cap; } pb_sbuf;
void pb_sbuf_printf(pb_sbuf *b, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Monotonic wall clock in seconds (for benchmarks; never for simulated time). */
double pb_now_s(void);

/* The revision this binary was built from, taken at every build: the commit's 12-digit
 * hash, "-dirty" when a source compiled into it differed from the commit
 * (tools/source_rev.cmake); "no-git" outside a git checkout. */
const char *pb_git_rev(void);

#ifdef __cplusplus
}
#endif
#endif /* PB_H */
