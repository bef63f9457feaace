/* stability — how steady a server stays as its batch grows, over any sweep whose batch varies
 * (concurrency, rate, auto). Per level a stability score S in (0, 1] (1 = perfectly steady):
 *   itl-cv (default)   S = exp(-CV of the pooled inter-token latency), CV = std / mean
 *   tpot-tail          S = p50 TPOT / p99 TPOT (the inverse of the tail ratio p99/p50)
 *   throughput-cv      S = exp(-CV of the output tokens of each whole 1 s window of the timeline)
 * against the normalised batch size b = batch / STAB_BATCH_UNIT (batch: the level's concurrency; in
 * an open loop the mean requests in the system by Little's law, request rate x mean E2EL). It fits
 * S(b) = S0 e^(-lambda b) by least squares on ln S, with a bootstrap interval for lambda (residual
 * the levels' own errors, metrics/infer.h), and grades lambda: below STAB_HIGHLY highly stable (batch range
 * 64-512), up to STAB_MODERATELY moderately stable (32-256), above unstable (keep the batch where
 * the fit still holds 90 % of S0). A sweep with fewer than STAB_MIN_LEVELS loads, or whose interval is
 * wider than STAB_MAX_WIDTH and spans more than one grade, says why instead of giving lambda. Levels marked "measured": false
 * are left out. Pure functions of the document. */
#ifndef DSP_SWEEP_STABILITY_H
#define DSP_SWEEP_STABILITY_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum { STAB_ITL_CV = 0, STAB_TPOT_TAIL, STAB_THROUGHPUT_CV } stab_score;

#define STAB_BATCH_UNIT 64.0        /* b = batch / 64 */
#define STAB_MIN_LEVELS 4           /* distinct loads the fit needs */
#define STAB_HIGHLY 0.05            /* lambda below: highly stable */
#define STAB_MODERATELY 0.15        /* lambda up to: moderately stable; above: unstable */
#define STAB_MAX_WIDTH 0.15         /* a 95 % interval wider than the graded span, across grades, says nothing */
#define STAB_KEEP 0.9               /* unstable: the batch where the fit keeps this share of S0 */
#define STAB_RESAMPLES 4000
#define STAB_MIN_WINDOWS 5          /* throughput-cv: whole interior seconds a level needs */

/* "itl-cv", "tpot-tail", "throughput-cv". 0 ok, -1 unknown. */
int stability_parse_score(const char *name, stab_score *out);
const char *stability_score_name(stab_score s);
/* The score of one results document; NAN with why when it has no such data. *se_ln (may be NULL)
 * gets the standard error of ln S from the level's own samples (NAN when the document keeps none):
 * itl-cv and throughput-cv by the delta method for a coefficient of variation (moments of the
 * stored ITL samples at their true count; of the 1 s windows), tpot-tail by a bootstrap of the
 * stored per-request TPOTs. These treat gaps (windows) as independent; the fit widens its interval
 * when the levels scatter more than that (infer_bootstrap_slope's Birge ratio). */
double stability_score_of(const json_t *results, stab_score s, double *se_ln, char *why, size_t whylen);

typedef struct {
    bool fitted;                /* lambda means something */
    size_t n_points, n_loads;
    double s0, lambda, lo, hi;  /* lo/hi: the 95 % bootstrap interval of lambda */
    double r2;                  /* of the log-linear fit */
    double birge;               /* scatter around the fit over the points' own noise (>= 1; 1 unknown) */
    double b_min, b_max;        /* normalised batches measured */
    const char *grade;          /* "highly stable", "moderately stable", "unstable"; NULL unfitted */
    double range_lo, range_hi;  /* recommended batch range (sequences) */
    char range_note[200];
    char why[240];              /* unfitted: why; fitted: "" or a caveat (interval crosses a boundary) */
} stab_fit;

/* Fits S(b) = S0 exp(-lambda b) over n points (b normalised, S in (0, 1]); se_ln: each point's
 * standard error of ln S, or NULL (then a wild bootstrap-t of the residuals); seeded. */
void stability_fit(const double *b, const double *S, const double *se_ln, size_t n, uint64_t seed, stab_fit *out);

/* Sets doc's "stability" section with the given score. 0 ok, -1 not a sweep document. */
int sweep_stability_analyse(json_t *doc, stab_score score);
/* One or two lines for the terminal; nothing without a stability section. */
void sweep_stability_print(FILE *f, const json_t *doc);
#endif
