/* compare_config — which settings of two runs differ, and which metrics that leaves without a
 * meaningful comparison. A latency or a throughput measures the deployment under a workload: the
 * model, the API, the dataset, the lengths asked for (max_tokens), whether EOS is ignored, the unit
 * prompt lengths were made in — and the load (concurrency, rate, arrival, the client's cap). When
 * those differ, a change of p99 TTFT says nothing about the deployment. Goodput also depends on
 * the SLO it is judged against: two runs with TTFT SLOs of 40 ms and 5 s have goodputs that are
 * not the same quantity. Such a metric is refused (and a gate rule on its change fails, naming
 * the setting) unless --allow-config-change says the difference is the point. Error counts and
 * absolute rules (p99_ttft_ms:<=50, errors:0) hold whatever the settings. */
#include "compare/compare_int.h"
#include "metrics/metric_table.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const workload_keys[] = { "model", "api", "dataset", "length_unit", "ignore_eos", NULL };
static const char *const load_keys[] = { "load", "concurrency", "rate_per_s", "arrival", "max_concurrency", "think_s",
                                         "ramp_from_per_s", "ramp_s", NULL };

/* Appends "key a vs b" to buf for each key whose values differ. */
static void diff_keys(const json_t *cb, const json_t *cc, const char *const *keys, char *buf, size_t len) {
    for (const char *const *k = keys; *k; k++) {
        json_t *x = json_object_get(cb, *k), *y = json_object_get(cc, *k);
        if ((!x || json_is_null(x)) && (!y || json_is_null(y))) continue;
        if (x && y && json_equal(x, y)) continue;
        char *sx = x ? json_dumps(x, JSON_ENCODE_ANY) : NULL, *sy = y ? json_dumps(y, JSON_ENCODE_ANY) : NULL;
        size_t n = strlen(buf);
        snprintf(buf + n, len - n, "%s%s %s vs %s", n ? ", " : "", *k, sx ? sx : "(none)", sy ? sy : "(none)");
        free(sx);
        free(sy);
    }
}

/* The SLO a run's goodput was judged against: results "goodput_slo", or a sweep's config "slo". */
static const json_t *slo_of(const json_t *doc) {
    const json_t *s = json_object_get(doc, "goodput_slo");
    return s ? s : json_object_get(json_object_get(doc, "config"), "slo");
}

static char *slo_text(const json_t *s) {
    if (!json_object_size(s)) return strdup("none");
    char buf[160] = "";
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)s, k, v) {
        size_t n = strlen(buf);
        snprintf(buf + n, sizeof buf - n, "%s%.*s %g ms", n ? ", " : "", (int)(strlen(k) > 3 ? strlen(k) - 3 : strlen(k)), k,
                 json_number_value(v));
    }
    return strdup(buf);
}

void cmp_config_diff_of(const json_t *base, const json_t *cand, cmp_config_diff *d) {
    memset(d, 0, sizeof *d);
    const json_t *cb = json_object_get(base, "config"), *cc = json_object_get(cand, "config");
    diff_keys(cb, cc, workload_keys, d->why[0], sizeof d->why[0]);
    double mb = cmp_num(base, "max_tokens_mean"), mc = cmp_num(cand, "max_tokens_mean");
    if (isfinite(mb) && isfinite(mc) && fabs(mb - mc) > 0.01 * fmax(mb, mc)) {
        size_t n = strlen(d->why[0]);
        snprintf(d->why[0] + n, sizeof d->why[0] - n, "%smax_tokens (mean) %.6g vs %.6g", n ? ", " : "", mb, mc);
    }
    diff_keys(cb, cc, load_keys, d->why[1], sizeof d->why[1]);
    const json_t *sb = slo_of(base), *sc = slo_of(cand);
    if (json_object_size(sb) + json_object_size(sc) && !(sb && sc && json_equal(sb, sc))) {
        char *tb = slo_text(sb), *tc = slo_text(sc);
        snprintf(d->why[2], sizeof d->why[2], "SLO %s vs %s", tb ? tb : "?", tc ? tc : "?");
        free(tb);
        free(tc);
    }
    for (int g = 0; g < 3; g++) if (d->why[g][0]) d->differs |= 1u << g;
}

unsigned cmp_depends(const char *name) {
    if (!strcmp(name, "errors") || !strcmp(name, "failed") || !strcmp(name, "error_rate") ||
        !strcmp(name, "output_token_mismatches"))
        return 0;
    if (strstr(name, "goodput") || !strcmp(name, "good_requests") || !strcmp(name, METRIC(slo_boundary_load)))
        return CMP_WORKLOAD | CMP_LOAD | CMP_SLO;
    size_t n = strlen(name);
    if ((n > 3 && !strcmp(name + n - 3, "_ms")) || strstr(name, "throughput") || strstr(name, "knee") ||
        !strcmp(name, "completed") || !strcmp(name, METRIC(max_output_tokens_per_s)))
        return CMP_WORKLOAD | CMP_LOAD;
    return 0;
}

void cmp_refuse(metric_cmp *m, const cmp_config_diff *d, const compare_opts *o) {
    m->refused[0] = 0;
    unsigned hit = cmp_depends(m->name) & d->differs;
    if (!hit || o->allow_config_change) return;
    static const char *const what[] = { "workload", "load", "SLO" };
    size_t n = 0;
    for (int g = 0; g < 3; g++) {
        if (!(hit & (1u << g))) continue;
        n += (size_t)snprintf(m->refused + n, n < sizeof m->refused ? sizeof m->refused - n : 0, "%sthe runs differ in %s (%s)",
                              n ? "; " : "", what[g], d->why[g]);
        if (n >= sizeof m->refused) break;
    }
}
