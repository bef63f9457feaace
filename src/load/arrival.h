/* arrival — inter-arrival gaps of an open-loop plan: poisson (exponential gaps), gamma:K (shape K;
 * K < 1 burstier than Poisson, K > 1 smoother), constant. Seeded, so the same seed gives the same
 * schedule. */
#ifndef DSP_ARRIVAL_H
#define DSP_ARRIVAL_H
#include "common/rng.h"
#include <stdint.h>
#include <stddef.h>

typedef enum { ARRIVAL_POISSON, ARRIVAL_GAMMA, ARRIVAL_CONSTANT } arrival_kind;

typedef struct {
    arrival_kind kind;
    double gamma_shape;   /* for ARRIVAL_GAMMA */
    double rate_per_s;    /* mean arrival rate */
} arrival;

/* Parses "poisson", "gamma:K", "constant". 0 ok, -1 malformed. */
int arrival_parse(const char *spec, double rate_per_s, arrival *out);
/* Next gap in ns (mean 1e9 / rate_per_s). */
int64_t arrival_next_gap_ns(const arrival *a, rng *r);
/* Fills times_ns[0..n) with a schedule starting at start_ns (first arrival at start_ns). */
void arrival_schedule(const arrival *a, rng *r, int64_t start_ns, int64_t *times_ns, size_t n);
#endif
