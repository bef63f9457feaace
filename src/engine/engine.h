/* engine — "when is each token emitted": the interface between a serving model of timing and the
 * HTTP/SSE layer that streams it (dsperf serve) or the offline driver (dsperf sim).
 *
 * An engine is a passive state machine on a clock it is handed (ns, monotonic for serve, virtual
 * for sim). The driver submits requests, asks when the next event is due, and calls advance()
 * with the current time; the engine reports every token emission and completion due by then
 * through the emit callback, in time order. Engines never sleep, never read the clock and never
 * do I/O, so the same engine runs in real time behind HTTP and as fast as the CPU allows in sim. */
#ifndef DSP_ENGINE_H
#define DSP_ENGINE_H
#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>

#define ENGINE_NEVER INT64_MAX

typedef struct {
    uint64_t id;              /* chosen by the driver, unique while in the engine */
    int32_t prompt_tokens;    /* length of the prompt */
    int32_t max_tokens;       /* tokens to generate (with ignore_eos the exact count) */
    bool ignore_eos;
    int32_t priority;         /* 0 default; lower runs first where the engine has priorities */
    /* a fault the driver wants the engine to schedule: after stall_after tokens, the next
     * token comes stall_ns later than it otherwise would (0 = no stall) */
    int32_t stall_after;
    int64_t stall_ns;
    /* Prefix identity, for engines with prefix caching: the prompt's leading blocks have these
     * content ids (a trace's hash_ids: block i covers tokens [i x hash_block_tokens, (i + 1) x
     * hash_block_tokens)); requests whose ids match share those blocks' KV. Or, simpler: the first
     * prefix_len tokens are the same for every request with this prefix_id (a shared system prompt).
     * The engine reads block_hashes during submit only. */
    const uint64_t *block_hashes;
    int32_t n_block_hashes;
    int32_t hash_block_tokens;  /* tokens per block_hashes entry; 0: the engine's KV block size */
    /* tokens the ids describe: 0 = the prompt (a trace's ids); prompt + max_tokens when the driver
     * knows what will be generated (serve's words, a simulated conversation's answer), so the
     * engine caches the answer's blocks under the ids the next turn's prompt will carry */
    int32_t hashed_tokens;
    uint64_t prefix_id;         /* 0: none */
    int32_t prefix_len;
    /* tokens whose KV arrives already computed (a decode instance behind a prefill instance):
     * blocks are allocated, nothing is prefilled */
    int32_t kv_ready_tokens;
} engine_request;

enum {
    ENGINE_EV_TOKENS = 1,     /* n_tokens were generated for id at t_ns */
    ENGINE_EV_FINISHED = 2,   /* id is complete (may be combined with TOKENS) */
    ENGINE_EV_FIRST = 4,      /* these are the request's first tokens (prefill done) */
    ENGINE_EV_SCHEDULED = 8,  /* the request left the waiting queue (prefill starts); n_tokens 0 */
    ENGINE_EV_PREEMPTED = 16, /* the request was preempted back to waiting; n_tokens 0 */
    ENGINE_EV_CACHED = 32,    /* with FIRST: cached_tokens is known (an engine with a prefix cache) */
};

typedef struct {
    uint64_t id;
    int64_t t_ns;             /* engine time of the event */
    int32_t n_tokens;         /* tokens emitted by this event (>= 1 with ENGINE_EV_TOKENS) */
    int32_t flags;            /* ENGINE_EV_* */
    const char *finish_reason;/* "length" or "stop" with ENGINE_EV_FINISHED */
    int32_t cached_tokens;    /* with ENGINE_EV_CACHED: prompt tokens served from the prefix cache
                               * when the request was first scheduled (vLLM's num_cached_tokens) */
} engine_event;

typedef void (*engine_emit_fn)(void *ctx, const engine_event *ev);

/* Gauges and counters an engine exposes (for /metrics and sim's engine series). A value of -1
 * means the engine does not model it. */
typedef struct {
    int64_t running;            /* requests in service (decoding or prefilling) */
    int64_t waiting;            /* admitted to the engine, not yet scheduled */
    double kv_usage;            /* 0..1 fraction of KV blocks in use (-1 unknown) */
    int64_t preemptions_total;
    int64_t prompt_tokens_total;
    int64_t generation_tokens_total;
    int64_t steps_total;        /* engine iterations (-1 unknown) */
    int64_t last_step_ns;       /* duration of the last step (-1 unknown) */
    int64_t last_step_tokens;   /* tokens processed by the last step (-1 unknown) */
} engine_stats;

typedef struct engine engine;

typedef struct {
    const char *name;                                          /* "fixed", "sim" */
    int  (*submit)(engine *e, const engine_request *r, int64_t now_ns);  /* 0 ok, -1 rejected */
    void (*cancel)(engine *e, uint64_t id, int64_t now_ns);    /* client went away */
    int64_t (*next_event_ns)(engine *e);                       /* ENGINE_NEVER when idle */
    void (*advance)(engine *e, int64_t now_ns, engine_emit_fn emit, void *ctx);
    void (*stats)(engine *e, engine_stats *out);
    void (*destroy)(engine *e);
} engine_ops;

struct engine {
    const engine_ops *ops;
};

static inline int engine_submit(engine *e, const engine_request *r, int64_t now_ns) { return e->ops->submit(e, r, now_ns); }
static inline void engine_cancel(engine *e, uint64_t id, int64_t now_ns) { e->ops->cancel(e, id, now_ns); }
static inline int64_t engine_next_event_ns(engine *e) { return e->ops->next_event_ns(e); }
static inline void engine_advance(engine *e, int64_t now_ns, engine_emit_fn emit, void *ctx) { e->ops->advance(e, now_ns, emit, ctx); }
static inline void engine_get_stats(engine *e, engine_stats *out) { e->ops->stats(e, out); }
static inline void engine_destroy(engine *e) { if (e) e->ops->destroy(e); }
#endif
