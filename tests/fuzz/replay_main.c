/* replay_main.c -- run a libFuzzer harness over files without libFuzzer (no clang):
 * every file named on the command line, or every file of every directory named, is
 * passed once to LLVMFuzzerTestOneInput.  The corpus replay of tests/cli_fuzz.sh. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); return 1; }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t k;
    while ((k = fread(buf + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

int main(int argc, char **argv) {
    int files = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) { perror(argv[i]); bad = 1; continue; }
        if (!S_ISDIR(st.st_mode)) { bad |= run_file(argv[i]); files++; continue; }
        DIR *d = opendir(argv[i]);
        struct dirent *de;
        while (d && (de = readdir(d))) {
            if (de->d_name[0] == '.') continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[i], de->d_name);
            bad |= run_file(p);
            files++;
        }
        if (d) closedir(d);
    }
    printf("replayed %d inputs\n", files);
    return bad;
}
