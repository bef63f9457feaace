/* sim_calibrate — fits the cost model's efficiency factors to a measured run, so the simulator
 * reproduces a real deployment: ITL against the decoding batch gives the achievable HBM bandwidth
 * fraction (slope) and the per-step overhead (intercept); TTFT against prompt length at low load
 * gives the achievable compute fraction. Input: the run's per-request JSONL (dsperf bench
 * --save-requests), or only its results JSON (a coarser fit of bw_eff from the median ITL).
 * Output: a profile JSON that --profile reads back. */
#ifndef DSP_SIM_CALIBRATE_H
#define DSP_SIM_CALIBRATE_H
#include "engine/sim.h"
#include <stdio.h>

typedef struct {
    cost_factors factors;       /* fitted (unfitted ones keep the input values) */
    int fitted_bw, fitted_overhead, fitted_compute;
    int sched;                  /* the profile's SCHED_*: whose step overhead is fitted (cost_step_overhead_of) */
    long n_requests, n_itl_samples, n_itl_bins, n_ttft_points;
    double itl_rmse_ms, ttft_rmse_ms;
    double ttft_offset_ms;      /* mean TTFT the model does not explain (HTTP, tokenization, queue) */
    char notes[8][256];
    int n_notes;
} sim_calibration;

/* Per-request samples of a run (parsed from the JSONL). */
typedef struct {
    long n;
    int64_t *send_ns, *first_ns, *last_ns;
    int32_t *in_tokens, *out_tokens;
    int64_t **chunk_ns;
    uint32_t *n_chunks;
} sim_calib_data;

int sim_calib_load_jsonl(const char *path, sim_calib_data *d, char *err, size_t errlen);
void sim_calib_data_free(sim_calib_data *d);
/* Fits the factors for the setup in p (model, GPU, TP, dtypes) to d. 0 ok, -1 with err (too few
 * samples). */
int sim_calibrate(const sim_params *p, const sim_calib_data *d, sim_calibration *out, char *err, size_t errlen);
/* results_path: a results JSON (aggregate fit) or a per-request JSONL; requests_jsonl (optional)
 * the per-request JSONL of the same run (not used where the profile's step is llama.cpp's expert
 * loop: its results JSON calibrates). -1 with err, -2 when the input cannot calibrate this setup. */
int sim_calibrate_from_files(const sim_params *p, const char *results_path, const char *requests_jsonl,
                             sim_calibration *out, char *err, size_t errlen);
/* The aggregate fit on one run's results object in memory (a results document, or one level of a
 * sweep): what sim_calibrate_from_files does with a results JSON. */
int sim_calibrate_results(const sim_params *p, const json_t *results, sim_calibration *out, char *err, size_t errlen);
int sim_calibration_write(const sim_calibration *c, const sim_params *p, const char *path, char *err, size_t errlen);
void sim_calibration_print(FILE *f, const sim_calibration *c, const char *path);
/* The KV cells a llama-server run held, time-averaged: its results' mean KV usage (the server's
 * kv_cache_usage_ratio) x the capacity the run read from GET /props (deployment.kv_capacity_tokens).
 * 0 when the results carry either not. */
double sim_results_kv_cells(const json_t *results);
/* The measured run in a parsed document: a results document itself, or a sweep's lowest measured
 * level (the one to calibrate on); NULL for anything else. */
const json_t *sim_run_results(const json_t *doc);
/* A sweep document (dsperf sweep's JSON): 1 when its level i measured anything it can stand for
 * (requests completed at a load it can run, not set aside as unmeasured). */
int sim_sweep_level_measured(const json_t *doc, size_t i);
/* The index of the sweep's first measured level at load (load <= 0: its first measured level); -1
 * with err naming the loads it has. */
long sim_sweep_level_at(const json_t *doc, double load, char *err, size_t errlen);
/* p's llama-server as the sweep's levels before level i left it: one slot keeping KV per distinct
 * prompt sent before (a sweep of fresh prompts says so in first_prompt; one that resent them, as
 * many as its largest level before), each with a request's tokens of the sweep's dataset. */
void sim_sweep_level_server(const json_t *doc, size_t i, sim_params *p);
#endif
