/* point.c -- a point's named metrics (point.h). */
#include "point.h"

#include <stdio.h>
#include <string.h>

void pb_pm_set(pb_point_metrics *m, const char *name, double v) {
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->name[i], name)) { m->value[i] = v; return; }
    PB_ASSERT(m->n < PB_MAX_METRICS);
    snprintf(m->name[m->n], sizeof m->name[0], "%s", name);
    m->value[m->n++] = v;
}

double pb_pm_get(const pb_point_metrics *m, const char *name, double dflt) {
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->name[i], name)) return m->value[i];
    return dflt;
}
