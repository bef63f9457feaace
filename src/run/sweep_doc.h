/* run/sweep_doc — the one place a sweep document (dsperf.sweep/1) is started and its levels are
 * made: `dsperf sweep` (run/sweep.h), the simulator's ladders (run/sim_ladder.h) and tune's
 * simulated configurations (run/tune.h) all build theirs here, so report, diagnose and compare read
 * every sweep alike. The analysis sections (knee, goodput, intervals) are sweep/sweep.h's. */
#ifndef DSP_RUN_SWEEP_DOC_H
#define DSP_RUN_SWEEP_DOC_H
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* A new document with no level: schema, tool, version, command_line (NULL: ""), the date now,
 * environment null (the first level's fills it), config (stolen; NULL: null until the first level
 * sets it), the deployment the target described at pre-flight (copied reference; NULL: none),
 * axis, partial false, and empty analysis sections. NULL on out-of-memory. */
json_t *run_sweep_doc_new(const char *command_line, const char *axis, json_t *config, json_t *deployment);

/* A level of a simulated ladder (virtual clock: each level runs to its end, so the over-saturation
 * detector does not judge it): load, repeat, kind, seed, measured, the flags, and for a length
 * axis the level's input and output lengths (other_len: the length held fixed). Steals results. */
json_t *run_sweep_sim_level(json_t *results, const char *kind, double load, int repeat, uint64_t seed, long other_len);

/* Sets the document's environment from the level's results when it has none yet. */
void run_sweep_doc_environment(json_t *doc, const json_t *results);
#endif
