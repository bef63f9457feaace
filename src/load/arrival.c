/* arrival — inter-arrival gaps of open-loop plans (poisson, gamma:K, constant). */
#include "load/arrival.h"
#include "common/units.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

int arrival_parse(const char *spec, double rate_per_s, arrival *out) {
    if (!spec || !out || !(rate_per_s > 0.0) || !isfinite(rate_per_s)) return -1;
    arrival a = { .kind = ARRIVAL_POISSON, .gamma_shape = 1.0, .rate_per_s = rate_per_s };
    if (strcmp(spec, "poisson") == 0) {
        a.kind = ARRIVAL_POISSON;
    } else if (strcmp(spec, "constant") == 0) {
        a.kind = ARRIVAL_CONSTANT;
    } else if (strncmp(spec, "gamma:", 6) == 0) {
        const char *s = spec + 6;
        char *end = NULL;
        double k = strtod(s, &end);
        if (end == s || *end || !(k > 0.0) || !isfinite(k)) return -1;
        a.kind = ARRIVAL_GAMMA;
        a.gamma_shape = k;
    } else {
        return -1;
    }
    *out = a;
    return 0;
}

/* The gap in ns as a double, so a schedule can accumulate without per-gap rounding drift. */
static double next_gap(const arrival *a, rng *r) {
    double mean_ns = 1e9 / a->rate_per_s;
    switch (a->kind) {
    case ARRIVAL_CONSTANT: return mean_ns;
    /* shape K, scale mean/K: mean unchanged, coefficient of variation 1/sqrt(K) */
    case ARRIVAL_GAMMA: return rng_gamma(r, a->gamma_shape, mean_ns / a->gamma_shape);
    case ARRIVAL_POISSON:
    default: return rng_exponential(r, mean_ns);
    }
}

int64_t arrival_next_gap_ns(const arrival *a, rng *r) {
    return llround(next_gap(a, r));
}

void arrival_schedule(const arrival *a, rng *r, int64_t start_ns, int64_t *times_ns, size_t n) {
    double offset = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0) offset += next_gap(a, r);
        times_ns[i] = start_ns + llround(offset);
    }
}

int64_t arrival_trace_gap_ns(int64_t prev_stamp_ns, int64_t stamp_ns) {
    return stamp_ns > prev_stamp_ns ? stamp_ns - prev_stamp_ns : 0;
}

void arrival_trace_schedule(int64_t *stamps_ns, size_t n) {
    if (!n) return;
    int64_t t = 0, prev = stamps_ns[0];
    stamps_ns[0] = 0;
    for (size_t i = 1; i < n; i++) {
        int64_t cur = stamps_ns[i];
        t += arrival_trace_gap_ns(prev, cur);
        prev = cur;
        stamps_ns[i] = t;
    }
}

int arrival_parse_ramp(const char *spec, arrival *a) {
    const char *arrow = strstr(spec, "->");
    const char *over = strstr(spec, " over ");
    if (!arrow || !over || over < arrow) return -1;
    char from[64], to[64];
    size_t fl = (size_t)(arrow - spec), tl = (size_t)(over - (arrow + 2));
    if (fl == 0 || fl >= sizeof from || tl == 0 || tl >= sizeof to) return -1;
    memcpy(from, spec, fl); from[fl] = 0;
    memcpy(to, arrow + 2, tl); to[tl] = 0;
    double r0, r1;
    int64_t ns;
    if (units_parse_rate_per_s(from, &r0) < 0 || units_parse_rate_per_s(to, &r1) < 0 || r1 <= 0) return -1;
    if (units_parse_duration_ns(over + 6, &ns) < 0 || ns <= 0) return -1;
    a->ramp_from_per_s = r0;
    a->rate_per_s = r1;
    a->ramp_ns = ns;
    return 0;
}

/* One unit-mean gap in operational time, of the arrival kind's shape. */
static double unit_gap(const arrival *a, rng *r) {
    switch (a->kind) {
    case ARRIVAL_CONSTANT: return 1.0;
    case ARRIVAL_GAMMA: return rng_gamma(r, a->gamma_shape, 1.0 / a->gamma_shape);
    default: return rng_exponential(r, 1.0);
    }
}

int64_t arrival_next_ramp_ns(const arrival *a, rng *r, double *lambda) {
    *lambda += unit_gap(a, r);
    double r0 = a->ramp_from_per_s, r1 = a->rate_per_s, T = a->ramp_ns / 1e9, L = *lambda;
    double lambda_T = (r0 + r1) * T / 2;   /* expected arrivals during the ramp */
    double t;
    if (L >= lambda_T) t = T + (L - lambda_T) / r1;
    else if (fabs(r1 - r0) < 1e-12) t = L / r0;
    else {
        /* solve (r1 - r0) / (2T) t^2 + r0 t = L on [0, T] */
        double k = (r1 - r0) / T;
        t = (-r0 + sqrt(r0 * r0 + 2 * k * L)) / k;
    }
    return (int64_t)llround(t * 1e9);
}
