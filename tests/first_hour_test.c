/* first-hour tests — what a newcomer sees on the first day says what happened: when the server
 * dies mid-run, the requests it had answered are "truncated" and the example of "connect" errors is
 * a connect error; a mistyped flag gets "did you mean"; a percentile from too few samples is
 * marked where it is shown. */
#include "harness.h"
#include "testutil.h"
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

static int one_line(const char *s) {
    const char *nl = s ? strchr(s, '\n') : NULL;
    return s && nl && !nl[1];
}

TEST(first_hour_server_dies_mid_run_error_labels) {
    test_server s;
    /* a 3 s first token: the 4 users' requests are answered (status line sent) and wait */
    if (test_serve_start(&s, "--ttft 3s --itl 10ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char out[600], cmd[1024];
    snprintf(out, sizeof out, "%s/died.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "bench --url %s --concurrency 4 --requests 40 --dataset random:in=8,out=4 --quiet --out %s "
             "--timeout 20s", s.url, out);
    pid_t b = fork();
    if (b == 0) _exit(test_run(cmd, NULL, NULL));
    /* kill the server once it holds the four requests (its own gauge), not after a guessed delay */
    char murl[128];
    snprintf(murl, sizeof murl, "%s/metrics", s.url);
    double held = 0;
    for (int i = 0; i < 2000 && held < 4; i++) {
        char *m = test_http_get(murl);
        double run = m ? test_prom_value(m, "vllm:num_requests_running") : NAN, wait = m ? test_prom_value(m, "vllm:num_requests_waiting") : NAN;
        held = (isnan(run) ? 0 : run) + (isnan(wait) ? 0 : wait);
        free(m);
        if (held < 4) usleep(10000);
    }
    CHECK_MSG(held >= 4, "the server never held the four requests");
    kill(s.pid, SIGKILL);
    int st = 0;
    waitpid(b, &st, 0);
    test_serve_stop(&s);
    CHECK_EQ_INT(WEXITSTATUS(st), 1);     /* nothing completed: the run failed, its results written */
    json_t *d = test_load_json(out);
    CHECK(d != NULL);
    size_t i;
    json_t *e;
    long truncated = 0, connect = 0;
    json_array_foreach(json_object_get(d, "error_examples"), i, e) {
        const char *cls = json_string_value(json_object_get(e, "class")), *msg = json_string_value(json_object_get(e, "message"));
        long n = (long)json_integer_value(json_object_get(e, "count"));
        if (cls && !strcmp(cls, "connect")) {
            connect = n;
            CHECK_MSG(msg && strstr(msg, "connect") && !strstr(msg, "partial"), "connect example: %s", msg ? msg : "(none)");
        }
        if (cls && !strcmp(cls, "truncated")) {
            truncated = n;
            CHECK_MSG(msg && strstr(msg, "before its first event"), "truncated example: %s", msg ? msg : "(none)");
        }
    }
    CHECK_EQ_INT(truncated, 4);           /* the four the server had answered */
    CHECK_EQ_INT(connect, 36);            /* every later one found no server */
    json_decref(d);
}

/* A mistyped flag gets "did you mean", in one line and one style, in every command. */
TEST(first_hour_did_you_mean_in_every_command) {
    struct { const char *cmd, *want; } cases[] = {
        {"bench --url http://127.0.0.1:1 --concurency 4", "did you mean --concurrency?"},
        {"sweep --url http://127.0.0.1:1 --concurrency 1,2 --reqests 5", "did you mean --requests?"},
        {"sim --requets 10", "did you mean --requests?"},
        {"report x.json --mdd x.md", "did you mean --md?"},
        {"plan --modle deepseek-v3", "did you mean --model?"},
        {"compare a.json b.json --gaet errors:0", "did you mean --gate?"},
        {"gpu --recrod x.json", "did you mean --record?"},
        {"diagnose x.json --weigth-dtype fp8", "did you mean --weight-dtype?"},
        {"monitor --url http://127.0.0.1:1 --ratee 1/s", "did you mean --rate?"},
        {"tokenize --tokenizr x", "did you mean --tokenizer?"},
        {"trace x.jsonl --tokeniser x", "did you mean --tokenizer?"},
        {"sim --out", "option --out needs a value"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *err = NULL;
        int rc = test_run(cases[i].cmd, NULL, &err);
        CHECK_MSG(rc == 2, "%s: exit %d", cases[i].cmd, rc);
        CHECK_MSG(err && strstr(err, cases[i].want) && strstr(err, "--help") && one_line(err), "%s: %s", cases[i].cmd, err ? err : "");
        free(err);
    }
}

/* One meaning per flag: --block-size is the KV block (sim, plan, serve); a trace's tokens per hash
 * id is --trace-block-size in bench, trace and sim alike. */
TEST(first_hour_one_meaning_of_block_size) {
    const char *helps[] = { "bench --help", "trace --help", "sim --help" };
    for (size_t i = 0; i < sizeof helps / sizeof helps[0]; i++) {
        char *out = NULL;
        CHECK_EQ_INT(test_run(helps[i], &out, NULL), 0);
        CHECK_MSG(out && strstr(out, "--trace-block-size"), "%s", helps[i]);
        /* bench and trace no longer offer --block-size for the trace's blocks */
        if (i < 2) CHECK_MSG(out && !strstr(out, "\n  --block-size"), "%s still lists --block-size", helps[i]);
        free(out);
    }
    char path[600], cmd[800];
    snprintf(path, sizeof path, "%s/t.jsonl", harness_tmpdir());
    FILE *f = fopen(path, "w");
    if (f) { fputs("{\"timestamp\": 0, \"input_length\": 20, \"output_length\": 4, \"hash_ids\": [0, 1]}\n", f); fclose(f); }
    /* the old spelling still works for a while, and says what it is now */
    snprintf(cmd, sizeof cmd, "trace mooncake:%s --block-size 16", path);
    char *err = NULL;
    CHECK_EQ_INT(test_run(cmd, NULL, &err), 0);
    CHECK_MSG(err && strstr(err, "deprecated") && strstr(err, "--trace-block-size"), "%s", err ? err : "");
    free(err);
    snprintf(cmd, sizeof cmd, "trace mooncake:%s --trace-block-size 16", path);
    err = NULL;
    CHECK_EQ_INT(test_run(cmd, NULL, &err), 0);
    CHECK_MSG(!err || !strstr(err, "deprecated"), "%s", err);
    free(err);
}

/* p99 from 7 requests is the largest samples relabelled: marked in the terminal summary and the
 * Markdown report; from 200 requests it is not. */
TEST(first_hour_thin_percentiles_are_marked) {
    char res[600], cmd[900];
    snprintf(res, sizeof res, "%s/seven.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sim --requests 7 --concurrency 2 --out %s", res);
    char *out = NULL;
    CHECK_EQ_INT(test_run(cmd, &out, NULL), 0);
    CHECK_MSG(out && strstr(out, "(from 7 samples; P99 needs 100)") && strstr(out, "(from 7 samples; P90 needs 10)"), "%s", out ? out : "");
    free(out);
    snprintf(cmd, sizeof cmd, "report %s --md -", res);
    out = NULL;
    CHECK_EQ_INT(test_run(cmd, &out, NULL), 0);
    CHECK_MSG(out && strstr(out, "p99 from fewer than 100 requests") && strstr(out, "(7 requests)"), "%s", out ? out : "");
    free(out);
    out = NULL;
    CHECK_EQ_INT(test_run("sim --requests 200 --concurrency 4", &out, NULL), 0);
    CHECK_MSG(out && strstr(out, "P99 TTFT") && !strstr(out, "P99 needs") && strstr(out, "P99.9 needs 1000"), "%s", out ? out : "");
    free(out);
}

/* The sample Mooncake trace the repo makes (scripts/sample_trace.sh): dsperf trace reads every
 * request, and the hit rate it allows is the one the file's own ids imply (leading blocks seen
 * before, 512 tokens each, computed here from the file). */
TEST(first_hour_sample_trace_runs_as_written) {
    char path[600], cmd[900];
    snprintf(path, sizeof path, "%s/sample.jsonl", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sh scripts/sample_trace.sh > %s", path);
    CHECK_EQ_INT(system(cmd), 0);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (!f) return;
    char line[65536];
    long n = 0;
    double in_total = 0, hit_total = 0;
    static long seen[100000];
    size_t n_seen = 0;
    while (fgets(line, sizeof line, f)) {
        json_t *r = json_loads(line, 0, NULL);
        if (!r) { CHECK_MSG(0, "not JSON: %s", line); break; }
        n++;
        double in = (double)json_integer_value(json_object_get(r, "input_length"));
        in_total += in;
        const json_t *ids = json_object_get(r, "hash_ids");
        size_t k, lead = 0;
        json_t *id;
        bool prefix = true;
        json_array_foreach(ids, k, id) {
            long v = (long)json_integer_value(id);
            bool was = false;
            for (size_t s = 0; s < n_seen && !was; s++) was = seen[s] == v;
            if (prefix && was) lead++;
            else prefix = false;
            if (!was && n_seen < sizeof seen / sizeof seen[0]) seen[n_seen++] = v;
        }
        hit_total += fmin(in, 512.0 * (double)lead);
        json_decref(r);
    }
    fclose(f);
    CHECK_EQ_INT(n, 240);
    snprintf(cmd, sizeof cmd, "trace mooncake:%s --json", path);
    char *out = NULL;
    CHECK_EQ_INT(test_run(cmd, &out, NULL), 0);
    json_t *d = out ? json_loads(out, 0, NULL) : NULL;
    CHECK(d != NULL);
    if (d) {
        CHECK_EQ_INT(json_integer_value(json_object_get(d, "requests")), 240);
        CHECK_EQ_INT(json_integer_value(json_object_get(d, "distinct_blocks")), (long long)n_seen);
        CHECK_NEAR(json_number_value(json_object_get(d, "hit_rate_bound")), hit_total / in_total, 1e-6);
    }
    json_decref(d);
    free(out);
}

/* Shell completion and the man page are generated from the binary's --help: completion offers
 * every command and, for each, the options its --help lists; the page has a section per command. */
TEST(first_hour_completion_and_man_page_generated) {
    char comp[600], man[600], cmd[2000];
    snprintf(comp, sizeof comp, "%s/dsperf.bash", harness_tmpdir());
    snprintf(man, sizeof man, "%s/dsperf.1", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sh scripts/gen_completion.sh %s > %s && sh scripts/gen_man.sh %s > %s", harness_bin(), comp,
             harness_bin(), man);
    CHECK_EQ_INT(system(cmd), 0);
    struct { const char *words, *want; } cases[] = {
        {"dsperf bench --concu", "--concurrency"}, {"dsperf sw", "sweep"}, {"dsperf sim --trace-block", "--trace-block-size"},
        {"dsperf history --d", "--db"}, {"dsperf report --m", "--md"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[4096];
        snprintf(cmd, sizeof cmd, "bash -c '. %s; COMP_WORDS=(%s); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _dsperf; "
                 "echo \"${COMPREPLY[*]}\"'", comp, cases[i].words);
        FILE *p = popen(cmd, "r");
        size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
        out[n] = 0;
        if (p) pclose(p);
        CHECK_MSG(strstr(out, cases[i].want), "%s -> %s", cases[i].words, out);
    }
    char *page = NULL;
    FILE *f = fopen(man, "r");
    if (f) {
        page = calloc(1, 1 << 20);
        size_t n = fread(page, 1, (1 << 20) - 1, f);
        page[n] = 0;
        fclose(f);
    }
    CHECK(page && strstr(page, "\n.TH DSPERF 1 "));
    const char *sections[] = { "DSPERF BENCH", "DSPERF SWEEP", "DSPERF SERVE", "DSPERF HISTORY", "DSPERF TRACE" };
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) CHECK_MSG(page && strstr(page, sections[i]), "%s", sections[i]);
    CHECK(page && strstr(page, "--save-requests"));
    free(page);
}
