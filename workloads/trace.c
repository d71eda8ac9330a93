/* trace.c -- trace memory. */
#include <stdlib.h>
#include "trace.h"
void pb_trace_free(pb_trace *t) { if (!t) return; free(t->reqs); t->reqs = NULL; t->n = 0; }
