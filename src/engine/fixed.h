/* fixed — the fixed-timing engine: every request gets TTFT = ttft + prompt_tokens x
 * prefill_per_token after it enters service, then a chunk of tokens_per_chunk tokens every itl,
 * on absolute deadlines (chunk k is due at first + k*itl exactly, so nothing drifts). At most
 * `capacity` requests are in service; later ones wait FIFO and the wait shows in their TTFT.
 * It is the known-timing fixture behind `dsperf serve --engine fixed` and the client's tests. */
#ifndef DSP_ENGINE_FIXED_H
#define DSP_ENGINE_FIXED_H
#include "engine/engine.h"
#include <stdint.h>
#include <stddef.h>

typedef struct {
    int64_t ttft_ns;               /* base time to first token from entering service (50 ms) */
    int64_t itl_ns;                /* gap between emissions (chunks) (10 ms); 0 = back to back */
    int64_t prefill_per_token_ns;  /* added to TTFT per prompt token (0) */
    int32_t capacity;              /* requests in service at once; 0 = unlimited */
    int32_t tokens_per_chunk;      /* tokens per emission, like MTP/speculative decoding (1) */
    double jitter;                 /* 0..1: each gap is scaled by 1 +- jitter (uniform, seeded); 0 = off */
    double jitter_per_stream;      /* added to jitter per request in service when a gap is drawn (load-
                                    * dependent jitter: a known law for stability tests); 0 = off */
    uint64_t seed;                 /* for jitter */
    int32_t max_events_per_advance;/* fairness bound for itl 0: events one advance() may emit */
} fixed_params;

void fixed_default_params(fixed_params *p);

/* Sets one option by its command-line name (without "--"): ttft, itl, prefill-per-token,
 * capacity, tokens-per-chunk, jitter, jitter-per-stream, max-events-per-advance. Returns 0 ok,
 * 1 unknown key, -1 bad value (err says why). */
int fixed_params_set(fixed_params *p, const char *key, const char *value, char *err, size_t errlen);
/* The keys fixed_params_set accepts, NULL-terminated (for getopt_long tables). */
const char *const *fixed_params_keys(void);

/* The jitter amplitude with n requests in service: jitter + jitter_per_stream x n, at most
 * FIXED_JITTER_MAX. A deadline on the grid moves by up to +- amplitude x itl, uniform, so below 0.5
 * the pooled ITL has mean itl and coefficient of variation amplitude x sqrt(2/3) (each gap is the
 * difference of two independent offsets; the first gap of a request, after an unjittered first
 * chunk, has half that variance). */
#define FIXED_JITTER_MAX 0.95
double fixed_jitter_at(const fixed_params *p, int64_t n_in_service);

/* Help text for the options above (for `dsperf serve --help`). */
extern const char fixed_params_help[];

/* NULL on bad parameters (err says which). Free with engine_destroy(). */
engine *engine_fixed_create(const fixed_params *p, char *err, size_t errlen);
#endif
