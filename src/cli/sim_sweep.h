/* sim_sweep — `dsperf sim` over a ladder: --input-len / --output-len (a sweep along context length at
 * one --concurrency or --rate) or a --concurrency / --rate ladder. Each level is one `dsperf sim`
 * run (cmd_sim, in process, on the virtual clock, with the level's dataset, load and seed); the
 * levels make one dsperf.sweep/1 document, analysed as `dsperf sweep` analyses its own (knee,
 * goodput, context view, stability), so report, diagnose and compare read it alike. */
#ifndef DSP_SIM_SWEEP_H
#define DSP_SIM_SWEEP_H
#include <jansson.h>
#include <stdbool.h>

/* Whether argv asks `dsperf sim` for a ladder (--input-len, or a ladder for --output-len,
 * --concurrency or --rate) rather than one run. */
bool sim_sweep_wanted(int argc, char **argv);
/* Runs the ladder; an exit code (2 after a usage error in one line). */
int sim_sweep_main(int argc, char **argv);

/* Set by sim_sweep while cmd_sim runs a level: cmd_sim hands its results document over there
 * (a new reference) instead of only writing it. NULL otherwise. */
extern json_t **sim_sweep_capture;
#endif
