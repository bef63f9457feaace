/* server_metrics — what an inference server says about itself on /metrics, mapped onto one set
 * of common series whatever the engine: alias tables for vLLM (old and new names; also what
 * `dsperf serve` exposes), SGLang, TGI and llama.cpp; cumulative counters and histograms turned
 * into per-interval rates and means; and a libcurl scraper. A series the server does not expose
 * stays unknown (NaN, null in JSON), never zero. */
#ifndef DSP_SERVER_METRICS_H
#define DSP_SERVER_METRICS_H
#include "telemetry/prom.h"
#include <stddef.h>
#include <stdint.h>

typedef enum { SRV_ENGINE_UNKNOWN = 0, SRV_ENGINE_VLLM, SRV_ENGINE_SGLANG, SRV_ENGINE_TGI, SRV_ENGINE_LLAMACPP } srv_engine;

/* The common series, one value per scrape interval. */
typedef enum {
    SRV_RUNNING,                 /* requests running (gauge) */
    SRV_WAITING,                 /* requests queued (gauge) */
    SRV_KV_USAGE_PCT,            /* KV-cache blocks/tokens in use, 0..100 */
    SRV_PREEMPTIONS,             /* preemptions during the interval */
    SRV_PREFIX_HITS,             /* prefix-cache hits during the interval (tokens for vLLM/SGLang) */
    SRV_PREFIX_QUERIES,          /* prefix-cache queries during the interval */
    SRV_PREFIX_HIT_RATE_PCT,     /* hits/queries of the interval, else the engine's own hit-rate gauge */
    SRV_PROMPT_TOKENS_PER_S,
    SRV_GENERATION_TOKENS_PER_S,
    SRV_TOKENS_PER_STEP,         /* mean tokens per engine step over the interval */
    SRV_QUEUE_TIME_MS,           /* mean over requests that finished the phase during the interval */
    SRV_PREFILL_TIME_MS,
    SRV_DECODE_TIME_MS,
    SRV_COL_COUNT
} srv_col;
extern const char *const srv_col_names[SRV_COL_COUNT];

/* Raw quantities of one scrape: gauges and cumulative counters / histogram sums and counts. */
enum { SRV_RAW_RUNNING, SRV_RAW_WAITING, SRV_RAW_KV_PCT, SRV_RAW_PREFIX_RATE_PCT, SRV_RAW_PREEMPTIONS,
       SRV_RAW_PREFIX_HITS, SRV_RAW_PREFIX_QUERIES, SRV_RAW_PROMPT_TOKENS, SRV_RAW_GEN_TOKENS,
       SRV_RAW_STEP_TOKENS, SRV_RAW_QUEUE_S, SRV_RAW_PREFILL_S, SRV_RAW_DECODE_S, SRV_RAW_COUNT };
typedef struct {
    int64_t t_ns;
    double value[SRV_RAW_COUNT];   /* gauge / counter value; NaN when absent */
    double hsum[SRV_RAW_COUNT];    /* histogram _sum and _count; NaN when absent */
    double hcount[SRV_RAW_COUNT];
} srv_reading;

const char *srv_engine_name(srv_engine e);          /* "vllm", "sglang", "tgi", "llamacpp", "unknown" */
srv_engine srv_detect_engine(const prom_doc *doc);  /* by metric-name prefix */
/* Reads the raw quantities with engine e's alias table (first name found wins). */
void srv_read(const prom_doc *doc, srv_engine e, int64_t t_ns, srv_reading *out);
/* Per-interval series values from two consecutive readings (prev NULL: first scrape, so
 * only gauges are known). Counter resets give NaN for that interval. */
void srv_derive(const srv_reading *prev, const srv_reading *cur, double out[SRV_COL_COUNT]);

/* Scraper: one reusable libcurl easy handle (keep-alive), short timeout, size cap. */
typedef struct srv_scraper srv_scraper;
srv_scraper *srv_scraper_new(const char *url, int64_t timeout_ns);
/* Fetches the URL; on success *text (owned by the scraper, valid until the next call) and 0;
 * else -1 with a one-line reason in err. */
int srv_scrape(srv_scraper *s, const char **text, size_t *len, char *err, size_t errlen);
void srv_scraper_free(srv_scraper *s);
#endif
