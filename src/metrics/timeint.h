/* timeint — intervals that respect time. A run's seconds and its pooled inter-token gaps are not
 * independent draws: a slow engine step delays every stream in the batch, a burst of prefills
 * slows the next few seconds. An interval that treats them as independent (mean ± z·s/√N) is too
 * narrow by the square root of the series' variance inflation (for an AR(1) series with lag-1
 * correlation φ: √((1+φ)/(1−φ)), 4.4× at φ = 0.9). Batch means fix that: the run's time axis is
 * cut into b batches of consecutive time, each batch's mean is one draw, and the batch means are
 * close to independent once a batch is much longer than the series' memory. The effective sample
 * size says how many independent draws the run was worth. Used for output and request throughput
 * and for pooled ITL's mean; percentiles keep their own intervals (infer.h). */
#ifndef DSP_TIMEINT_H
#define DSP_TIMEINT_H
#include "metrics/record.h"
#include <jansson.h>
#include <stddef.h>

typedef struct {
    double estimate;        /* ΣS / Σn over the batches (the ratio estimator) */
    double se;              /* its standard error from the batch means */
    double lo, hi;          /* estimate ± t(b−1) se, at the confidence asked */
    double iid_half_width;  /* z s_unit / √N: what an interval over independent units would claim */
    double ess;             /* effective sample size: s_unit² / se² (N when the units are independent) */
    long n_units;           /* N: the units (time bins or gaps) */
    int batches;            /* b */
} timeint_result;

/* The batch-means interval from b batches, batch j with sum sum[j] over cnt[j] units (cnt > 0),
 * the units' own variance unit_var (sample variance of one unit's value) and their number
 * n_units: estimate R = Σsum / Σcnt, se² = Σ_j (sum_j − R cnt_j)² / (b (b−1) c̄²) with c̄ the
 * mean cnt (the delta-method variance of a ratio; with equal cnt it is var(batch means) / b),
 * interval R ± t_{b−1} se. 0 ok; −1 with b < 2 or no units. */
int timeint_batch_means(const double *sum, const double *cnt, int b, double unit_var, long n_units,
                        double confidence, timeint_result *o);

/* The two-sided Student t quantile with df degrees of freedom: P(|T| <= t) = confidence. */
double timeint_t(double confidence, int df);

/* Batches from a series of n equal units: m = ⌊√n⌋ consecutive units a batch, b = ⌊n/m⌋
 * batches (the last n − b·m units are left out). 0 when n < 16 (fewer than 4 batches). */
int timeint_batch_size(long n_units);

/* The run's time-respecting intervals as a results object, or NULL when the run is too short
 * (fewer than 4 batches): {"method": "batch_means", "unit_s", "batch_s", "batches", and for
 * "output_throughput", "request_throughput" and "mean_itl_ms" each {"estimate", "lo", "hi",
 * "half_width", "iid_half_width", "ess", "n"}}. The time axis is [first send, last end) cut into
 * units of unit_s = 1 s (span/100 when the span is under 100 s, so every run long enough has
 * ≥ 100 units: unit ⌊(t − t0)·100 / span⌋ in whole nanoseconds); a chunk or completion counts in
 * the unit it arrived in, a gap in the unit its
 * later chunk arrived in. Each interval is centred on the reported figure (the throughputs given,
 * the exact mean of every gap) with the batch means' half-width; output throughput's batches
 * count the chunks' tokens (the client's count), scaled by Σ Nout / Σ chunk tokens onto the
 * reported figure's tokens. */
json_t *timeint_run(const recset *recs, double confidence, double output_throughput, double request_throughput);
#endif
