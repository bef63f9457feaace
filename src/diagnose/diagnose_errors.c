/* diagnose_errors — failed requests: who ended each (the server, or the client itself), each
 * class's first status and message (results "error_examples"), and advice per class: an HTTP 500
 * is read in the server's log, a 429 is a rate limit, a timeout is --timeout or load, a refused
 * connection is a server that is down or full. Reading the error classes happens in one function
 * (diag_read_failures), so that who-ended-what lives in one place. */
#include "diagnose/diagnose_int.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first message the results keep for a class (and HTTP status). */
static const char *example(const json_t *doc, const char *cls, int status, double *count) {
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(doc, "error_examples"), i, e) {
        const char *c = json_string_value(json_object_get(e, "class"));
        if (!c || strcmp(c, cls)) continue;
        if (status && json_integer_value(json_object_get(e, "status")) != status) continue;
        if (count) *count = diag_num(e, "count");
        return json_string_value(json_object_get(e, "message"));
    }
    return NULL;
}

static void add_fail(diag_failures *out, const char *cls, int status, double n, const json_t *doc) {
    if (!(n > 0) || out->n >= DIAG_MAX_FAIL) return;
    diag_fail *f = &out->v[out->n++];
    snprintf(f->cls, sizeof f->cls, "%s", cls);
    f->status = status;
    f->count = n;
    f->message = example(doc, cls, status, NULL);
    out->server_failed += n;
}

void diag_read_failures(const json_t *doc, diag_failures *out) {
    memset(out, 0, sizeof *out);
    out->completed = diag_num(doc, "completed");
    double failed = diag_num(doc, "failed");
    out->total = (isfinite(out->completed) ? out->completed : 0) + (isfinite(failed) ? failed : 0);
    /* files that say who ended each request keep dsperf's own cancellations apart ("cancelled",
     * "ended"); "failed" is then server-side only */
    if (json_object_get(doc, "ended")) out->self_ended = diag_num(doc, "cancelled") > 0 ? diag_num(doc, "cancelled") : 0;
    const json_t *errs = json_object_get(doc, "errors");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)errs, k, v) {
        if (!strcmp(k, "cancelled")) { out->self_ended += json_number_value(v); continue; }   /* dsperf ended them */
        if (!strcmp(k, "http")) {
            const char *code;
            json_t *n;
            double by_status = 0;
            json_object_foreach(json_object_get(errs, "http_status"), code, n) {
                add_fail(out, "http", atoi(code), json_number_value(n), doc);
                by_status += json_number_value(n);
            }
            if (json_number_value(v) > by_status) add_fail(out, "http", 0, json_number_value(v) - by_status, doc);
            continue;
        }
        if (json_is_number(v)) add_fail(out, k, 0, json_number_value(v), doc);
    }
    /* largest class first */
    for (size_t i = 1; i < out->n; i++)
        for (size_t j = i; j > 0 && out->v[j].count > out->v[j - 1].count; j--) {
            diag_fail t = out->v[j];
            out->v[j] = out->v[j - 1];
            out->v[j - 1] = t;
        }
}

static void label(const diag_fail *f, char *buf, size_t n) {
    if (!strcmp(f->cls, "http") && f->status) snprintf(buf, n, "HTTP %d", f->status);
    else if (!strcmp(f->cls, "stream")) snprintf(buf, n, "error events inside the stream");
    else if (!strcmp(f->cls, "truncated")) snprintf(buf, n, "streams cut before [DONE]");
    else if (!strcmp(f->cls, "invalid_json")) snprintf(buf, n, "answers that are not JSON/SSE");
    else if (!strcmp(f->cls, "connect")) snprintf(buf, n, "connections refused or reset");
    else if (!strcmp(f->cls, "timeout")) snprintf(buf, n, "requests past --timeout");
    else snprintf(buf, n, "%s", f->cls);
}

static bool mentions(const char *msg, const char *w) { return msg && strcasestr(msg, w); }

