/* cli.c -- the command line every pagedbench command shares (see cli.h). */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"   /* pb_parse_int, pb_parse_num */

enum { KEY_HELP = 'h', KEY_VERSION = 0x7fff };

/* Print text with every line after the first indented by `indent` spaces. */
static void put_indented(FILE *f, const char *text, int indent) {
    for (const char *s = text; *s; s++) {
        fputc(*s, f);
        if (*s == '\n' && s[1]) fprintf(f, "%*s", indent, "");
    }
}

void pb_cli_help(const pb_cli *c, FILE *f) {
    char lead[96];
    int n = snprintf(lead, sizeof lead, "usage: pagedbench %s ", c->cmd);
    fputs(lead, f);
    for (const char *s = c->usage ? c->usage : ""; *s; s++) {
        if (*s == '\n') fprintf(f, "\n%*spagedbench %s ", 7, "", c->cmd);
        else fputc(*s, f);
    }
    (void)n;
    fputs("\n", f);
    if (c->about && *c->about) fprintf(f, "\n%s\n", c->about);
    fputs("\noptions:\n", f);
    int width = 0;
    for (const pb_cli_opt *o = c->opts; o && o->name; o++) {
        int w = (int)strlen(o->name) + (o->arg ? 1 + (int)strlen(o->arg) : 0);
        if (w > width) width = w;
    }
    if (width < 10) width = 10;
    for (const pb_cli_opt *o = c->opts; o && o->name; o++) {
        char spec[160];
        snprintf(spec, sizeof spec, "%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        if (o->key < 256) fprintf(f, "  -%c, --%-*s  ", o->key, width, spec);
        else fprintf(f, "      --%-*s  ", width, spec);
        put_indented(f, o->help ? o->help : "", 12 + width);
        fputc('\n', f);
    }
    fprintf(f, "  -h, --%-*s  %s\n", width, "help", "this text");
    fprintf(f, "      --%-*s  %s\n", width, "version", "print the build's revision and exit");
    fputs("Options take their value as `--opt VALUE` or `--opt=VALUE`.\n", f);
    if (c->notes && *c->notes) fprintf(f, "\n%s\n", c->notes);
    fprintf(f, "\nexit status: 0 ok, 1 %s, 2 usage or config error (nothing run or written)", c->exit1 ? c->exit1 : "runtime failure");
    if (c->exit77) fprintf(f, ", 77 skipped (%s)", c->exit77);
    fputs(".\n", f);
}

static void vfail(const pb_cli *c, const char *prefix, const char *fmt, va_list ap) {
    fprintf(stderr, "pagedbench %s: %s", c->cmd, prefix ? prefix : "");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry 'pagedbench %s --help'.\n", c->cmd);
}

int pb_cli_fail(const pb_cli *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfail(c, NULL, fmt, ap);
    va_end(ap);
    return PB_EXIT_USAGE;
}

void pb_cli_bad(pb_cli_parser *p, const char *fmt, ...) {
    char prefix[160];
    snprintf(prefix, sizeof prefix, "%s: ", p->opt ? p->opt : "?");
    va_list ap;
    va_start(ap, fmt);
    vfail(p->cli, prefix, fmt, ap);
    va_end(ap);
    p->rc = PB_EXIT_USAGE;
}

void pb_cli_begin(pb_cli_parser *p, const pb_cli *c, int argc, char **argv) {
    memset(p, 0, sizeof *p);
    p->cli = c;
    p->argc = argc;
    p->argv = argv;
    p->rc = -1;
    int n = 0, k = 0;
    p->shorts[k++] = ':';   /* a missing value returns ':' */
    for (const pb_cli_opt *o = c->opts; o && o->name; o++) {
        PB_ASSERT(n < PB_CLI_MAX_OPTS);
        p->longs[n++] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL, o->key};
        if (o->key < 256) {
            p->shorts[k++] = (char)o->key;
            if (o->arg) p->shorts[k++] = ':';
        }
    }
    p->longs[n++] = (struct option){"help", no_argument, NULL, KEY_HELP};
    p->longs[n++] = (struct option){"version", no_argument, NULL, KEY_VERSION};
    p->longs[n] = (struct option){NULL, 0, NULL, 0};
    p->shorts[k++] = 'h';
    p->shorts[k] = 0;
    optind = 0;   /* a fresh scan: another command may have parsed before */
    opterr = 0;
}

/* The option just parsed, for messages: "--name" (written long or abbreviated) or "-x". */
static void set_opt_name(pb_cli_parser *p, int idx, int c) {
    static char buf[160];
    if (idx >= 0) snprintf(buf, sizeof buf, "--%s", p->longs[idx].name);
    else if (c > 0 && c < 256 && c != '?' && c != ':') snprintf(buf, sizeof buf, "-%c", c);
    else {
        const char *a = optind > 0 && optind <= p->argc ? p->argv[optind - 1] : "?";
        snprintf(buf, sizeof buf, "%.*s", (int)strcspn(a, "="), a);
    }
    p->opt = buf;
}

