/* sim_pd — prefill/decode disaggregation over simulated engines (see sim_pd.c): a pool of
 * prefill instances and a decode instance, the KV moved between them over the network. Made by
 * engine_sim_create when sim_params.prefill_instances > 0. */
#ifndef DSP_SIM_PD_H
#define DSP_SIM_PD_H
#include "engine/sim.h"

/* make builds one plain instance (the prefill instances from sim_params_prefill_side(p), the
 * decode instance from p). NULL with err. */
engine *engine_sim_pd_create(const sim_params *p, engine *(*make)(const sim_params *, char *, size_t), char *err, size_t errlen);
/* The decode instance's info with the transfers and the prefill pool's work added; -1 when e is
 * not a PD engine. */
int sim_pd_get_info(engine *e, int (*one_info)(engine *, sim_info *), sim_info *info);
#endif
