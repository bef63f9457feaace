/* engine_metrics — what an inference server says about itself on /metrics, mapped onto one set
 * of common series whatever the engine: alias tables for vLLM (old and new names; also what
 * `dsperf serve` exposes), SGLang, TGI and llama.cpp; cumulative counters and histograms turned
 * into per-interval rates and means; and a libcurl scraper. A series the server does not expose
 * stays unknown (NaN, null in JSON), never zero. */
#ifndef DSP_ENGINE_METRICS_H
#define DSP_ENGINE_METRICS_H
#include "telemetry/prom.h"
#include <stddef.h>
#include <stdint.h>

typedef enum { EM_ENGINE_UNKNOWN = 0, EM_ENGINE_VLLM, EM_ENGINE_SGLANG, EM_ENGINE_TGI, EM_ENGINE_LLAMACPP } em_engine;

/* The common series, one value per scrape interval. */
typedef enum {
    EM_RUNNING,                 /* requests running (gauge) */
    EM_WAITING,                 /* requests queued (gauge) */
    EM_KV_USAGE_PCT,            /* KV-cache blocks/tokens in use, 0..100 */
    EM_PREEMPTIONS,             /* preemptions during the interval */
    EM_PREFIX_HITS,             /* prefix-cache hits during the interval (tokens for vLLM/SGLang) */
    EM_PREFIX_QUERIES,          /* prefix-cache queries during the interval */
    EM_PREFIX_HIT_RATE_PCT,     /* hits/queries of the interval, else the engine's own hit-rate gauge */
    EM_PROMPT_TOKENS_PER_S,
    EM_GENERATION_TOKENS_PER_S,
    EM_TOKENS_PER_STEP,         /* mean tokens per engine step over the interval */
    EM_QUEUE_TIME_MS,           /* mean over requests that finished the phase during the interval */
    EM_PREFILL_TIME_MS,
    EM_DECODE_TIME_MS,
    EM_PROMPT_TOKENS,           /* prompt tokens the server processed during the interval (llama.cpp:
                                 * evaluated ones only, so a prefix-cache hit does not count) */
    EM_KV_CAPACITY_TOKENS,      /* KV cache size in tokens (vLLM's cache_config_info: num_gpu_blocks x
                                 * block_size), what a prefix cache can hold at most */
    EM_SPEC_ACCEPT_LEN,         /* speculative decoding: tokens per decode step over the interval, 1 +
                                 * accepted / drafts (vLLM's spec_decode counters; SGLang's
                                 * spec_accept_length gauge) */
    EM_COL_COUNT
} em_col;
extern const char *const em_col_names[EM_COL_COUNT];

/* Raw quantities of one scrape: gauges and cumulative counters / histogram sums and counts. */
enum { EM_RAW_RUNNING, EM_RAW_WAITING, EM_RAW_KV_PCT, EM_RAW_PREFIX_RATE_PCT, EM_RAW_PREEMPTIONS,
       EM_RAW_PREFIX_HITS, EM_RAW_PREFIX_QUERIES, EM_RAW_PROMPT_TOKENS, EM_RAW_GEN_TOKENS,
       EM_RAW_STEP_TOKENS, EM_RAW_QUEUE_S, EM_RAW_PREFILL_S, EM_RAW_DECODE_S, EM_RAW_KV_CAPACITY,
       EM_RAW_SPEC_DRAFTS, EM_RAW_SPEC_ACCEPTED, EM_RAW_SPEC_LEN, EM_RAW_COUNT };
typedef struct {
    int64_t t_ns;
    double value[EM_RAW_COUNT];   /* gauge / counter value; NaN when absent */
    double hsum[EM_RAW_COUNT];    /* histogram _sum and _count; NaN when absent */
    double hcount[EM_RAW_COUNT];
} em_reading;

const char *em_engine_name(em_engine e);          /* "vllm", "sglang", "tgi", "llamacpp", "unknown" */
em_engine em_detect_engine(const prom_doc *doc);  /* by metric-name prefix */
/* Reads the raw quantities with engine e's alias table (first name found wins). */
void em_read(const prom_doc *doc, em_engine e, int64_t t_ns, em_reading *out);
/* Per-interval series values from two consecutive readings (prev NULL: first scrape, so
 * only gauges are known). Counter resets give NaN for that interval. */
void em_derive(const em_reading *prev, const em_reading *cur, double out[EM_COL_COUNT]);

/* Scraper: one reusable libcurl easy handle (keep-alive), short timeout, size cap. */
typedef struct em_scraper em_scraper;
em_scraper *em_scraper_new(const char *url, int64_t timeout_ns);
/* Fetches the URL; on success *text (owned by the scraper, valid until the next call) and 0;
 * else -1 with a one-line reason in err. */
int em_scrape(em_scraper *s, const char **text, size_t *len, char *err, size_t errlen);
void em_scraper_free(em_scraper *s);
#endif
