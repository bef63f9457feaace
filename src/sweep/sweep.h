/* sweep — the analysis behind `dsperf sweep`, free of I/O so it can be tested on numbers:
 * load ladders ("1,2,4..256", "1..256x2", "1..40/s step 4"), knee detection (two-segment fit of
 * throughput vs load plus a latency upturn check), the SLO boundary by linear interpolation,
 * the over-saturation detector (in-flight and TTFT both rising with a significant slope over a
 * window), and t-distribution confidence intervals for repeated levels. */
#ifndef DSP_SWEEP_H
#define DSP_SWEEP_H
#include <stdbool.h>
#include <stddef.h>

#define SWEEP_MAX_LEVELS 256

/* ---- ladders ----
 * A comma-separated list of items; an item is a number or a range "A..B" with an optional
 * "xK" (geometric, factor K > 1) or " step S" / "+S" (arithmetic). A range without either is
 * doubling for concurrency and 10 even points for rates. Rates may carry "/s" anywhere. The
 * result is sorted ascending without duplicates. 0 ok, -1 with err. */
int sweep_parse_ladder(const char *spec, bool is_rate, double *out, size_t max, size_t *n, char *err,
                       size_t errlen);

/* ---- knee ----
 * Two-segment least-squares fit of y (output tokens/s) over x (load): every interior level k
 * splits the points into 0..k and k..n-1 (k shared), each fitted by a line; the split with the
 * smallest total squared error wins. A plateau is declared when
 *   tail slope <= SWEEP_KNEE_TAIL_RATIO x rise slope (rise slope > 0),
 *   the two segments cut the squared error of one line by >= SWEEP_KNEE_SSE_GAIN, and
 *   the throughput at the break is >= SWEEP_KNEE_PEAK_FRAC of the peak.
 * The knee load is where the two lines meet (clamped to the neighbouring levels); the knee
 * level is the measured level nearest to it on a log scale. The latency check (lat: p99 TTFT from
 * schedule, may be NULL) calls it an upturn when the slope after the knee level is >=
 * SWEEP_KNEE_LAT_SLOPE x the slope before it and the highest level's latency is >=
 * SWEEP_KNEE_LAT_RATIO x the knee level's. */
#define SWEEP_KNEE_MIN_LEVELS 4
#define SWEEP_KNEE_TAIL_RATIO 0.25
#define SWEEP_KNEE_SSE_GAIN 0.5
#define SWEEP_KNEE_PEAK_FRAC 0.85
#define SWEEP_KNEE_LAT_SLOPE 2.0
#define SWEEP_KNEE_LAT_RATIO 1.5

typedef struct {
    bool found;                 /* a plateau was found */
    size_t index;               /* measured level at the knee */
    double knee_load;           /* where the fitted lines meet */
    size_t break_index;         /* level shared by the two segments */
    double rise_slope, rise_intercept, tail_slope, tail_intercept;
    double tail_ratio;          /* tail / rise slope */
    double sse_one, sse_two, sse_gain;  /* gain = 1 - two/one */
    double peak, break_frac;    /* peak throughput; throughput at the break / peak */
    bool have_latency, latency_upturn;
    double lat_slope_before, lat_slope_after, lat_ratio;
    char reason[256];           /* why not found, or how it was decided */
} sweep_knee;

void sweep_find_knee(const double *x, const double *y, const double *lat, size_t n, sweep_knee *k);

/* ---- SLO boundary ----
 * The load where v (a latency percentile, rising with load) crosses thr, by linear
 * interpolation between the two measured levels around the first crossing. *where: 0 between
 * levels (returns the load), -1 already above thr at the lowest level, +1 never crosses (both
 * return NAN). */
double sweep_slo_crossing(const double *x, const double *v, size_t n, double thr, int *where);

/* ---- over-saturation detector ----
 * Fed during a level with (t, in-flight + queued) at every tick and (t, TTFT from schedule) for
 * every request whose first token arrived. Over the last window_s it fits a line to each by
 * least squares; a level is over-saturated when both slopes are positive with a one-sided t
 * statistic above the 99% quantile, in-flight rose by at least max(2, 10% of its mean) over the
 * window and TTFT by at least 10% of its mean. Needs >= 5 ticks and >= 10 TTFTs in the window
 * and a full window of time. */
typedef struct {
    double window_s;
    double *ct, *cv, *tt, *tv;  /* concurrency and TTFT samples */
    size_t cn, ccap, tn, tcap;
} sweep_osd;

typedef struct {
    bool saturated;
    bool enough;                /* the window held enough samples to judge */
    double conc_slope, conc_t, conc_mean;   /* requests/s, t statistic, mean in window */
    double ttft_slope, ttft_t, ttft_mean;   /* ms/s, t statistic, ms */
    double t_crit;
    size_t conc_n, ttft_n;
    double t0_s, t1_s;          /* the window judged */
} sweep_osd_verdict;

