/* compare_int — what compare.c, compare_samples.c (intervals from the runs' samples) and
 * compare_config.c (which settings differ, and which metrics that makes incomparable) share. Not
 * for other modules. */
#ifndef DSP_COMPARE_INT_H
#define DSP_COMPARE_INT_H
#include "compare/compare.h"
#include <stdbool.h>

/* One metric of two runs. */
typedef struct {
    char name[64];
    bool known;              /* the name means something in at least one run */
    double base, cand;       /* NAN when absent or null */
    int dir;                 /* +1 higher is better, -1 lower is better, 0 unknown */
    bool have_ci;
    double ci_lo, ci_hi;     /* of cand - base, in the metric's unit */
    double p_mwu;            /* distribution shift, NAN when not tested */
    char basis[160];         /* what the interval was computed from */
    char no_ci_why[200];     /* why there is no interval ("" : no samples) */
    char refused[400];       /* not comparable: the setting that differs ("" : comparable) */
} metric_cmp;

double cmp_num(const json_t *doc, const char *key);

/* ---- compare_samples.c ---- */

/* The interval of m's change (m->base, m->cand set) from the two runs' samples: latency
 * families from their sample sets, sized by each run's n (metrics/infer.h); throughputs from the
 * per-second timeline; nothing for other metrics (m->no_ci_why says why). */
void cmp_infer(metric_cmp *m, const json_t *base, const json_t *cand, const compare_opts *o);

/* ---- compare_config.c ---- */

/* What the runs were asked to do, by group, and how it differs. */
enum { CMP_WORKLOAD = 1, CMP_LOAD = 2, CMP_SLO = 4 };
typedef struct {
    unsigned differs;                  /* CMP_* groups that differ */
    char why[3][320];                  /* per group: "dataset \"random:..\" vs \"..\"" */
} cmp_config_diff;

/* base/cand: results or sweep documents (config, goodput_slo, max_tokens_mean). */
void cmp_config_diff_of(const json_t *base, const json_t *cand, cmp_config_diff *d);
/* The groups a metric's meaning depends on (CMP_*; 0: none, e.g. error counts). */
unsigned cmp_depends(const char *metric);
/* Fills m->refused when the metric depends on a group that differs (and the options do not allow
 * it). */
void cmp_refuse(metric_cmp *m, const cmp_config_diff *d, const compare_opts *o);
#endif
