/* arrival — inter-arrival gaps of open-loop plans (poisson, gamma:K, constant). */
#include "load/arrival.h"
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