/* What to do about one class: the advice differs by who is at fault and what the message says. */
static void advise(diag_in *in, json_t *f, const diag_fail *x) {
    const char *m = x->message;
    char buf[256];
    if (mentions(m, "context") || mentions(m, "too long") || mentions(m, "maximum")) {
        if (in->dep.context_per_seq > 0) snprintf(buf, sizeof buf, "fit prompt + max_tokens into the %d tokens a sequence "
                                                  "may hold (%.150s)", in->dep.context_per_seq, in->dep.context_per_seq_s.src);
        else snprintf(buf, sizeof buf, "fit prompt + max_tokens into the server's context window");
        diag_knob(f, "dataset / max_tokens", "shorten", buf);
        int cps = in->dep.context_per_seq;
        /* what the requests asked for: prompt + max_tokens of those that failed, else twice the context */
        double want = diag_num(json_object_get(json_object_get(in->doc, "config"), "dataset_lengths"), "in_tokens_max");
        double out = diag_num(json_object_get(in->doc, "config"), "max_tokens");
        char cur[16], sug[32];
        snprintf(cur, sizeof cur, "%d", cps);
        long need = isfinite(want) && want > 0 ? (long)want + (isfinite(out) && out > 0 ? (long)out : 0) : 0;
        long s2 = 1024;
        while (cps > 0 && s2 < (need > cps ? need : 2L * cps)) s2 *= 2;
        snprintf(sug, sizeof sug, "%ld", s2);
        diag_setting(in, f, "context_per_seq", cps > 0 ? cur : NULL, cps > 0 ? sug : "raise",
                     !strcmp(in->dep.engine, "llama.cpp") ? "a longer context per slot: -c is the total, each of the -np "
                     "slots gets -c / -np" : "a longer context per sequence");
        return;
    }
    if (!strcmp(x->cls, "http") && x->status == 429) {
        diag_knob(f, "load", "lower --rate or --concurrency", "the server rate-limits: 429 says slow down, not broken");
        diag_knob(f, "server rate limit", "raise", "if the limit is the proxy's or the server's own setting");
    } else if (!strcmp(x->cls, "http") && x->status >= 400 && x->status < 500) {
        diag_knob(f, "request", "fix what the server rejects", m ? m : "see the per-request file (--save-requests)");
    } else if (!strcmp(x->cls, "http") || !strcmp(x->cls, "stream")) {
        diag_knob(f, "server log", "read it at the first failure", "the server failed these requests itself: its log says why; "
                  "load changes nothing unless failures grow with load");
    } else if (!strcmp(x->cls, "timeout")) {
        double t = diag_num(in->cfg, "timeout_s");
        snprintf(buf, sizeof buf, "requests did not finish within %.0f s", t);
        if (isfinite(t)) {
            char cur[32], dir[96];
            snprintf(cur, sizeof cur, "%gs", t);
            snprintf(dir, sizeof dir, "%s \xe2\x86\x92 raise", cur);
            json_array_append_new(json_object_get(f, "knobs"), json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "knob", "--timeout",
                "current", cur, "suggested", "raise", "direction", dir, "flag", "--timeout", "effect", buf));
        } else {
            diag_knob(f, "--timeout", "raise", "requests did not finish in time");
        }
        diag_knob(f, "load", "lower", "a slower server at this load: stay below the knee");
    } else if (!strcmp(x->cls, "connect")) {
        diag_knob(f, "server", "check it is up and accepting", "refused or reset connections: the process is down, "
                  "restarting, or its accept queue is full");
        diag_knob(f, "--concurrency", "lower", "fewer connections at once");
    } else if (!strcmp(x->cls, "truncated")) {
        diag_knob(f, "server / proxy", "check for crashes and idle timeouts", "a stream cut before [DONE]: a crash, a "
                  "restart, or a proxy closing long streams");
    } else if (!strcmp(x->cls, "invalid_json")) {
        diag_knob(f, "--url / --api / proxy", "check", "a non-OpenAI answer (an HTML error page, the wrong path)");
    }
}

void diag_rule_errors(diag_in *in, json_t *L, json_t *C) {
    diag_failures fl;
    diag_read_failures(in->doc, &fl);
    diag_checked(C, "errors", true, "results.completed, results.errors (by class and HTTP status), results.error_examples");
    if (!(fl.total > 0) || fl.server_failed / fl.total < DIAG_ERROR_FRAC || !fl.n) return;
    char top[64];
    label(&fl.v[0], top, sizeof top);
    const char *m0 = fl.v[0].message;
    json_t *f = m0 ? diag_finding(L, "errors", 0.9, "%.1f%% of requests failed, mostly %s: \"%.90s\"",
                                  100 * fl.server_failed / fl.total, top, m0)
                   : diag_finding(L, "errors", 0.9, "%.1f%% of requests failed, mostly %s", 100 * fl.server_failed / fl.total, top);
    diag_cost(f, fl.server_failed / fl.total, "of requests failed");
    diag_ev(f, fl.server_failed, "requests", "results.errors", "%.0f of %.0f requests failed", fl.server_failed, fl.total);
    for (size_t i = 0; i < fl.n; i++) {
        char l[64];
        label(&fl.v[i], l, sizeof l);
        if (fl.v[i].message)
            diag_ev(f, fl.v[i].count, "requests", "results.error_examples", "%s: %.0f; first: \"%.200s\"", l, fl.v[i].count,
                    fl.v[i].message);
        else
            diag_ev(f, fl.v[i].count, "requests", "results.errors", "%s: %.0f (no message kept: --save-requests has each)", l,
                    fl.v[i].count);
    }
    if (fl.self_ended > 0)
        diag_ev(f, fl.self_ended, "requests", "results.errors.cancelled", "%.0f more were ended by dsperf itself (end of the "
                "level or Ctrl-C): not the server's failures", fl.self_ended);
    /* advice for each class, once per kind */
    bool seen[8] = {0};
    for (size_t i = 0; i < fl.n; i++) {
        const diag_fail *x = &fl.v[i];
        int kind = !strcmp(x->cls, "http") ? (x->status == 429 ? 0 : x->status >= 500 || !x->status ? 1 : 2)
                 : !strcmp(x->cls, "stream") ? 1 : !strcmp(x->cls, "timeout") ? 3 : !strcmp(x->cls, "connect") ? 4
                 : !strcmp(x->cls, "truncated") ? 5 : 6;
        if (seen[kind]) continue;
        seen[kind] = true;
        advise(in, f, x);
    }
}
