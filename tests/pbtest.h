/* pbtest.h -- a minimal test harness (header-only).
 *
 * Usage:
 *   #include "pbtest.h"
 *   PB_TEST(block_table_grows) { PB_CHECK(x == 1); PB_CHECK_NEAR(a, b, 1e-9); }
 *   int main(void) { return pb_test_main(); }    // or PB_TEST_MAIN()
 * Every test binary ends with the line "N passed, N failed" (and ", N skipped"),
 * and exits 1 if anything failed, 77 if everything was skipped, else 0.
 * A test calls PB_SKIP("reason") to skip itself when something it needs is missing here
 * (a package, a file); with PAGEDBENCH_NO_SKIP=1 in the environment (CI: .ci/run) such a
 * skip FAILS instead, so CI runs everything it can.  Two skips CI allows, each named:
 * PB_SKIP_NO_GPU("reason"), a GPU test on a machine without a usable GPU, and
 * PB_SKIP_SOURCE_DATA("reason"), a check of a committed derivation against third-party
 * source files that the repository may not hold (../shared/data beside a checkout). */
#ifndef PB_TEST_H
#define PB_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void (*pb_test_fn)(void);
typedef struct { const char *name; pb_test_fn fn; } pb_test_entry;

#define PB_TEST_MAX 512
static pb_test_entry pb_tests_[PB_TEST_MAX];
static int pb_n_tests_;
static int pb_cur_failed_, pb_cur_skipped_;

#define PB_TEST(tname_)                                                                \
    static void pb_test_##tname_(void);                                                \
    __attribute__((constructor)) static void pb_reg_##tname_(void) {                   \
        if (pb_n_tests_ < PB_TEST_MAX) {                                               \
            pb_tests_[pb_n_tests_].name = #tname_;                                     \
            pb_tests_[pb_n_tests_++].fn = pb_test_##tname_;                            \
        }                                                                              \
    }                                                                                  \
    static void pb_test_##tname_(void)

#define PB_CHECK(cond) do { if (!(cond)) {                                             \
    fprintf(stderr, "  %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);        \
    pb_cur_failed_++; } } while (0)
#define PB_REQUIRE(cond) do { if (!(cond)) {                                           \
    fprintf(stderr, "  %s:%d: required check failed: %s\n", __FILE__, __LINE__, #cond);\
    pb_cur_failed_++; return; } } while (0)
#define PB_CHECK_NEAR(a, b, tol) do { double a_ = (double)(a), b_ = (double)(b);       \
    if (!(fabs(a_ - b_) <= (tol))) {                                                   \
    fprintf(stderr, "  %s:%d: %s = %.9g, %s = %.9g, |diff| > %g\n", __FILE__, __LINE__, \
            #a, a_, #b, b_, (double)(tol)); pb_cur_failed_++; } } while (0)
#define PB_CHECK_EQ_INT(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b);  \
    if (a_ != b_) { fprintf(stderr, "  %s:%d: %s = %lld, expected %s = %lld\n",        \
    __FILE__, __LINE__, #a, a_, #b, b_); pb_cur_failed_++; } } while (0)
#define PB_CHECK_STR_CONTAINS(hay, needle) do { const char *h_ = (hay), *n_ = (needle); \
    if (!h_ || !strstr(h_, n_)) { fprintf(stderr, "  %s:%d: '%s' does not contain '%s'\n", \
    __FILE__, __LINE__, h_ ? h_ : "(null)", n_); pb_cur_failed_++; } } while (0)
static inline int pb_test_no_skip_(void) {
    const char *v = getenv("PAGEDBENCH_NO_SKIP");
    return v && *v && strcmp(v, "0") != 0;
}
#define PB_SKIP(...) do { if (pb_test_no_skip_()) {                                    \
    fprintf(stderr, "  %s:%d: FAIL: would skip, and PAGEDBENCH_NO_SKIP is set: ",      \
            __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr);   \
    pb_cur_failed_++; return; }                                                       \
    fprintf(stderr, "  skip: "); fprintf(stderr, __VA_ARGS__);                        \
    fputc('\n', stderr); pb_cur_skipped_ = 1; return; } while (0)
#define PB_SKIP_SOURCE_DATA(...) do { fprintf(stderr, "  SKIP: source data absent (");     \
    fprintf(stderr, __VA_ARGS__); fputs(")\n", stderr); pb_cur_skipped_ = 1; return; } while (0)
#define PB_SKIP_NO_GPU(...) do { fprintf(stderr, "  SKIP: no GPU (");                   \
    fprintf(stderr, __VA_ARGS__); fputs(")\n", stderr); pb_cur_skipped_ = 1; return; } while (0)

/* pb_test_tmpdir(tag): the binary's scratch folder, $TMPDIR (else /tmp)/pb_test_<tag>_XXXXXX,
 * made on the first call (later calls return it, whatever their tag) and removed with all
 * it holds when the binary exits. */
static inline char *pb_test_tmp_path_(void) {
    static char d[512];
    return d;
}
static inline pid_t *pb_test_tmp_owner_(void) {   /* a forked child's exit leaves the folder */
    static pid_t pid;
    return &pid;
}
static inline void pb_test_tmp_rm_(void) {
    if (getpid() != *pb_test_tmp_owner_()) return;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", pb_test_tmp_path_());
    if (system(cmd) != 0) fprintf(stderr, "  cannot remove %s\n", pb_test_tmp_path_());
}
static inline const char *pb_test_tmpdir(const char *tag) {
    char *d = pb_test_tmp_path_();
    if (!d[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(d, 512, "%s/pb_test_%s_XXXXXX", t && *t ? t : "/tmp", tag);
        if (!mkdtemp(d)) {
            fprintf(stderr, "pbtest: cannot make %s\n", d);
            exit(1);
        }
        *pb_test_tmp_owner_() = getpid();
        atexit(pb_test_tmp_rm_);
    }
    return d;
}

static inline int pb_test_main(void) {
    int passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < pb_n_tests_; i++) {
        pb_cur_failed_ = 0;
        pb_cur_skipped_ = 0;
        pb_tests_[i].fn();
        const char *v = pb_cur_failed_ ? "FAIL" : pb_cur_skipped_ ? "SKIP" : "ok";
        fprintf(stderr, "[%s] %s\n", v, pb_tests_[i].name);
        if (pb_cur_failed_) failed++;
        else if (pb_cur_skipped_) skipped++;
        else passed++;
    }
    printf("%d passed, %d failed", passed, failed);
    if (skipped) printf(", %d skipped", skipped);
    printf("\n");
    if (failed) return 1;
    return passed == 0 && skipped > 0 ? 77 : 0;
}
#define PB_TEST_MAIN() int main(void) { return pb_test_main(); }

/* Path of the shared data folder (../shared/data beside the checkout), or NULL. */
/* The whole file at path, NUL-terminated (free it); NULL if it cannot be read. */
static inline char *pb_test_slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)(n > 0 ? n : 0) + 1);
    size_t r = fread(s, 1, (size_t)(n > 0 ? n : 0), f);
    s[r] = 0;
    fclose(f);
    return s;
}

static inline const char *pb_test_shared_data(void) {
    static char buf[4096];
    const char *env = getenv("PAGEDBENCH_SHARED_DATA");
    if (env && *env) return env;
#ifdef PB_SOURCE_DIR
    snprintf(buf, sizeof buf, "%s/../shared/data", PB_SOURCE_DIR);
    FILE *f;
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/README.md", buf);
    if ((f = fopen(probe, "r"))) { fclose(f); return buf; }
#endif
    return NULL;
}
#endif /* PB_TEST_H */
