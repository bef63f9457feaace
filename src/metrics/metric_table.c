/* metric_table — the metric table and its lookups (see metric_table.h). */
#include "metrics/metric_table.h"
#include <string.h>

const metric_def metric_table[METRIC_COUNT] = {
#define METRIC_ROW_(key, unit, better, fmt, label) [M_##key] = { #key, unit, better, fmt, label },
    METRIC_TABLE(METRIC_ROW_)
#undef METRIC_ROW_
};

const metric_def *metric_find(const char *name) {
    for (size_t i = 0; name && i < METRIC_COUNT; i++)
        if (!strcmp(metric_table[i].name, name)) return &metric_table[i];
    return NULL;
}

metric_better metric_direction(const char *name) {
    const metric_def *d = metric_find(name);
    if (d) return d->better;
    size_t n = strlen(name);
    if (n > 3 && !strcmp(name + n - 3, "_ms")) return METRIC_LOWER_BETTER;
    if (!strcmp(name, "failed") || !strcmp(name, "errors") || !strcmp(name, "error_rate") || !strcmp(name, "output_token_mismatches"))
        return METRIC_LOWER_BETTER;
    if (strstr(name, "throughput") || strstr(name, "goodput") || !strcmp(name, "completed") || !strcmp(name, "good_requests") ||
        !strcmp(name, METRIC(max_output_tokens_per_s)))
        return METRIC_HIGHER_BETTER;
    return METRIC_NO_DIRECTION;
}
