/* one_definition_test — every per-request metric has one definition (src/metrics/request_metrics):
 * the results' summary, the report's exact distributions (read back from the per-request file)
 * and the monitor's probe metrics agree to the last bit on a real run against dsperf serve with
 * jittered timing and varied output lengths. And the shared pieces stay single: the program's
 * sources (src/, comments left out) hold one percentile rule (metrics/stats.c), one builder of
 * the Authorization header and one place that makes plain libcurl handles (common/http.c), and
 * metric names only in the metric table (metrics/metric_table.c). */
#include "harness.h"
#include "testutil.h"
#include "report/report_internal.h"
#include "results/results.h"
#include "metrics/request_metrics.h"
#include "metrics/stats.h"
#include "metrics/metric_table.h"
#include "monitor/monitor.h"
#include "common/fileio.h"
#include "common/http.h"
#include "common/clock.h"
#include <dirent.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TEST(metrics_have_one_definition) {
    test_server s;
    if (test_serve_start(&s, "--ttft 5ms --itl 1ms --jitter 0.5 --seed 4 --fail-rate 0.05") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char res[512], reqs[512], cmd[1400];
    snprintf(res, sizeof res, "%s/one.json", harness_tmpdir());
    snprintf(reqs, sizeof reqs, "%s/one.jsonl", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "bench --url %s --concurrency 8 --requests 300 --dataset random:in=8,out=12,range=0.5 --quiet "
             "--max-error-rate 50%% --out %s --save-requests %s", s.url, res, reqs);
    int rc = test_run(cmd, NULL, NULL);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    json_t *r = test_load_json(res);
    char err[256];
    report_requests *rq = report_requests_load(reqs, err, sizeof err);
    CHECK(r && rq);
    if (!r || !rq) { json_decref(r); report_requests_free(rq); return; }
    /* the report's exact distributions give the summary's numbers (the results file keeps 10
     * significant digits) */
    struct { const char *name; const double *v; size_t n; } fam[] = {
        { "ttft", rq->ttft_sorted, rq->n_ttft }, { "tpot", rq->tpot_sorted, rq->n_tpot }, { "e2el", rq->e2el_sorted, rq->n_e2el },
    };
    const double ps[] = { 50, 90, 99 };
    for (size_t f = 0; f < 3; f++) {
        CHECK(fam[f].n > 200);
        for (size_t i = 0; i < 3; i++) {
            char key[64];
            snprintf(key, sizeof key, "p%g_%s_ms", ps[i], fam[f].name);
            double a = stats_percentile_sorted(fam[f].v, fam[f].n, ps[i]), b = test_num(r, key);
            CHECK_MSG(fabs(a - b) <= 1e-9 * fabs(b), "%s: report %.12g vs results %.12g", key, a, b);
        }
        char key[64];
        snprintf(key, sizeof key, "mean_%s_ms", fam[f].name);
        CHECK_NEAR(stats_mean(fam[f].v, fam[f].n), test_num(r, key), 1e-9 * test_num(r, key));
    }
    CHECK_EQ_INT(rq->n_failed, test_num(r, "failed"));
    CHECK(rq->n_failed > 0);
    /* the monitor's probe metrics are the same numbers, in seconds */
    recset recs;
    recset_init(&recs);
    int64_t t0;
    CHECK_EQ_INT(results_read_requests_jsonl(reqs, &recs, &t0, err, sizeof err), 0);
    size_t checked = 0;
    for (size_t i = 0; i < recs.n; i++) {
        req_metrics m;
        mon_probe p;
        req_metrics_of(&recs.v[i], &m);
        mon_probe_measure(&recs.v[i], &p);
        CHECK(p.ok == m.completed);
        if (!m.completed) continue;
        CHECK(p.ttft_s == m.ttft_ms / 1e3 && p.e2el_s == m.e2el_ms / 1e3);
        CHECK((isnan(p.tpot_s) && isnan(m.tpot_ms)) || p.tpot_s == m.tpot_ms / 1e3);
        checked++;
    }
    CHECK_EQ_INT(checked, test_num(r, "completed"));
    /* the file round-trips: the summary of the records read back is the run's */
    summary_opts so;
    summary_default_opts(&so);
    json_t *again = summary_compute(&recs, &so);
    CHECK(again && fabs(test_num(again, "p99_ttft_ms") - test_num(r, "p99_ttft_ms")) <= 1e-9 * test_num(r, "p99_ttft_ms"));
    CHECK(again && fabs(test_num(again, "p99_itl_ms") - test_num(r, "p99_itl_ms")) <= 1e-9 * test_num(r, "p99_itl_ms"));
    CHECK(again && test_num(again, "failed") == test_num(r, "failed"));
    json_decref(again);
    recset_free(&recs);
    report_requests_free(rq);
    json_decref(r);
}

