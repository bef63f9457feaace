/* sim_run — drives an engine on a virtual clock with a workload (open-loop arrival times or a
 * closed loop of N users) and measures each request as a client would: one record per request
 * (sched = send = arrival, a chunk per token event, first/last/end times, usage tokens), so the
 * lead's summary and results code treats a simulated run exactly like a `bench` run (also the
 * open-loop client queue under --max-concurrency, and the closed loop's think time). Also samples
 * the engine's gauges into time series (running, waiting, KV usage, preemptions, step time,
 * batch tokens). */
#ifndef DSP_SIM_RUN_H
#define DSP_SIM_RUN_H
#include "engine/engine.h"
#include "dataset/dataset.h"
#include "metrics/record.h"
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_RUN_T0_NS 1000000000LL   /* virtual clock origin: times are never 0 ("none" in records) */

/* Conversations (a sessions: dataset, dataset/sessions.h) as the simulator runs them: turn t's
 * prompt is the system prompt, every earlier user message with the answer the engine generated,
 * and a new message — lengths exactly as the spec gives them (no template tokens) — sent think_ns
 * after the previous answer ended; each block's content ids (a message's tokens are its own) go to
 * the engine, answer included, so a prefix cache holds the history as it would on a server. */
typedef struct {
    size_t n;                    /* conversations */
    int turns;
    int32_t first, user, out, system;   /* tokens: first message, later messages, answers, system prompt */
    int64_t think_ns;            /* from an answer's end to the next turn */
} sim_sessions;

typedef struct {
    size_t n;                    /* requests (conversations with sessions) */
    const int64_t *arrival_ns;   /* open loop: offsets from the start (non-decreasing); NULL: closed loop */
    int concurrency;             /* closed loop: users, each sends its next request when the last finished */
    int64_t think_ns;            /* closed loop: pause between a user's requests */
    int max_concurrency;         /* open loop: cap on in-flight requests (0 none); the excess waits in
                                  * a client queue and that wait is measured (send - sched) */
    const int32_t *in_tokens;    /* per request */
    const int32_t *max_tokens;   /* per request (ignore_eos: the exact output length) */
    size_t warmup;               /* the first `warmup` requests are marked warm-up */
    const int32_t *prefix_group; /* per request: shared-prefix group (-1 none), or NULL (prefix caching) */
    int32_t prefix_len;          /* tokens every request of a group shares */
    /* request i is dataset item i % n: its block ids (a trace's hash ids) go to the engine and its
     * bound on cached tokens (dataset_cacheable_tokens) into the record; NULL: none */
    const dataset *ds;
    /* conversations instead of a request plan: n, arrival_ns (one per conversation), concurrency
     * (users, each holding its conversation to the end) and warmup count conversations; in_tokens
     * and max_tokens are not used */
    const sim_sessions *sessions;
    int32_t block_tokens;        /* the engine's KV block size: conversations' ids are per block */
    size_t max_series_points;    /* series resolution cap (0: 2048) */
    /* The way from the client to the engine's queue, as over HTTP: a request reaches the engine
     * ingest_ns_per_token x its prompt tokens (upload, JSON parse, token count) after it was sent,
     * so a burst of same-timestamp requests reaches the engine small bodies first, as `serve
     * --engine sim` admits them; and a closed-loop user sends a seeded exponential turnaround (mean
     * turnaround_ns: the client's event loop, the server's last chunk) after its slot freed (the
     * record's queue time), so a closed loop of fixed lengths does not stay in lockstep on the
     * virtual clock. 0 and 0: straight in, in send order. */
    int64_t turnaround_ns;
    double ingest_ns_per_token;
    /* 1: a request's tokens after its second extend its last chunk (record_extend_last_chunk): TTFT,
     * TPOT, E2E and throughput as exact, no inter-token gaps past the first; what `sim --validate`
     * uses for cases that score none, at a fraction of the per-token bookkeeping */
    int coarse_chunks;
    /* ... and a fixed time on that way, with a per-token part in ingest_ns_per_token: a Python
     * server's request path (sim_params_add_request_path) */
    int64_t ingest_fixed_ns;
    uint64_t transit_seed;
} sim_workload;

/* The transit the CLI and the validation use (README-sim.md, "Client and transit"). */
#define SIM_TURNAROUND_NS 300000         /* 0.3 ms mean */
#define SIM_INGEST_NS_PER_TOKEN 50.0     /* 5 ms for a 100k-token prompt */

