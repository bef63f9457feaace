/* sim_interval — the 80% prediction intervals of the simulator's numbers: a prediction x exp(+-q),
 * q per target (TPOT and inter-token latency, throughput, TTFT) and kind of load (steady or burst)
 * the 80th percentile of the simulator's |log error| on published deployments of that kind it was
 * not fitted to (the leave-one-group-out errors of `dsperf sim --validate data/published.json`,
 * which prints the same q; a test holds the two together). With a calibrated profile (`--profile`)
 * a steady load's q is that of calibrate-then-predict. */
#ifndef DSP_SIM_INTERVAL_H
#define DSP_SIM_INTERVAL_H
#include <jansson.h>

typedef enum { SIM_IV_TPOT, SIM_IV_TPUT, SIM_IV_TTFT, SIM_IV_N } sim_iv_target;

/* The kind of load a prediction is of: a burst (every request sent at once, no cap on how many are
 * in flight) is predicted less well than a steady load (closed loop, or an open loop at a finite
 * rate): how the engine takes in a queue of hundreds of prompts, and how the server's front end
 * feeds it, weigh on every number; its intervals are measured on the burst rows alone. */
typedef enum { SIM_IV_STEADY, SIM_IV_BURST, SIM_IV_UNSEEN, SIM_IV_LOADS } sim_iv_load;
/* SIM_IV_UNSEEN: a steady load of an engine on a GPU architecture that none of the table's fitted
 * rows runs (vLLM on CDNA4, say): the fits hold nothing of that build, and such deployments miss
 * by more (README-sim.md, "Five sources outside the table"); measured on the table's groups whose
 * engine and architecture no other fitted group shares. */

/* The engine of a profile name ("vllm" for vllm-v0, vllm-v1, vllm) and the architecture of a GPU
 * ("hopper" for h100, h200, h20 ...; "cdna4" for mi350x, mi355x; "" when not in the catalog). */
const char *sim_interval_engine(const char *engine_profile, char *buf, size_t len);
const char *sim_interval_arch(const char *gpu);
/* Whether the table's fitted rows hold that engine on that GPU's architecture (the list in
 * sim_interval.c, which `sim --validate` prints from the table; a test holds the two together). */
int sim_interval_seen(const char *engine_profile, const char *gpu);
/* The interval kind of a load of that deployment: a steady load of an unseen pair is SIM_IV_UNSEEN. */
sim_iv_load sim_interval_kind(sim_iv_load load, const char *engine_profile, const char *gpu);
/* The pairs the fits hold, "engine/arch" comma-separated (for --validate's check). */
const char *sim_interval_seen_list(void);

/* The log half-width of the 80% interval for target k under load kind `load`; calibrated: the
 * profile was fitted to the deployment's own measured run. */
double sim_interval_q(sim_iv_target k, sim_iv_load load, int calibrated);
const char *sim_interval_name(sim_iv_target k);
const char *sim_interval_load_name(sim_iv_load load);
/* What the half-widths of that kind of load were measured on (the "basis" every interval carries). */
const char *sim_interval_basis(sim_iv_load load, int calibrated);
/* The one definition of a burst: an open loop with no finite rate (every request due at once) and
 * no cap on the requests in flight below their number. */
sim_iv_load sim_interval_load_kind(int open_loop, double rate_per_s, int capped);
/* The load kind of a results object (its config: open, not a trace replay, rate, cap; a steady
 * load of a simulated deployment whose engine and architecture the fits do not hold, from its
 * config.sim: SIM_IV_UNSEEN). */
sim_iv_load sim_interval_load_of(const json_t *results);

/* {"level":0.8,"basis":..,"metrics":{"median_tpot_ms":{"value":v,"lo":..,"hi":..},..}} for the
 * TPOT, ITL, TTFT and throughput numbers present in a results object (new reference). */
json_t *sim_interval_json(const json_t *results, int calibrated);
#endif
