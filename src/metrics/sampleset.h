/* sampleset — one metric's samples in the form a results file keeps them: every sample of the run,
 * at any run length, in a few kilobytes, exact to merge and enough for a correctly sized interval.
 *
 * It is the HDR histogram of the samples (hdr.h's fixed log-linear bucket layout: every value is
 * known within 2^-11 = 0.049 % of itself) kept as its non-empty buckets in ascending order, with
 * the exact count, min, max, mean and sum of squared deviations (m2) beside them. Percentiles and
 * order statistics read the buckets (midpoints clamped to min/max, as hdr.h does); mean and std are
 * exact. A run of n requests keeps all n samples, so an interval computed from the set is sized
 * for n (results files before this kept at most 2,000 quantiles of a longer run).
 *
 * Merge-friendly (for runs sharded over hosts, or repeats): the bucket layout is fixed, so the set
 * of a union of runs is the sum of the bucket counts, the min of the mins, the max of the maxes and
 * Chan et al.'s combination of mean and m2. sampleset_merge(a, b) therefore holds exactly what one
 * set built over all the samples would hold (mean/m2 up to double rounding), in any merge order.
 *
 * In JSON (results "samples"): {"n":N,"min":V,"max":V,"mean":X,"m2":X,"buckets":"BASE64"} where
 * BASE64 (RFC 4648) packs unsigned LEB128 varints, a pair per non-empty bucket: (index gap, count)
 * with gap = index - previous index - 1 (the first: the index itself). Values are integers in the
 * unit the caller names (ns for latencies, tokens for token counts). */
#ifndef DSP_SAMPLESET_H
#define DSP_SAMPLESET_H
#include "metrics/hdr.h"
#include <jansson.h>
#include <stdint.h>
#include <stddef.h>

#define SAMPLESET_FORMAT "hdr-buckets/1"

typedef struct {
    uint64_t n;              /* samples */
    int64_t min, max;        /* exact; valid when n > 0 */
    double mean, m2;         /* exact mean and sum of squared deviations */
    size_t nb, cap;          /* non-empty buckets */
    uint32_t *idx;           /* bucket index (hdr.h layout), strictly ascending [nb] */
    uint64_t *cnt;           /* samples in the bucket [nb], each > 0 */
} sampleset;

void sampleset_init(sampleset *s);
void sampleset_free(sampleset *s);
/* s becomes the set of h's samples (s must be empty). 0 ok, -1 out of memory. */
int sampleset_from_hdr(sampleset *s, const hdr_hist *h);
/* s becomes the set of n values, value v[i] counted w[i] times (w NULL: once each). The exact
 * mean and m2 are over the values as given. 0 ok, -1 out of memory. */
int sampleset_from_values(sampleset *s, const int64_t *v, const uint64_t *w, size_t n);
/* dst := dst ∪ src. 0 ok, -1 out of memory (dst unchanged). */
int sampleset_merge(sampleset *dst, const sampleset *src);

double sampleset_mean(const sampleset *s);            /* NAN when empty */
double sampleset_var(const sampleset *s);             /* sample variance m2 / (n - 1); NAN when n < 2 */
double sampleset_std(const sampleset *s);             /* population std, as the summary reports it */
/* The sample of 0-based rank k (k < n) in ascending order: its bucket's midpoint clamped to
 * [min, max]; rank 0 and n - 1 are the exact min and max. */
double sampleset_at_rank(const sampleset *s, uint64_t k);
/* numpy-linear percentile p in [0, 100] (as stats.h). NAN when empty. */
double sampleset_percentile(const sampleset *s, double p);
/* The value a bucket stands for (its midpoint within [min, max]). */
double sampleset_bucket_value(const sampleset *s, size_t i);

/* {"n","min","max","mean","m2","buckets"}; NULL on out of memory. */
json_t *sampleset_to_json(const sampleset *s);
/* Reads what sampleset_to_json wrote. 0 ok, -1 malformed (s left empty). */
int sampleset_from_json(sampleset *s, const json_t *j);
#endif
