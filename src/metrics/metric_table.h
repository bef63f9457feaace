/* metric_table — the one table of dsperf's named metrics: each one's results-file key (vLLM's
 * names where vLLM has the quantity; a stable format), unit, which way is better, a printf format
 * for one value and a label for people. History's columns, compare's defaults and directions and
 * the report's CSV columns read it; code names a metric as METRIC(p99_ttft_ms), which is the key
 * string checked at compile time against the table (a misspelt name does not build), so the
 * keys are written here only (tests/one_definition_test.c checks the sources for literals). */
#ifndef DSP_METRIC_TABLE_H
#define DSP_METRIC_TABLE_H
#include <stddef.h>

typedef enum { METRIC_NO_DIRECTION = 0, METRIC_HIGHER_BETTER = 1, METRIC_LOWER_BETTER = -1 } metric_better;

/* X(key, unit, better, format, label); the key is also the enum's name (M_<key>). Units: "ms",
 * "s", "req/s", "tok/s", "" for counts, fractions and loads (a sweep's load is its axis's unit). */
#define METRIC_TABLE(X) \
    X(completed, "", METRIC_HIGHER_BETTER, "%.0f", "completed") \
    X(failed, "", METRIC_LOWER_BETTER, "%.0f", "failed") \
    X(error_rate, "", METRIC_LOWER_BETTER, "%.4f", "error rate") \
    X(duration, "s", METRIC_NO_DIRECTION, "%.2f", "duration") \
    X(request_throughput, "req/s", METRIC_HIGHER_BETTER, "%.2f", "request throughput") \
    X(output_throughput, "tok/s", METRIC_HIGHER_BETTER, "%.1f", "output throughput") \
    X(total_token_throughput, "tok/s", METRIC_HIGHER_BETTER, "%.1f", "total token throughput") \
    X(request_goodput, "req/s", METRIC_HIGHER_BETTER, "%.2f", "request goodput") \
    X(goodput_tok_s, "tok/s", METRIC_HIGHER_BETTER, "%.1f", "goodput") \
    X(max_output_tokens_per_s, "tok/s", METRIC_HIGHER_BETTER, "%.1f", "max output tokens per s") \
    X(mean_ttft_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "mean TTFT") \
    X(median_ttft_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "median TTFT") \
    X(p50_ttft_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "p50 TTFT") \
    X(p90_ttft_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "p90 TTFT") \
    X(p99_ttft_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "p99 TTFT") \
    X(mean_tpot_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "mean TPOT") \
    X(median_tpot_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "median TPOT") \
    X(p50_tpot_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "p50 TPOT") \
    X(p90_tpot_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "p90 TPOT") \
    X(p99_tpot_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "p99 TPOT") \
    X(mean_itl_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "mean ITL") \
    X(median_itl_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "median ITL") \
    X(p50_itl_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "p50 ITL") \
    X(p90_itl_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "p90 ITL") \
    X(p99_itl_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "p99 ITL") \
    X(mean_e2el_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "mean E2EL") \
    X(median_e2el_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "median E2EL") \
    X(p50_e2el_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "p50 E2EL") \
    X(p90_e2el_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "p90 E2EL") \
    X(p99_e2el_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "p99 E2EL") \
    X(min_ttft_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "min TTFT") \
    X(p99_ttft_from_schedule_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "p99 TTFT from schedule") \
    X(p99_e2el_from_schedule_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "p99 E2EL from schedule") \
    X(mean_queue_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "mean queue") \
    X(p99_queue_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "p99 queue") \
    X(mean_ttfa_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "mean TTFA") \
    X(median_ttfa_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "median TTFA") \
    X(min_ttfa_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "min TTFA") \
    X(p99_ttfa_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "p99 TTFA") \
    X(mean_answer_tpot_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "mean answer TPOT") \
    X(mean_reasoning_tpot_ms, "ms", METRIC_LOWER_BETTER, "%.2f", "mean reasoning TPOT") \
    X(ttft_outside_server_share, "", METRIC_LOWER_BETTER, "%.3f", "TTFT share outside the server") \
    X(spec_acceptance_length, "tok/step", METRIC_HIGHER_BETTER, "%.2f", "tokens per decode step") \
    X(knee_load, "", METRIC_NO_DIRECTION, "%.3g", "knee load") \
    X(knee_output_throughput, "tok/s", METRIC_HIGHER_BETTER, "%.1f", "knee output throughput") \
    X(peak_output_throughput, "tok/s", METRIC_HIGHER_BETTER, "%.1f", "peak output throughput") \
    X(max_goodput, "req/s", METRIC_HIGHER_BETTER, "%.2f", "max goodput") \
    X(max_goodput_load, "", METRIC_HIGHER_BETTER, "%.3g", "max goodput load") \
    X(slo_boundary_load, "", METRIC_NO_DIRECTION, "%.3g", "SLO boundary load")

typedef enum {
#define METRIC_ENUM_(key, unit, better, fmt, label) M_##key,
    METRIC_TABLE(METRIC_ENUM_)
#undef METRIC_ENUM_
    METRIC_COUNT
} metric_id;

typedef struct {
    const char *name;      /* the results file's key */
    const char *unit;
    metric_better better;
    const char *fmt;       /* printf format for one value in its unit */
    const char *label;     /* "p99 TTFT" */
} metric_def;

extern const metric_def metric_table[METRIC_COUNT];

/* The key of a metric of the table, as a string constant (usable in static initializers); a name
 * not in the table is a compile error. */
#define METRIC(key) (&#key[0 * sizeof(char[M_##key + 1])])

/* The table's entry for a key; NULL when the key is not in it. */
const metric_def *metric_find(const char *name);

/* Which way is better for any metric key: the table's answer, else by the name's shape (a
 * latency "_ms" or a failure count is better lower; a throughput, goodput or completion count
 * better higher), so percentiles asked for on the command line (p99.9_ttft_ms) have one too. */
metric_better metric_direction(const char *name);
#endif
