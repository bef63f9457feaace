/* run/sim_ladder — the simulator over a ladder: prompt or output lengths (a sweep along context
 * length at one load) or a concurrency / rate ladder. Each level is one run_sim (run/sim.h) with
 * the level's dataset, load and seed, on the virtual clock; the levels make one dsperf.sweep/1
 * document (run/sweep_doc.h), analysed as `dsperf sweep` analyses its own (knee, goodput, context
 * view, stability), so report, diagnose and compare read it alike. */
#ifndef DSP_RUN_SIM_LADDER_H
#define DSP_RUN_SIM_LADDER_H
#include "common/result.h"
#include "run/sim.h"
#include "sweep/stability.h"
#include "sweep/sweep.h"
#include <jansson.h>
#include <stdio.h>

typedef struct {
    run_sim_opts level;          /* every level's options; each level sets its dataset (length
                                  * axes), its load (load axes) and its seed */
    const char *axis;            /* input_len, output_len, concurrency, rate */
    double levels[SWEEP_MAX_LEVELS];
    size_t n_levels;
    const char *ladder_text;     /* the ladder as given, for the document's config */
    const char *base_dataset;    /* length axes: the dataset spec each level's length goes into (NULL: random) */
    long other_len;              /* length axes: the other length (0: the dataset's) */
    int repeats;                 /* runs per level, seeds seed, seed+1, ... (1) */
    stab_score score;
    const char *out_path;        /* rewritten after every level (NULL: none; "-": once, at the end) */
    const char *save_prefix;     /* per-request JSONL per level: PREFIX.LEVEL.REPEAT.jsonl (NULL: none) */
    FILE *progress;              /* a row per level as it finishes (NULL: quiet) */
} run_sim_ladder_opts;

/* Zeroes o, run_sim_defaults for the levels, one repeat. */
void run_sim_ladder_defaults(run_sim_ladder_opts *o);

typedef struct {
    json_t *doc;                 /* the sweep document (owned); NULL when no level ran */
    bool level_failed;           /* a level was judged failed by the run policy (it is kept) */
} run_sim_ladder_result;

/* Runs every level. DS_OK (see level_failed), or the first level's failure (DS_EINVAL, DS_ERUN,
 * DS_EIO) with err: the levels before it stay in the document, marked partial. */
ds_result run_sim_ladder(const run_sim_ladder_opts *o, run_sim_ladder_result *out, char *err, size_t errlen);
#endif