void sweep_osd_init(sweep_osd *d, double window_s);
void sweep_osd_free(sweep_osd *d);
int sweep_osd_add_conc(sweep_osd *d, double t_s, double conc);
int sweep_osd_add_ttft(sweep_osd *d, double t_s, double ttft_ms);
/* Judges the last window ending at now_s (or, when whole is true, every sample after the first
 * fifth of the level: the ramp-up from zero in-flight is not a trend). */
void sweep_osd_check(const sweep_osd *d, double now_s, bool whole, sweep_osd_verdict *v);

/* ---- levels the sweep could not measure ----
 * A level is "not measured" when too few of its requests completed to say anything about the
 * server at that load: dsperf itself cut more of them at the level's end (--duration + --grace)
 * than completed, so the ones that completed (if any) are the shortest — a biased sample; or no
 * request ended at all. (A level whose requests all failed on the server side is measured: that
 * is the server's answer at that load.) Such a
 * level is no server failure; it is left out of the knee, goodput and SLO-boundary fits, drawn as
 * not measured, and the sweep stops there (higher loads only take longer). The advice sizes the
 * level from an estimate of the E2E latency (the longest any cut request had been in flight, this
 * level's E2E — its p99, or by Little's law requests in flight / completions per second — or the
 * previous level's p99, whichever is longest):
 * --duration >= SWEEP_LEVEL_E2E_FACTOR x that (each user then completes a few requests, and the
 * grace covers the last), or --requests (a count-bound level has no deadline):
 * SWEEP_LEVEL_E2E_FACTOR per user (concurrency), or the arrivals of that many E2E times (rate),
 * at least SWEEP_LEVEL_MIN_REQUESTS. */
#define SWEEP_LEVEL_E2E_FACTOR 3
#define SWEEP_LEVEL_MIN_REQUESTS 20

typedef struct {
    bool measured;
    double min_duration_s;      /* advice: --duration at least this (whole seconds, rounded up) */
    long requests;              /* advice: or --requests this */
    char reason[480];           /* "not measured: requests outlast the level — ..." */
} sweep_level_check;

/* completed / failed: requests that completed / failed on the server side; cut: requests dsperf
 * cancelled at the level's deadline;
 * in_flight_s: the longest a cut request had been in flight; prev_e2e_s, this_e2e_s: p99 E2E of
 * the previous level and of this one's completed requests (NAN unknown); level_s/grace_s: the
 * level's --duration and --grace (0: count-bound). */
void sweep_check_level(double load, bool rate_axis, double completed, double failed, double cut, double in_flight_s,
                       double this_e2e_s, double prev_e2e_s, double level_s, double grace_s, sweep_level_check *out);

/* ---- statistics ---- */
/* Student t quantile for probability p in {0.95, 0.975, 0.99, 0.995} and df >= 1 (table up to
 * 30, Cornish-Fisher beyond). */
double sweep_t_quantile(double p, int df);
/* Least squares line through (x, y): slope, intercept, SSE; *t_stat = slope / its standard error
 * (INFINITY when the fit is exact with a non-zero slope, 0 when n < 3). */
void sweep_linfit(const double *x, const double *y, size_t n, double *slope, double *intercept, double *sse,
                  double *t_stat);
/* Mean, sample std and the two-sided confidence interval of the mean (t distribution). With
 * n < 2, lo and hi are NAN. */
void sweep_ci_mean(const double *v, size_t n, double confidence, double *mean, double *std, double *lo,
                   double *hi);
#endif

/* ---- the sweep document ("dsperf.sweep/1") ----
 * {"schema","tool","version","command_line","date","environment","config","axis",
 *  "partial","partial_reason",
 *  "levels":[{"load","repeat","kind","saturated","early_stopped","over_saturation":{...}|null,
 *             "results":{dsperf.results/1}}],
 *  "knee":{...}|null, "knee_note", "max_goodput":{...}|null, "ci":{...}} */
#include <jansson.h>
#include <stdio.h>
#define SWEEP_SCHEMA "dsperf.sweep/1"

/* Recomputes "knee", "knee_note", "max_goodput" and "ci" from doc's levels (per load: the mean
 * over repeats). slo_percentile picks the p<P> latency fields compared with the SLOs. 0 ok. */
int sweep_analyse(json_t *doc, double slo_percentile);
/* The final table (<= 100 columns): header, knee, max goodput, and with rows one row per load (the
 * knee row marked with ▶ when utf8, '>' otherwise); without, the headline only (the caller
 * printed each level's row as it finished). */
void sweep_print_table(FILE *f, const json_t *doc, bool utf8, bool rows);
/* One row for a level just measured (the live line), in the table's columns; with_header
 * prints the column names first. */
void sweep_print_level(FILE *f, const json_t *level, const char *axis, bool with_header);
/* Whether a level of a sweep document measured anything (sweep_check_level): its "measured", or
 * for files written before levels said so, the same rule on their counts. */
bool sweep_level_measured(const json_t *level);
/* Reads a sweep file and checks its schema. NULL with err. */
json_t *sweep_load(const char *path, char *err, size_t errlen);
