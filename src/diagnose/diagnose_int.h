/* diagnose_int — what the diagnosis rules share inside the module: the facts read from one
 * results document, finding builders and series helpers. Not part of the module's interface
 * (that is diagnose.h). */
#ifndef DSP_DIAGNOSE_INT_H
#define DSP_DIAGNOSE_INT_H
#include "diagnose/diagnose.h"
#include <stdbool.h>

/* Thresholds of the rules (the report lists them). */
#define DIAG_KV_FULL 0.95              /* KV usage fraction counted as full */
#define DIAG_WAITING_MEAN 1.0          /* mean waiting requests that make a queue */
#define DIAG_SEQS_FULL 0.95            /* running / max_num_seqs counted as the cap */
#define DIAG_TTFT_WAIT_RATIO 3.0       /* median TTFT / min TTFT: requests wait before service */
#define DIAG_ROOF_EFF 0.5              /* decode efficiency vs the HBM roofline for "bandwidth bound" */
#define DIAG_HEALTHY_EFF 0.7           /* ... and for "healthy" */
#define DIAG_PREFILL_SHARE 0.3         /* TTFT / E2EL for prefill to matter */
#define DIAG_TENSOR_HIGH 50.0          /* % tensor activity counted as compute bound */
#define DIAG_DRAM_HIGH 60.0            /* % DRAM bandwidth counted as bandwidth bound */
#define DIAG_ITL_SPIKE 3.0             /* p99 ITL / median ITL */
#define DIAG_STEP_SPIKE 3.0            /* max step / median step */
#define DIAG_STEP_CORR 0.5             /* correlation of step time with tokens in the step */
#define DIAG_PCIE_MB_S 16000.0         /* PCIe traffic per GPU (both directions, MB/s) */
#define DIAG_LINK_FRAC 0.3             /* NVLink traffic / link bandwidth */
#define DIAG_COMM_SHARE 0.2            /* modelled communication share of a decode step */
#define DIAG_GPU_IDLE_UTIL 60.0        /* % GPU util below which a loaded GPU is underused */
#define DIAG_OVERHEAD_SHARE 0.3        /* fixed step overhead / median step */
#define DIAG_THROTTLE_FRAC 0.1         /* fraction of samples throttled */
#define DIAG_CLIENT_CPU 0.9            /* client CPU share of one core */
#define DIAG_ERROR_FRAC 0.01           /* failed / total */
#define DIAG_CLASS_MISS 0.9            /* a request class with a smaller good fraction misses its SLO ... */
#define DIAG_CLASS_MEET 0.95           /* ... while another, at this fraction or more, meets its own */

typedef struct {
    const json_t *doc, *cfg, *engine, *eng_series, *tel, *client, *timeline;
    const diagnose_opts *o;
    double level;                      /* sweep load, NAN for a single run */
    /* deployment, resolved from flags, the sim config, the served model name, telemetry */
    char model[128], gpu[64], kv_dtype[16], weight_dtype[16];
    int tp;
    const char *deploy_source;         /* "flags", "sim config", "results config", "catalog default" */
    bool have_model, have_gpu;
    int max_num_seqs;                  /* 0 unknown */
    int max_num_batched_tokens;
    int chunked_prefill;               /* -1 unknown */
    double step_overhead_s;            /* sim factors, NAN unknown */
    /* the roofline at this run's batch and context (valid when have_roof) */
    bool have_roof;
    double roof_batch, roof_context, roof_achieved, roof_bound, roof_eff, roof_decode_ms, roof_comm_share;
    int roof_mem_bound;
    double roof_prefill_ms, roof_prompt;
    int roof_prefill_compute;
    const char *roof_batch_source;
} diag_in;

/* Finding builders. */
json_t *diag_finding(json_t *list, const char *cls, double confidence, const char *title_fmt, ...)
    __attribute__((format(printf, 4, 5)));
void diag_ev(json_t *f, double value, const char *unit, const char *source, const char *text_fmt, ...)
    __attribute__((format(printf, 5, 6)));
void diag_knob(json_t *f, const char *knob, const char *direction, const char *effect);
void diag_window(json_t *f, double t0_s, double t1_s);

/* Numbers from documents: NAN when absent. */
double diag_num(const json_t *o, const char *key);
/* Series statistics over a JSON array of numbers (nulls skipped). */
double diag_mean(const json_t *arr);
double diag_max(const json_t *arr);
double diag_median(const json_t *arr);
double diag_frac_at_least(const json_t *arr, double thr);
double diag_corr(const json_t *a, const json_t *b);
/* First and last t_s where arr >= thr; false when never. */
bool diag_span(const json_t *t, const json_t *arr, double thr, double *t0, double *t1);

/* Fills the roofline fields of in (needs model and GPU). */
void diag_roofline(diag_in *in);
/* Runs every rule on one results document; appends findings to list and a line per rule to
 * checked ({"rule","ran","used"|"why"}). */
void diag_rules(diag_in *in, json_t *list, json_t *checked);
#endif
