/* validity — one policy, for every command that measures (bench, sim, each level of a sweep, tune's
 * sweeps, monitor), for what a run's numbers can be trusted for and which exit code it earns. The
 * rules read what the summary measured (metrics/summary.h), so bench (real HTTP) and sim (the
 * simulated engine) warn and fail alike.
 *
 * Warnings (printed, kept in the results as "warnings": [{"kind","message"}]; the run still counts):
 *   overload   open loop: the server did not keep up with the offered rate (server_overloaded):
 *              its latencies grow with the run's length and describe no steady state
 *   client     the client fell behind its plan (client_fell_behind): the client limited the run
 *   cancelled  dsperf cancelled requests itself at the run's deadline or an early stop: they are no
 *              failures, but the requests that completed are the shorter ones
 * Failures (exit code 1, with "run_failed": true and "run_failed_reason"):
 *   the run was interrupted ("interrupted": Ctrl-C / SIGTERM; partial results are still written),
 *   no request completed,
 *   server-side failures above --max-error-rate (default 1 %) of the requests that ended: completed
 *   + failed; the requests dsperf cancelled itself do not count. */
#ifndef DSP_VALIDITY_H
#define DSP_VALIDITY_H
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#define VALIDITY_DEFAULT_MAX_ERROR_RATE 0.01

/* Server-side failures and completed requests of a results document, for files of any dsperf
 * version: before requests dsperf cancelled itself were told apart, "failed" counted them (under
 * errors.cancelled); they are taken out here. NAN when the document has no counts. */
void validity_counts(const json_t *results, double *failed, double *completed);
/* failed / (failed + completed) > max_rate (false when nothing ended). */
bool validity_error_rate_over(double failed, double completed, double max_rate);

/* Parses --max-error-rate: "1%" or a fraction "0.01", within [0, 1]. 0 ok, -1 malformed. */
int validity_parse_rate(const char *s, double *out);

/* Judges a results document and records the verdict in it: "warnings", "max_error_rate",
 * "run_failed", "run_failed_reason". Returns true when the run failed (why, if not NULL, gets the
 * reason in one line). */
bool validity_judge(json_t *results, double max_error_rate, char *why, size_t whylen);
/* One line per warning and the failure, "warning: ..." / "error: ...", from a judged document. */
void validity_print(FILE *f, const json_t *results);
#endif