int pb_cli_next(pb_cli_parser *p) {
    if (p->rc >= 0) return PB_CLI_END;
    int idx = -1;
    int c = getopt_long(p->argc, p->argv, p->shorts, p->longs, &idx);
    p->arg = optarg;
    if (c == -1) {
        p->optind = optind;
        return PB_CLI_END;
    }
    set_opt_name(p, idx, c);
    switch (c) {
    case KEY_HELP:
        pb_cli_help(p->cli, stdout);
        p->rc = PB_EXIT_OK;
        return PB_CLI_END;
    case KEY_VERSION:
        printf("pagedbench %s\n", pb_git_rev());
        p->rc = PB_EXIT_OK;
        return PB_CLI_END;
    case ':':
        pb_cli_bad(p, "needs a value");
        return PB_CLI_END;
    case '?': {
        const char *a = optind > 0 && optind <= p->argc ? p->argv[optind - 1] : "?";
        if (optopt && optopt < 256 && strncmp(a, "--", 2)) pb_cli_fail(p->cli, "unknown option '-%c'", optopt);
        else if (strchr(a, '=') && !strncmp(a, "--", 2)) {
            /* "--flag=value" for a flag, or an unknown "--opt=value" */
            size_t l = strcspn(a + 2, "=");
            bool flag = false;
            for (const pb_cli_opt *o = p->cli->opts; o && o->name; o++)
                if (!o->arg && strlen(o->name) == l && !strncmp(o->name, a + 2, l)) flag = true;
            if (flag) pb_cli_fail(p->cli, "%.*s takes no value", (int)l + 2, a);
            else pb_cli_fail(p->cli, "unknown option '%.*s'", (int)l + 2, a);
        } else
            pb_cli_fail(p->cli, "unknown option '%s'", a);
        p->rc = PB_EXIT_USAGE;
        return PB_CLI_END;
    }
    default:
        return c;
    }
}

bool pb_cli_int(pb_cli_parser *p, int64_t lo, int64_t hi, int64_t *out) {
    int64_t v;
    if (!p->arg || !pb_parse_int(p->arg, &v) || v < lo || v > hi) {
        pb_cli_bad(p, "expected an integer in [%lld, %lld], got '%s'", (long long)lo, (long long)hi,
                   p->arg ? p->arg : "");
        return false;
    }
    *out = v;
    return true;
}

bool pb_cli_num(pb_cli_parser *p, double lo, double hi, double *out) {
    double v;
    if (!p->arg || !pb_parse_num(p->arg, &v) || !(v >= lo && v <= hi)) {
        if (isinf(hi)) pb_cli_bad(p, "expected a number >= %g, got '%s'", lo, p->arg ? p->arg : "");
        else pb_cli_bad(p, "expected a number in [%g, %g], got '%s'", lo, hi, p->arg ? p->arg : "");
        return false;
    }
    *out = v;
    return true;
}

int pb_cli_make_parent(const pb_cli *c, const char *path) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return 0;
    *slash = 0;
    for (char *q = dir + 1;; q++) {
        char saved = *q;
        if (saved == '/' || saved == 0) {
            *q = 0;
            if (mkdir(dir, 0777) && errno != EEXIST) {
                fprintf(stderr, "pagedbench %s: cannot create %s: %s\n", c->cmd, dir, strerror(errno));
                return -1;
            }
            *q = saved;
        }
        if (!saved) break;
    }
    return 0;
}

/* ---- progress ---- */
static void fmt_dur(char *b, size_t n, double s) {
    if (!(s >= 0) || !isfinite(s)) snprintf(b, n, "?");
    else if (s < 60) snprintf(b, n, "%.0fs", s);
    else if (s < 3600) snprintf(b, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else snprintf(b, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

void pb_cli_progress_start(pb_cli_progress *pr, bool quiet, double delay_s) {
    pr->on = !quiet && isatty(2);
    pr->shown = false;
    pr->t0 = pb_now_s();
    pr->delay_s = delay_s;
}

void pb_cli_progress_show(pb_cli_progress *pr, int64_t done, int64_t total, const char *unit, const char *what) {
    if (!pr->on) return;
    double el = pb_now_s() - pr->t0;
    if (el < pr->delay_s) return;
    double eta = done > 0 ? el / (double)done * (double)(total - done) : -1;
    char e1[32], e2[32], bar[32];
    fmt_dur(e1, sizeof e1, el);
    fmt_dur(e2, sizeof e2, eta);
    int w = 20, fill = total > 0 ? (int)(done * w / total) : w;
    for (int i = 0; i < w; i++) bar[i] = i < fill ? '#' : '.';
    bar[w] = 0;
    fprintf(stderr, "\r\033[K[%s] %lld/%lld %s, %s elapsed, ETA %s  %.50s", bar, (long long)done, (long long)total,
            unit ? unit : "", e1, e2, what ? what : "");
    fflush(stderr);
    pr->shown = true;
}

void pb_cli_progress_clear(pb_cli_progress *pr) {
    if (!pr->shown) return;
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
    pr->shown = false;
}