/* A workload spec read for the simulator. */
typedef struct {
    size_t n;                    /* requests; conversations for a sessions dataset */
    int32_t *ins, *outs;         /* per request (NULL for sessions) */
    int64_t *stamps_ns;          /* per request, the items' timestamps when every item has one; else NULL */
    int32_t *groups;             /* prefix: datasets: each request's group; else NULL */
    int32_t prefix_len;
    dataset *ds;                 /* the dataset, kept open: trace block ids, the bound, the
                                  * conversations (NULL for random: and lognormal:) */
    sim_sessions sess;           /* a sessions dataset's shape (sess.n 0 otherwise) */
} sim_load;

typedef struct {
    size_t n, cap;
    int64_t interval_ns;
    double *t_s;                 /* seconds from the start */
    int32_t *running, *waiting, *batch_tokens;
    float *kv_usage, *step_ms;
    int64_t *preemptions, *prompt_tokens, *gen_tokens, *steps;   /* cumulative */
} sim_series;

/* Request lengths for a dataset spec, without building prompt text: random:in=N,out=M,range=F
 * draws exactly the lengths dataset_open() draws for the same seed (so sim and bench see the same
 * workload); jsonl:FILE reads the file (in_tokens by the client's counter; items without
 * max_tokens get default_out; cycled when n exceeds the file, as bench does). *times_ns gets each
 * request's item timestamp when every item has one, else NULL. n == 0: as many requests as the
 * file has (random: error). 0 ok, -1 with err. */
int sim_workload_lengths(const char *spec, size_t *n, uint64_t seed, int32_t default_out, int32_t **ins,
                         int32_t **outs, int64_t **times_ns, char *err, size_t errlen);
/* Open-loop arrival times for a measured level: n requests at rate_per_s by the arrival process
 * (load/arrival.h: "poisson", "constant", ...; NULL or one it does not know: Poisson), from time
 * 0, on seed 1 (the seed every simulated level of a measured run uses, and a bench run's default, so
 * a run made with --seed 1 is simulated with its own arrivals). *times_ns: n values, free() them.
 * 0 ok, -1 (out of memory, or no positive finite rate). */
int sim_workload_arrivals(const char *process, double rate_per_s, size_t n, int64_t **times_ns);
/* The dataset spec of a random: level whose server found a share hit of the prompt tokens in its
 * prefix cache: the same requests with that share of each prompt already computed (prompts that
 * much shorter to the simulated engine). 1 and out written; 0 when spec is not random:in=N or hit is
 * below half a percent. */
int sim_workload_uncached(const char *spec, double hit, char *out, size_t outlen);
/* The share of its prompt tokens a run computed when its server found hit of them cached: 1 - hit,
 * or 1 when hit is below half a percent (a stray token) or the whole prompt (nothing to scale). */
double sim_workload_uncached_share(double hit);
/* The tokens one request of the dataset spec leaves in its llama-server slot on average (its prompt
 * and all but its last token); 0 when it has none. */
int32_t sim_workload_slot_tokens(const char *spec);
/* The whole workload for `dsperf sim`: the lengths as above (o: the trace options, --trace-window,
 * --time-scale, the trace's block size), and what the prefix cache needs. n as above; a sessions
 * dataset gives its conversations. 0 ok, -1 with err. sim_load_free() it. */
int sim_load_open(const char *spec, size_t n, uint64_t seed, int32_t default_out, const dataset_opts *o, sim_load *out,
                  char *err, size_t errlen);
void sim_load_free(sim_load *l);

/* Runs the whole workload to completion. recs receives exactly w->n records (index = position in
 * the plan); requests the engine rejects are recorded as HTTP 400 failures. 0 ok, -1 with err. */
int sim_run(engine *e, const sim_workload *w, recset *recs, sim_series *series, char *err, size_t errlen);
/* {"interval_s":..,"t_s":[..],"running":[..],"waiting":[..],"kv_usage":[..],"preemptions":[..],
 *  "step_ms":[..],"batch_tokens":[..]} */
json_t *sim_series_json(const sim_series *s);
/* The same series in the shape of telemetry's scraped server section (telemetry.series.server:
 * running, waiting, kv_usage_pct, preemptions / prompt_tokens_per_s / generation_tokens_per_s /
 * tokens_per_step per interval, null where the interval is unknown), so diagnose and report read a
 * simulated run like a scraped vLLM. */
json_t *sim_series_server_json(const sim_series *s);
void sim_series_free(sim_series *s);
#endif
