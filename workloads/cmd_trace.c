/* PLACEHOLDER -- to be replaced by the module owner. */
#include <stdio.h>
#include "pb.h"
int pb_cmd_trace(int argc, char **argv);
int pb_cmd_trace(int argc, char **argv) { (void)argc; fprintf(stderr, "%s: not built yet\n", argv[0]); return PB_EXIT_RUNTIME; }