/* ---- the sources, searched ---- */

typedef struct { char path[512]; char *code; } src_file;
typedef struct { src_file *f; size_t n, cap; } src_tree;

/* Blanks C comments (keeping newlines, so line numbers hold) and leaves string and character
 * literals as they are: a name or rule mentioned in a comment is documentation, not a definition. */
static void blank_comments(char *s) {
    for (char *p = s; *p;) {
        if (*p == '"' || *p == '\'') {
            char q = *p++;
            while (*p && *p != q) { if (*p == '\\' && p[1]) p++; p++; }
            if (*p) p++;
        } else if (p[0] == '/' && p[1] == '*') {
            while (*p && !(p[0] == '*' && p[1] == '/')) { if (*p != '\n') *p = ' '; p++; }
            if (*p) { p[0] = p[1] = ' '; p += 2; }
        } else if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n') *p++ = ' ';
        } else {
            p++;
        }
    }
}

/* Every .c and .h under dir but the tests (*_test.c), comments blanked. */
static void read_tree(src_tree *t, const char *dir, size_t root_len) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        size_t n = strlen(e->d_name);
        if (e->d_type == DT_DIR) { read_tree(t, p, root_len); continue; }
        if (n < 3 || (strcmp(e->d_name + n - 2, ".c") && strcmp(e->d_name + n - 2, ".h"))) continue;
        if (n > 7 && !strcmp(e->d_name + n - 7, "_test.c")) continue;
        char *text = NULL;
        if (fileio_read_all(p, &text, NULL) != 0) continue;
        if (t->n == t->cap) {
            t->cap = t->cap ? 2 * t->cap : 256;
            t->f = realloc(t->f, t->cap * sizeof *t->f);
        }
        blank_comments(text);
        snprintf(t->f[t->n].path, sizeof t->f[t->n].path, "%s", p + root_len + 1);   /* relative to src/ */
        t->f[t->n++].code = text;
    }
    closedir(d);
}

/* src/ next to this file's tests/ (the tests run from the repository root). */
static void read_sources(src_tree *t) {
    memset(t, 0, sizeof *t);
    char root[512];
    const char *slash = strrchr(__FILE__, '/');
    snprintf(root, sizeof root, "%.*s%ssrc", slash ? (int)(slash - __FILE__) : 0, __FILE__, slash ? "/../" : "../");
    read_tree(t, root, strlen(root));
}

static void free_sources(src_tree *t) {
    for (size_t i = 0; i < t->n; i++) free(t->f[i].code);
    free(t->f);
}

/* How many times re matches in code; the first match's line in *line. */
static int count_matches(const regex_t *re, const char *code, int *line, char *what, size_t whatlen) {
    int n = 0;
    regmatch_t m;
    for (const char *p = code; regexec(re, p, 1, &m, p == code ? 0 : REG_NOTBOL) == 0 && m.rm_eo > 0; p += m.rm_eo) {
        if (!n) {
            int l = 1;
            for (const char *q = code; q < p + m.rm_so; q++) l += *q == '\n';
            *line = l;
            snprintf(what, whatlen, "%.*s", (int)(m.rm_eo - m.rm_so), p + m.rm_so);
        }
        n++;
    }
    return n;
}

/* Each file of t where pattern matches must be one of allowed (NULL-terminated), and each of
 * allowed must match (the pattern still finds the one definition, so the check is not blind). */
static void only_in_flags(const src_tree *t, const char *what, const char *pattern, const char *const *allowed, int flags) {
    regex_t re;
    CHECK_MSG(regcomp(&re, pattern, REG_EXTENDED | flags) == 0, "pattern %s", pattern);
    int seen[8] = {0};
    for (size_t i = 0; i < t->n; i++) {
        int line = 0;
        char m[120];
        if (!count_matches(&re, t->f[i].code, &line, m, sizeof m)) continue;
        int k = 0;
        while (allowed[k] && strcmp(allowed[k], t->f[i].path)) k++;
        if (allowed[k]) { seen[k] = 1; continue; }
        if (allowed[0])
            harness_fail(__FILE__, __LINE__, "src/%s:%d holds a second %s (\"%s\"): use the one in src/%s", t->f[i].path, line, what, m, allowed[0]);
        else
            harness_fail(__FILE__, __LINE__, "src/%s:%d holds a %s (\"%s\"): use stats_percentile_ranked or stats_percentile_sorted "
                         "(src/metrics/stats.h)", t->f[i].path, line, what, m);
    }
    for (int k = 0; allowed[k]; k++) CHECK_MSG(seen[k], "src/%s no longer matches the %s pattern %s: fix the check", allowed[k], what, pattern);
    regfree(&re);
}

