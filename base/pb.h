/* pb.h -- what every pagedbench module includes: status codes, logging, checked
 * allocation, the PB_RESTRICT macro.
 *
 * Two error modes (STYLE S3): reusable code RETURNS a pb_status and never exits;
 * leaf programs (CLI commands, tests, benches) report and exit.  Exit codes of the
 * CLI: 0 ok, 1 runtime failure, 2 usage or config error.
 *
 * This header is C11 and C++17 clean so .cu files may include it. */
#ifndef PB_H
#define PB_H

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
enum { PB_EXIT_OK = 0, PB_EXIT_RUNTIME = 1, PB_EXIT_USAGE = 2 };

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
/* cond ? a : b (cond 0 or 1) as arithmetic, for hot paths whose condition is random:
   the compiler turns a ?: whose result indexes a store or a load into a branch,
   mispredicted half the time. */
static inline int32_t pb_select_i32(int32_t cond, int32_t a, int32_t b) { return b ^ ((a ^ b) & -cond); }

/* Write a whole file atomically: data goes to path.tmp.<pid>, then rename().
 * Returns PB_OK or PB_ERR_IO (the target untouched, the temporary removed, errno
 * saying why). */
pb_status pb_write_file_atomic(const char *path, const void *data, size_t n);

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

/* The git revision baked in at configure time ("unknown" outside git). */
const char *pb_git_rev(void);

#ifdef __cplusplus
}
#endif
#endif /* PB_H */
