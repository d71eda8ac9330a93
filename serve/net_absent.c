/* net_absent.c -- `serve` and `loadgen` in a build configured with -DPB_NET=OFF (no
 * libmicrohttpd or libcurl; tools/gpu/run_gpu.sh builds so on a borrowed GPU machine).
 * Both commands say what is missing and exit 2; every other command is unchanged. */
#include <stdio.h>

#include "commands.h"

static int net_absent(const char *cmd) {
    fprintf(stderr, "pagedbench %s: this build has no HTTP support (configured with -DPB_NET=OFF: "
            "libmicrohttpd and libcurl left out); reconfigure with -DPB_NET=ON\n", cmd);
    return 2;
}

int pb_cmd_serve(int argc, char **argv) {
    (void)argc; (void)argv;
    return net_absent("serve");
}

int pb_cmd_loadgen(int argc, char **argv) {
    (void)argc; (void)argv;
    return net_absent("loadgen");
}