static void only_in(const src_tree *t, const char *what, const char *pattern, const char *const *allowed) {
    only_in_flags(t, what, pattern, allowed, 0);
}

TEST(one_definition_of_the_percentile) {
    src_tree t;
    read_sources(&t);
    CHECK_MSG(t.n > 200, "read %zu source files under src/", t.n);
    /* the shapes every earlier copy had: a rank position from a percentile ((n - 1) * p / 100 or
     * 0.8 * (m - 1)) and a median by middle index (v[n / 2], v[n / 2 - 1]) */
    const char *const stats[] = {"metrics/stats.c", NULL};
    only_in(&t, "percentile rank rule", "- *1\\) *\\* *\\(? *[A-Za-z_]+ */ *100", stats);
    const char *const none[] = {NULL};
    only_in(&t, "percentile rank rule", "0\\.[0-9]+ *\\* *(\\(double\\))? *\\(?[A-Za-z_>.-]+ *- *1\\)", none);
    only_in(&t, "median by middle index", "\\[ *[A-Za-z_][A-Za-z0-9_]*(->[A-Za-z_][A-Za-z0-9_]*)? */ *2 *(- *1 *)?\\]", none);
    free_sources(&t);
}

TEST(one_definition_of_the_http_request) {
    src_tree t;
    read_sources(&t);
    CHECK_MSG(t.n > 200, "read %zu source files under src/", t.n);
    /* the credentials header is built in one place, in any spelling */
    const char *const http[] = {"common/http.c", NULL};
    only_in_flags(&t, "Authorization header builder", "\"(authorization: *)?bearer( *%s| +)\"|authorization: *bearer *%", http, REG_ICASE);
    /* libcurl handles come from the helper; besides it only the feature check, the streaming
     * client's pool and drift's batch of POSTs (which take their options and headers from it) */
    const char *const handles[] = {"common/http.c", "common/curl_init.c", "client/client.c", "drift/drift_http.c", NULL};
    only_in(&t, "libcurl handle maker", "curl_easy_init *\\(", handles);
    free_sources(&t);
}

/* The helper against a scripted server: the credentials and headers are sent as given, the body
 * comes back whole, a body over the limit fails with the limit named, and a discarded body still
 * gives the status. */
