/* arrival — inter-arrival gaps of an open-loop plan: poisson (exponential gaps), gamma:K (shape K;
 * K < 1 burstier than Poisson, K > 1 smoother), constant. Seeded, so the same seed gives the same
 * schedule. A ramp (--ramp 0->40/s over 60s) raises the rate linearly and then holds it: arrivals
 * are drawn in "operational time" (expected arrivals so far, Λ(t) = ∫ rate) with unit-mean gaps
 * of the chosen kind, and mapped back to real time through Λ⁻¹. */
#ifndef DSP_ARRIVAL_H
#define DSP_ARRIVAL_H
#include "common/rng.h"
#include <stdint.h>
#include <stddef.h>

typedef enum { ARRIVAL_POISSON, ARRIVAL_GAMMA, ARRIVAL_CONSTANT } arrival_kind;

typedef struct {
    arrival_kind kind;
    double gamma_shape;   /* for ARRIVAL_GAMMA */
    double rate_per_s;    /* mean arrival rate (with a ramp: the rate it ends at) */
    double ramp_from_per_s; /* with a ramp: the rate it starts from */
    int64_t ramp_ns;      /* length of the ramp; 0 = no ramp */
} arrival;

/* Parses "poisson", "gamma:K", "constant". 0 ok, -1 malformed. */
int arrival_parse(const char *spec, double rate_per_s, arrival *out);
/* Next gap in ns (mean 1e9 / rate_per_s). */
int64_t arrival_next_gap_ns(const arrival *a, rng *r);
/* Parses a ramp "A->B over T" (e.g. "0->40/s over 60s"; rates and duration with units) into a.
 * 0 ok, -1 malformed (B must be > 0). */
int arrival_parse_ramp(const char *spec, arrival *a);
/* With a ramp: advances *lambda (expected arrivals so far) by one unit-mean gap and returns the
 * arrival's time in ns from the start of the plan. */
int64_t arrival_next_ramp_ns(const arrival *a, rng *r, double *lambda);
/* Fills times_ns[0..n) with a schedule starting at start_ns (first arrival at start_ns). */
void arrival_schedule(const arrival *a, rng *r, int64_t start_ns, int64_t *times_ns, size_t n);
/* Trace replay's pacing, one rule for bench (load/runner.c) and sim (run/sim.c): the wait before
 * an item is the gap between its timestamp and the previous item's, 0 when time goes back (an
 * unsorted trace, or one that starts over from its beginning). */
int64_t arrival_trace_gap_ns(int64_t prev_stamp_ns, int64_t stamp_ns);
/* In place: timestamps[0..n) become send offsets from the first item (0), paced as above. */
void arrival_trace_schedule(int64_t *stamps_ns, size_t n);
#endif
