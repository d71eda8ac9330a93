/* cuda_module.c -- load the CUDA module on first use (see cuda_module.h).
 * Compiled twice: into pbcore of a CUDA build (the loader and the forwarding entry
 * points) and into the module with PB_CUDA_MODULE (its ABI check). */
#include "cuda_module.h"

#include <stdio.h>

#include "pb.h"

#ifdef PB_CUDA_MODULE

int pb_cuda_module_abi(int log_level) {
    pb_log_level = log_level;
    return PB_CUDA_MODULE_ABI;
}

#else /* the loader, in the binary */

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor_real.h"
#include "kbench.h"

#define MODULE_NAME "libpbcuda_exec.so"

static struct {
    bool ok;
    char why[512];
    bool (*cuda_available)(char *, size_t);
    pb_status (*executor_cuda_create)(const pb_model *, const pb_real_exec_params *, pb_executor **);
    int (*gpu_available)(char *, size_t);
    void (*device_name)(char *, size_t);
    void (*print_context)(FILE *);
    void (*get_info)(pb_kbench_info *);
    pb_status (*run_gpu)(const pb_kbench_opts *, pb_kb_set *, FILE *, int *);
} g_mod;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* the module's path: $PAGEDBENCH_CUDA_MODULE, else next to the executable */
static bool module_path(char *out, size_t n) {
    const char *env = getenv("PAGEDBENCH_CUDA_MODULE");
    if (env && *env) return snprintf(out, n, "%s", env) < (int)n;
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return false;
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return false;
    *slash = '\0';
    return snprintf(out, n, "%s/" MODULE_NAME, exe) < (int)n;
}

#define GET(field, name)                                                                    \
    do {                                                                                    \
        *(void **)&g_mod.field = dlsym(h, name);                                            \
        if (!g_mod.field) {                                                                 \
            snprintf(g_mod.why, sizeof g_mod.why, "%s: no symbol %s (stale module?)", path, name); \
            return;                                                                         \
        }                                                                                   \
    } while (0)

static void load_once(void) {
    char path[PATH_MAX + 32];
    if (!module_path(path, sizeof path)) {
        snprintf(g_mod.why, sizeof g_mod.why, "cannot locate " MODULE_NAME " (no /proc/self/exe)");
        return;
    }
    if (access(path, F_OK) != 0) {
        snprintf(g_mod.why, sizeof g_mod.why, "no CUDA module %s (build the pbcuda_exec target)", path);
        return;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(g_mod.why, sizeof g_mod.why, "cannot load the CUDA module: %s", dlerror());
        return;
    }
    int (*abi)(int) = NULL;
    *(void **)&abi = dlsym(h, "pb_cuda_module_abi");
    if (!abi || abi(pb_log_level) != PB_CUDA_MODULE_ABI) {
        snprintf(g_mod.why, sizeof g_mod.why, "%s: ABI %d, this binary needs %d (stale module?)", path,
                 abi ? abi(pb_log_level) : -1, PB_CUDA_MODULE_ABI);
        return;   /* (h stays loaded but unused) */
    }
    GET(cuda_available, "pb_cuda_available");
    GET(executor_cuda_create, "pb_executor_cuda_create");
    GET(gpu_available, "pb_kbench_gpu_available");
    GET(device_name, "pb_kbench_device_name");
    GET(print_context, "pb_kbench_print_context");
    GET(get_info, "pb_kbench_get_info");
    GET(run_gpu, "pb_kbench_run_gpu");
    g_mod.ok = true;
    pb_log_debug("cuda module: loaded %s", path);
}

bool pb_cuda_module_load(char *why, size_t why_len) {
    pthread_once(&g_once, load_once);
    if (!g_mod.ok && why && why_len) snprintf(why, why_len, "%s", g_mod.why);
    return g_mod.ok;
}

/* ---- the forwarding entry points ---- */

bool pb_cuda_available(char *reason, size_t reason_len) {
    if (!pb_cuda_module_load(reason, reason_len)) return false;
    return g_mod.cuda_available(reason, reason_len);
}

pb_status pb_executor_cuda_create(const pb_model *m, const pb_real_exec_params *p, pb_executor **out) {
    char why[512];
    if (!pb_cuda_module_load(why, sizeof why)) {
        *out = NULL;
        pb_log_error("executor cuda: %s", why);
        return PB_ERR_UNSUPPORTED;
    }
    return g_mod.executor_cuda_create(m, p, out);
}

int pb_kbench_gpu_available(char *why, size_t why_len) {
    if (!pb_cuda_module_load(why, why_len)) return 0;
    return g_mod.gpu_available(why, why_len);
}

void pb_kbench_device_name(char *buf, size_t n) {
    if (!pb_cuda_module_load(NULL, 0)) {
        snprintf(buf, n, "unknown-gpu");
        return;
    }
    g_mod.device_name(buf, n);
}

void pb_kbench_print_context(FILE *f) {
    char why[512];
    if (!pb_cuda_module_load(why, sizeof why)) {
        fprintf(f, "context: %s\n", why);
        return;
    }
    g_mod.print_context(f);
}

void pb_kbench_get_info(pb_kbench_info *out) {
    if (!pb_cuda_module_load(NULL, 0)) {
        memset(out, 0, sizeof *out);
        snprintf(out->driver, sizeof out->driver, "unknown");
        snprintf(out->cuda, sizeof out->cuda, "-");
        snprintf(out->timer, sizeof out->timer, "-");
        return;
    }
    g_mod.get_info(out);
}

pb_status pb_kbench_run_gpu(const pb_kbench_opts *o, pb_kb_set *out, FILE *log, int *valid) {
    char why[512];
    *valid = 0;
    if (!pb_cuda_module_load(why, sizeof why)) {
        if (log) fprintf(log, "kernels: %s\n", why);
        return PB_ERR_UNSUPPORTED;
    }
    return g_mod.run_gpu(o, out, log, valid);
}

#endif /* PB_CUDA_MODULE */