TEST(one_definition_http_get_sends_credentials_and_bounds_the_body) {
    char body[3000];
    memset(body, 'x', sizeof body);
    char resp[3200];
    int hl = snprintf(resp, sizeof resp, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", sizeof body);
    memcpy(resp + hl, body, sizeof body);
    int port = 0;
    test_script *sc = test_script_start("HTTP/1.1 500 x\r\nContent-Length: 0\r\n\r\n", 38, 4096, &port);
    CHECK(sc);
    if (!sc) return;
    test_script_route(sc, "GET /page", resp, (size_t)hl + sizeof body);
    char url[128], err[200];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/page", port);
    const char *const hdrs[] = {"X-One: 1", NULL};
    http_opts o = { .api_key = "sk-one-def", .headers = hdrs, .timeout_ns = 10 * NS_PER_S, .max_body_bytes = 4096 };
    long status = -1;
    char *b = NULL;
    size_t len = 0;
    CHECK_EQ_INT(http_get_once(&o, url, &status, &b, &len, err, sizeof err), CURLE_OK);
    CHECK_EQ_INT(status, 200);
    CHECK_EQ_INT(len, sizeof body);
    CHECK(b && strlen(b) == sizeof body && b[0] == 'x' && b[sizeof body - 1] == 'x');
    free(b);
    /* one byte under the body (and its terminator): refused, the limit said in bytes */
    o.max_body_bytes = sizeof body;
    CHECK(http_get_once(&o, url, &status, &b, &len, err, sizeof err) != CURLE_OK);
    CHECK(!b && status == 0);
    CHECK_MSG(strstr(err, "response over 3000 bytes") != NULL, "err: %s", err);
    o.discard_body = true;
    CHECK_EQ_INT(http_get_once(&o, url, &status, &b, &len, err, sizeof err), CURLE_OK);
    CHECK(status == 200 && b && !b[0] && len == 0);
    free(b);
    char *reqs = test_script_requests(sc);
    test_script_stop(sc);
    CHECK(reqs && strstr(reqs, "GET /page HTTP/1.1\r\n"));
    CHECK(reqs && strstr(reqs, "\r\nAuthorization: Bearer sk-one-def\r\n"));
    CHECK(reqs && strstr(reqs, "\r\nX-One: 1\r\n"));
    free(reqs);
}

/* A key of the table distinctive enough to search for as a literal ("failed" or "duration" are
 * words other fields use too). */
static bool distinctive(const char *k) {
    size_t n = strlen(k);
    return (n > 3 && !strcmp(k + n - 3, "_ms")) || strstr(k, "throughput") || strstr(k, "goodput") ||
           (n > 5 && !strcmp(k + n - 5, "_load")) || !strcmp(k, "max_output_tokens_per_s");
}

TEST(one_definition_of_the_metric_names) {
    /* the table: unique keys, METRIC() spells them, and its directions */
    for (size_t i = 0; i < METRIC_COUNT; i++) {
        const metric_def *d = &metric_table[i];
        CHECK_MSG(d->name && d->unit && d->fmt && d->label && d->label[0], "entry %zu", i);
        CHECK_MSG(metric_find(d->name) == d, "%s found as another entry", d->name);
    }
    CHECK_STR(METRIC(p99_ttft_ms), "p99_ttft_ms");
    CHECK(metric_find(METRIC(p99_ttft_ms)) == &metric_table[M_p99_ttft_ms]);
    CHECK(!metric_find("p99_ttft") && !metric_find("p99.9_ttft_ms"));
    CHECK_EQ_INT(metric_direction(METRIC(p99_ttft_ms)), METRIC_LOWER_BETTER);
    CHECK_EQ_INT(metric_direction("p99.9_ttft_ms"), METRIC_LOWER_BETTER);   /* by shape: not in the table */
    CHECK_EQ_INT(metric_direction(METRIC(output_throughput)), METRIC_HIGHER_BETTER);
    CHECK_EQ_INT(metric_direction("good_requests"), METRIC_HIGHER_BETTER);
    CHECK_EQ_INT(metric_direction("failed"), METRIC_LOWER_BETTER);
    CHECK_EQ_INT(metric_direction(METRIC(knee_load)), METRIC_NO_DIRECTION);
    CHECK_EQ_INT(metric_direction("duration"), METRIC_NO_DIRECTION);
    CHECK_STR(metric_table[M_p99_tpot_ms].unit, "ms");
    CHECK_STR(metric_table[M_output_throughput].unit, "tok/s");
    /* the sources: no table key written as a literal; code says METRIC(key). The files below
     * were left for branches that edited them at the time (diagnose, the simulator) and are
     * to be converted: each must still hold one, so the list only shrinks. */
    static const char *const legacy[] = { NULL };   /* every file converted; a new literal fails */
    bool legacy_seen[sizeof legacy / sizeof legacy[0]] = {0};
    src_tree t;
    read_sources(&t);
    CHECK_MSG(t.n > 200, "read %zu source files under src/", t.n);
    size_t searched = 0;
    for (size_t i = 0; i < METRIC_COUNT; i++) {
        if (!distinctive(metric_table[i].name)) continue;
        searched++;
        char lit[96];
        snprintf(lit, sizeof lit, "\"%s\"", metric_table[i].name);
        for (size_t f = 0; f < t.n; f++) {
            const char *at = strstr(t.f[f].code, lit);
            if (!at) continue;
            size_t k = 0;
            while (legacy[k] && strcmp(legacy[k], t.f[f].path)) k++;
            if (legacy[k]) { legacy_seen[k] = true; continue; }
            int line = 1;
            for (const char *q = t.f[f].code; q < at; q++) line += *q == '\n';
            harness_fail(__FILE__, __LINE__, "src/%s:%d writes the metric name %s as a literal: write METRIC(%s) (metrics/metric_table.h)",
                         t.f[f].path, line, lit, metric_table[i].name);
        }
    }
    CHECK_MSG(searched > 40, "searched %zu names", searched);
    for (size_t k = 0; legacy[k]; k++)
        CHECK_MSG(legacy_seen[k], "src/%s holds no metric-name literal any more: take it off the legacy list", legacy[k]);
    free_sources(&t);
}
