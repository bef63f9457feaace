/* sim_validate — the simulator against published measurements: reads the table of published
 * DeepSeek serving rows (data/published.json), simulates every case of every row with the same
 * engine and cost model as `dsperf sim`, and reports predicted vs published with the error per
 * metric, the median and the worst per target (TPOT, per-GPU output throughput, low-load TTFT).
 *
 * It also fits the cost model's mechanism parameters (per-kernel time, eager launch, scheduler
 * cost, collective latency, MoE kernel efficiencies; never a factor per row) to the table's rows
 * by least squares on log errors, and runs the leave-one-out check: fit without row i, predict
 * row i. A row's flags may set its engine, hardware and layout, never a fitted parameter.
 *
 * Case kinds: serve (a whole run: dataset, rate or concurrency, prompt count), decode (one steady
 * decode step at a batch and context), prefill (one prefill step of so many tokens), bench
 * (llama-bench: a prompt in micro-batches at a depth, or token generation). */
#ifndef DSP_SIM_VALIDATE_H
#define DSP_SIM_VALIDATE_H
#include "engine/cost_model.h"
#include "engine/sim.h"
#include <stdio.h>

typedef struct val_table val_table;

enum { VAL_TPOT, VAL_TPUT, VAL_TTFT, VAL_PREFILL, VAL_OTHER, VAL_NCAT };

/* 0 ok, -1 with err (unreadable file, bad row: unknown flag, a fitted parameter set by a row). */
int val_load(const char *path, val_table **out, char *err, size_t errlen);
void val_free(val_table *t);
/* Simulates every case with the fitted factors f (the other factors keep their defaults). */
int val_run(val_table *t, const cost_factors *f, char *err, size_t errlen);
/* Table of every metric: row, case, metric, published, predicted, error; then per target the
 * median and worst |error| and the count. */
void val_print(FILE *out, const val_table *t);
/* Median and worst |log error| as relative errors (exp - 1 of the absolute log error) per category;
 * n per category. */
void val_summary(const val_table *t, double med[VAL_NCAT], double worst[VAL_NCAT], int n[VAL_NCAT]);
/* Fits the mechanism parameters in f to every row but `exclude` (-1: none). Progress to log. */
int val_fit(val_table *t, cost_factors *f, int exclude, FILE *log, char *err, size_t errlen);
/* Leave-one-out: for every scored row, fit without it and predict it; prints a table and the
 * summary to out. */
int val_loo(val_table *t, FILE *out, char *err, size_t errlen);
/* Leave-one-group-out (every group: fit on the others from the priors, predict it) and the time
 * split (fit on generations <= split_year, predict the later ones), with the 80% intervals from
 * the other groups' out-of-group errors and their coverage. The headline of --validate. */
int val_logo(val_table *t, FILE *out, int split_year, char *err, size_t errlen);
/* The fitted parameters of f, one line each (for profiles and the README). */
void val_print_factors(FILE *out, const cost_factors *f);
/* The starting point of every fit (physically plausible values, not fitted). */
void val_prior_factors(cost_factors *f);
/* The defaults (cost_default_factors) with the fitted request path of a Python server's TTFT. */
void val_default_factors(cost_factors *f);
/* Calibrate on one load of a sweep over concurrency or request rate (dsperf sweep's JSON): at_load
 * (every run of it), or the lowest when at_load <= 0; predict every level the sweep counted as
 * measured: a table of measured vs predicted median TPOT and output throughput, with interval
 * coverage. */
int val_sweep(const json_t *doc, const char *path, const sim_params *setup, double at_load, FILE *out, char *err, size_t errlen);
/* 1 when doc (NULL allowed) is a sweep document (dsperf.sweep/...), 0 otherwise. */
int val_is_sweep(const json_t *doc);
#endif
