/* validity — the warnings and the exit-code verdict of a measured run (see validity.h). */
#include "results/validity.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static double num(const json_t *o, const char *k) {
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

void validity_counts(const json_t *r, double *failed, double *completed) {
    *completed = num(r, "completed");
    *failed = num(r, "failed");
    /* written before "ended" existed: "failed" then included dsperf's own cancellations */
    if (!json_object_get(r, "ended") && isfinite(*failed)) {
        double c = num(json_object_get(r, "errors"), "cancelled");
        if (isfinite(c)) *failed -= c;
    }
}

bool validity_error_rate_over(double failed, double completed, double max_rate) {
    if (!(failed > 0) || !isfinite(completed)) return false;
    return failed / (failed + completed) > max_rate;
}

int validity_parse_rate(const char *s, double *out) {
    char *end;
    double x = strtod(s, &end);
    if (end == s) return -1;
    if (*end == '%') { x /= 100; end++; }
    if (*end || !(x >= 0 && x <= 1)) return -1;
    *out = x;
    return 0;
}

static void warn(json_t *arr, const char *kind, const char *msg) {
    json_array_append_new(arr, json_pack("{s:s,s:s}", "kind", kind, "message", msg));
}

bool validity_judge(json_t *r, double max_rate, char *why, size_t whylen) {
    json_t *w = json_array();
    char msg[640];
    const char *s = json_string_value(json_object_get(r, "server_overload_reason"));
    if (json_is_true(json_object_get(r, "server_overloaded"))) {
        snprintf(msg, sizeof msg, "SERVER OVERLOADED: it did not keep up with the offered load (%s): latencies grow "
                 "with the run's length and describe no steady state; lower --rate, or find the knee with dsperf sweep",
                 s ? s : "");
        warn(w, "overload", msg);
    }
    s = json_string_value(json_object_get(r, "client_lag_reason"));
    if (json_is_true(json_object_get(r, "client_fell_behind"))) {
        snprintf(msg, sizeof msg, "CLIENT FELL BEHIND ITS PLAN (%s): the client, not the server, limited this run;"
                 " see *_from_schedule latencies", s ? s : "see results");
        warn(w, "client", msg);
    }
    const json_t *ended = json_object_get(r, "ended");
    double dl = num(ended, "client_deadline"), es = num(ended, "early_stop");
    if (dl > 0 || es > 0) {
        snprintf(msg, sizeof msg, "dsperf cancelled %.0f request%s itself (%.0f at the run's deadline, %.0f at an early "
                 "stop): not failures, but the %.0f that completed are the shorter ones", dl + es, dl + es == 1 ? "" : "s",
                 isfinite(dl) ? dl : 0, isfinite(es) ? es : 0, num(r, "completed"));
        warn(w, "cancelled", msg);
    }
    double failed, completed;
    validity_counts(r, &failed, &completed);
    char reason[400] = "";
    if (json_is_true(json_object_get(r, "interrupted")))
        snprintf(reason, sizeof reason, "the run was interrupted: the results are partial");
    else if (!(completed > 0))
        snprintf(reason, sizeof reason, "no request completed");
    else if (validity_error_rate_over(failed, completed, max_rate))
        snprintf(reason, sizeof reason, "%.0f of %.0f requests failed on the server side (%.1f%%), over --max-error-rate %g%%",
                 failed, failed + completed, 100 * failed / (failed + completed), 100 * max_rate);
    json_object_set_new(r, "warnings", w);
    json_object_set_new(r, "max_error_rate", json_real(max_rate));
    json_object_set_new(r, "run_failed", json_boolean(reason[0] != 0));
    json_object_set_new(r, "run_failed_reason", reason[0] ? json_string(reason) : json_null());
    if (why) snprintf(why, whylen, "%s", reason);
    return reason[0] != 0;
}

void validity_print(FILE *f, const json_t *r) {
    size_t i;
    json_t *w;
    json_array_foreach(json_object_get(r, "warnings"), i, w)
        fprintf(f, "WARNING: %s\n", json_string_value(json_object_get(w, "message")));
    const char *why = json_string_value(json_object_get(r, "run_failed_reason"));
    if (json_is_true(json_object_get(r, "run_failed")) && why) fprintf(f, "RUN FAILED: %s\n", why);
}
