/* rng — a small seeded generator (xoshiro256**, seeded through splitmix64) and the distributions
 * load plans and fault injection draw from. Same seed, same sequence, on every machine. */
#ifndef DSP_RNG_H
#define DSP_RNG_H
#include <stdint.h>

typedef struct { uint64_t s[4]; } rng;

void rng_seed(rng *r, uint64_t seed);
uint64_t rng_next(rng *r);
double rng_uniform(rng *r);                    /* [0, 1) */
uint64_t rng_below(rng *r, uint64_t n);        /* [0, n) without modulo bias */
double rng_exponential(rng *r, double mean);   /* mean > 0 */
double rng_normal(rng *r);                     /* standard normal */
double rng_gamma(rng *r, double shape, double scale); /* Marsaglia–Tsang; shape > 0 */
/* Combines two 64-bit values into a well-mixed hash (order matters): chained block hashes and ids. */
uint64_t rng_mix64(uint64_t a, uint64_t b);
#endif
