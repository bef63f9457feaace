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

static int count_str(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; p && (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

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
    char res[600], cmd[2400];
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
    /* the page: the tiles and the table cells say so where the number is read */
    char html[600];
    snprintf(html, sizeof html, "%s/seven.html", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "report %s -o %s", res, html);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    FILE *hf = fopen(html, "r");
    char *h = hf ? calloc(1, 1 << 20) : NULL;
    if (hf) { size_t hn = fread(h, 1, (1 << 20) - 1, hf); h[hn] = 0; fclose(hf); }
    CHECK_MSG(h && strstr(h, "from 7 requests (a p99 needs 100)"), "tile not marked");
    CHECK_MSG(h && strstr(h, "title=\"p99 from 7 requests: a p99 needs 100;"), "table cell not marked");
    CHECK(h && strstr(h, "* p99 from fewer than 100 samples"));
    CHECK(h && strstr(h, "(p99 from 7 requests: the largest, not a tail)"));   /* the verdict */
    free(h);
    /* compare: each thin percentile row says how many samples each side had */
    char res2[600];
    snprintf(res2, sizeof res2, "%s/seven2.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sim --requests 7 --concurrency 2 --seed 2 --quiet --out %s", res2);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    snprintf(cmd, sizeof cmd, "compare %s %s", res, res2);
    out = NULL;
    test_run(cmd, &out, NULL);
    const char *row = out ? strstr(out, "\np99_ttft_ms ") : NULL;
    CHECK_MSG(row && strstr(row, "(from 7 / 7 samples; P99 needs 100)") && strstr(row, "(from 7 / 7 samples; P99 needs 100)") <
              strchr(row + 1, '\n'), "%s", out ? out : "");
    row = out ? strstr(out, "\nmean_ttft_ms ") : NULL;   /* a mean needs no tail: unmarked */
    CHECK(row && (!strstr(row, "samples;") || strstr(row, "samples;") > strchr(row + 1, '\n')));
    free(out);
    char cmpj[600];
    snprintf(cmpj, sizeof cmpj, "%s/seven_cmp.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "compare %s %s --out %s", res, res2, cmpj);
    out = NULL;
    test_run(cmd, &out, NULL);
    json_t *cj = test_load_json(cmpj);
    size_t ci;
    json_t *cm;
    int thin_rows = 0;
    json_array_foreach(json_object_get(cj, "metrics"), ci, cm) {
        const char *nm = json_string_value(json_object_get(cm, "name"));
        const json_t *th = json_object_get(cm, "thin");
        if (nm && !strcmp(nm, "p99_ttft_ms")) {
            CHECK(json_is_object(th));
            CHECK_EQ_INT(json_integer_value(json_object_get(th, "samples_needed")), 100);
            CHECK_EQ_INT(json_integer_value(json_object_get(th, "baseline_samples")), 7);
        }
        if (nm && !strncmp(nm, "mean_", 5)) CHECK_MSG(!th, "%s marked thin", nm);
        thin_rows += th != NULL;
    }
    CHECK(cj && thin_rows >= 3);
    json_decref(cj);
    free(out);
    /* the history: show and trend */
    char db[600];
    snprintf(db, sizeof db, "%s/seven.db", harness_tmpdir());
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "sim --requests 7 --concurrency 2 --seed %d --quiet --db %s --out %s/seven_h%d.json", k + 5, db,
                 harness_tmpdir(), k);
        CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    }
    snprintf(cmd, sizeof cmd, "history --db %s show latest", db);
    out = NULL;
    CHECK_EQ_INT(test_run(cmd, &out, NULL), 0);
    row = out ? strstr(out, "p99_ttft_ms ") : NULL;
    CHECK_MSG(row && strstr(row, "(from 7 samples; P99 needs 100)") < strchr(row, '\n') && strstr(row, "(from 7 samples"), "%s", out ? out : "");
    row = out ? strstr(out, "mean_ttft_ms ") : NULL;
    CHECK(row && (!strstr(row, "samples;") || strstr(row, "samples;") > strchr(row, '\n')));
    free(out);
    snprintf(cmd, sizeof cmd, "history --db %s trend p99_ttft_ms", db);
    out = NULL;
    test_run(cmd, &out, NULL);
    CHECK_MSG(out && count_str(out, "(from 7 requests; this percentile needs 100)") == 2, "%s", out ? out : "");
    free(out);
    snprintf(cmd, sizeof cmd, "history --db %s trend mean_ttft_ms", db);
    out = NULL;
    test_run(cmd, &out, NULL);
    CHECK_MSG(out && !strstr(out, "this percentile needs"), "%s", out ? out : "");
    free(out);
    /* the history's report page agrees with `history trend`: two runs are too few to call "no change" */
    char tpage[600];
    snprintf(tpage, sizeof tpage, "%s/seven_trend.html", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "report --db %s -o %s --md -", db, tpage);
    out = NULL;
    CHECK_EQ_INT(test_run(cmd, &out, NULL), 0);
    CHECK_MSG(out && strstr(out, "Too few runs to tell a change from noise: 2 comparable runs") && !strstr(out, "No change beyond noise"),
              "%s", out ? out : "");
    free(out);
    /* a sweep's table: the levels with fewer requests than a p99 needs */
    out = NULL;
    CHECK_EQ_INT(test_run("sim --concurrency 2,4 --requests 12", &out, NULL), 0);
    CHECK_MSG(out && count_str(out, "p99 of 12 req (needs 100)") == 2, "%s", out ? out : "");
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
    char comp[600], man[600], cmd[2400];
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
    /* completion cannot drift from the parsers: a command with an option table (the one getopt
     * reads, printed by DSPERF_OPTION_TABLE) completes exactly that table and --help; a command
     * that splits its words by hand completes only words it takes (none it calls unknown) */
    FILE *cf = fopen(comp, "r");
    CHECK(cf != NULL);
    char line[16384];
    int tables = 0, by_hand = 0;
    while (cf && fgets(line, sizeof line, cf)) {
        char c[32], opts[16000];
        if (sscanf(line, "    %31[a-z]) opts=\"%15999[^\"]\"", c, opts) != 2) continue;
        snprintf(cmd, sizeof cmd, "DSPERF_OPTION_TABLE=%s %s %s --help 2>/dev/null", c, harness_bin(), c);
        FILE *p = popen(cmd, "r");
        char table[16000] = " --help ", w[128], marker[80];
        bool have = false;
        snprintf(marker, sizeof marker, "# option table of dsperf %s\n", c);
        if (p && fgets(w, sizeof w, p) && !strcmp(w, marker))
            while (fgets(w, sizeof w, p)) {
                if (strncmp(w, "--", 2)) continue;
                w[strcspn(w, "\n")] = 0;
                have = true;
                if (strcmp(w, "--help")) { strncat(table, w, sizeof table - strlen(table) - 2); strcat(table, " "); }
            }
        if (p) pclose(p);
        char padded[16010];
        snprintf(padded, sizeof padded, " %s ", opts);
        if (have) {
            tables++;
            /* the same set both ways */
            char *save = NULL, *copy = strdup(opts);
            for (char *o = strtok_r(copy, " ", &save); o; o = strtok_r(NULL, " ", &save)) {
                char key[140];
                snprintf(key, sizeof key, " %s ", o);
                CHECK_MSG(strstr(table, key), "%s: completion offers %s, which its option table lacks", c, o);
            }
            free(copy);
            copy = strdup(table);
            for (char *o = strtok_r(copy, " ", &save); o; o = strtok_r(NULL, " ", &save)) {
                char key[140];
                snprintf(key, sizeof key, " %s ", o);
                CHECK_MSG(strstr(padded, key), "%s: its option table has %s, which completion lacks", c, o);
            }
            free(copy);
        } else if (strcmp(c, "serve")) {
            by_hand++;
            char *save = NULL, *copy = strdup(opts);
            for (char *o = strtok_r(copy, " ", &save); o; o = strtok_r(NULL, " ", &save)) {
                snprintf(cmd, sizeof cmd, "%s %s --zz-not-an-option", c, o);
                char *err = NULL;
                test_run(cmd, NULL, &err);
                char unknown[200];
                snprintf(unknown, sizeof unknown, "unknown option '%s'", o);
                CHECK_MSG(!err || !strstr(err, unknown), "%s: completion offers %s, which it does not take: %s", c, o, err);
                free(err);
            }
            free(copy);
        }
    }
    if (cf) fclose(cf);
    CHECK_MSG(tables >= 12, "%d commands completed from their option tables", tables);
    CHECK(by_hand >= 3);   /* sweep, tune, history */
}

/* ---- the README's tour, run as written ---- */

/* The commands of the README's "A tour" block, one per entry (continuation lines joined, the
 * comment and a trailing '&' cut); NULL-terminated, owned by the caller. */
static char **tour_commands(size_t *n_out) {
    FILE *f = fopen("README.md", "r");
    if (!f) return NULL;
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char *t = strstr(text, "\n## A tour\n"), *b = t ? strstr(t, "```sh\n") : NULL, *e = b ? strstr(b + 6, "\n```") : NULL;
    if (!e) return NULL;
    *e = 0;
    char **cmds = calloc(64, sizeof *cmds);
    size_t k = 0;
    char line[4096] = "";
    for (char *p = b + 6; p && *p && k < 63;) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        /* the comment: from " #" outside single quotes */
        bool q = false;
        char *c = p;
        for (; *c; c++) {
            if (*c == '\'') q = !q;
            if (!q && *c == '#' && c > p && c[-1] == ' ') break;
        }
        *c = 0;
        size_t len = strlen(p);
        while (len && (p[len - 1] == ' ')) p[--len] = 0;
        bool cont = len && p[len - 1] == '\\';
        if (cont) p[--len] = 0;
        while (*p == ' ') p++;
        strncat(line, p, sizeof line - strlen(line) - 2);
        if (cont) strcat(line, " ");
        else if (line[0]) {
            size_t l = strlen(line);
            while (l && (line[l - 1] == ' ' || line[l - 1] == '&')) line[--l] = 0;
            cmds[k++] = strdup(line);
            line[0] = 0;
        }
        p = nl ? nl + 1 : NULL;
    }
    *n_out = k;
    return cmds;
}

/* A tour command as the test runs it: "dsperf " dropped, the deployment's URL replaced by the
 * test server's, the files it names put in the test's folder, a model's tokenizer.json by the
 * shared one; out: "--port N" dropped when drop_port. */
static void tour_rewrite(const char *cmd, const char *url, bool drop_port, char *out, size_t cap) {
    out[0] = 0;
    if (!strncmp(cmd, "dsperf ", 7)) cmd += 7;
    char *copy = strdup(cmd), *save = NULL;
    bool q = false;
    for (char *w = copy; *w; w++) if (*w == '\'') q = !q; else if (*w == ' ' && q) *w = '\x01';   /* keep quoted words whole */
    for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        for (char *x = w; *x; x++) if (*x == '\x01') *x = ' ';
        char word[1200];
        size_t wl = strlen(w);
        if (drop_port && !strcmp(w, "--port")) { strtok_r(NULL, " ", &save); continue; }
        if (!strncmp(w, "http://127.0.0.1:8000", 21)) snprintf(word, sizeof word, "%s%s", url, w + 21);
        else if (!strcmp(w, "tokenizer.json")) snprintf(word, sizeof word, "%s", harness_testdata_file("tokenizers/deepseek-v3/tokenizer.json"));
        else if ((wl > 5 && !strcmp(w + wl - 5, ".json")) || (wl > 6 && !strcmp(w + wl - 6, ".jsonl")) ||
                 (wl > 5 && !strcmp(w + wl - 5, ".html")))
            snprintf(word, sizeof word, "%s/%s", harness_tmpdir(), w);
        else snprintf(word, sizeof word, "%s", w);
        if (strlen(out) + strlen(word) + 2 < cap) {
            if (out[0]) strcat(out, " ");
            strcat(out, word);
        }
    }
    free(copy);
}

/* The largest E2EL of a results document in seconds (its max_e2el_ms), the drain after a
 * duration-bounded run: requests in flight at the end finish. */
static double max_e2el_s(const json_t *r) { return test_num(r, "max_e2el_ms") / 1000; }

/* Every command of the README's tour runs as written against the simulated deployment the block
 * starts, does what its comment says, and ends within the time its own flags give it (a level's
 * --duration plus the drain of what was in flight, never a wall-clock guess). The engine runs on
 * the wall clock, so the tour takes its minutes: alone, and in the plain pass only (.ci/run). */
TEST_ALONE(first_hour_readme_tour) {
    size_t n = 0;
    char **cmds = tour_commands(&n);
    CHECK_MSG(cmds && n >= 10, "README.md: no tour block");
    if (!cmds) return;
    test_server dep = { 0 };
    bool up = false;
    char args[4096], path[800];
    int handled = 0;
    for (size_t i = 0; i < n; i++) {
        const char *c = cmds[i];
        char *out = NULL, *err = NULL;
        if (!strncmp(c, "dsperf serve --engine sim", 25)) {
            tour_rewrite(c, "", true, args, sizeof args);
            CHECK_MSG(test_serve_start(&dep, args + 6) == 0, "%s: serve did not start", c);   /* args + 6: after "serve " */
            up = dep.port > 0;
            handled++;
        } else if (!strncmp(c, "dsperf serve ", 13)) {
            test_server s2;
            tour_rewrite(c, "", true, args, sizeof args);
            CHECK_MSG(test_serve_start(&s2, args + 6) == 0, "%s: serve did not start", c);
            char m[160];
            snprintf(m, sizeof m, "%s/v1/models", s2.url);
            char *body = test_http_get(m);
            CHECK_MSG(body && strstr(body, "\"data\""), "%s: /v1/models", c);
            free(body);
            test_serve_stop(&s2);
            handled++;
        } else if (!strncmp(c, "dsperf bench ", 13) && up) {
            tour_rewrite(c, dep.url, false, args, sizeof args);
            CHECK_MSG(test_run(args, NULL, &err) == 0, "%s: %s", c, err ? err : "");
            snprintf(path, sizeof path, "%s/run.json", harness_tmpdir());
            json_t *r = test_load_json(path);
            CHECK_MSG(r != NULL, "%s wrote no run.json", c);
            const json_t *cfg = json_object_get(r, "config");
            double rate = test_num(cfg, "rate_per_s"), dur = test_num(cfg, "duration_s");
            /* served what it offered (an overloaded deployment falls behind and queues): every
             * scheduled request completed, at the offered rate within Poisson's spread over the run */
            double want = rate * dur, got = test_num(r, "completed");
            CHECK_MSG(got >= want - 4 * sqrt(want) && test_num(r, "failed") == 0, "%s: %.0f of ~%.0f requests", c, got, want);
            /* within its time: the offered duration and the drain of the last request */
            CHECK_MSG(test_num(r, "duration") <= dur + max_e2el_s(r) + 1, "%s: ran %.1f s for --duration %.0f s", c,
                      test_num(r, "duration"), dur);
            /* the median TTFT stays near the engine's own prediction for the load (the same
             * deployment offline, sim below): no queue builds; p50 "~0.2 s" as the comment says */
            CHECK_MSG(test_num(r, "median_ttft_ms") < 1000, "%s: p50 TTFT %.0f ms", c, test_num(r, "median_ttft_ms"));
            json_decref(r);
            handled++;
        } else if (!strncmp(c, "dsperf sweep ", 13) && up) {
            tour_rewrite(c, dep.url, false, args, sizeof args);
            CHECK_MSG(test_run(args, &out, &err) == 0, "%s: %s", c, err ? err : "");
            bool ctx = strstr(c, "--input-len") != NULL;
            snprintf(path, sizeof path, "%s/%s", harness_tmpdir(), ctx ? "ctx.json" : "sweep.json");
            json_t *d = test_load_json(path);
            CHECK_MSG(d != NULL, "%s wrote no %s", c, path);
            size_t k;
            json_t *lv;
            json_array_foreach(json_object_get(d, "levels"), k, lv) {
                const json_t *r = json_object_get(lv, "results");
                if (ctx) CHECK_MSG(test_num(r, "completed") == 8, "%s: level %zu completed %.0f of 8", c, k, test_num(r, "completed"));
                else CHECK_MSG(test_num(r, "duration") <= 10 + max_e2el_s(r) + 1, "%s: level %zu ran %.1f s for --duration 10s",
                               c, k, test_num(r, "duration"));
            }
            if (ctx) {
                CHECK_EQ_INT(json_array_size(json_object_get(d, "levels")), 6);   /* 1k, 2k, ... 32k */
                CHECK(json_is_object(json_object_get(d, "context")));
            } else {
                CHECK_EQ_INT(json_array_size(json_object_get(d, "levels")), 5);   /* 32 .. 512 */
                /* the knee where the comment says (c=256), within a step of the ladder: a two-segment
                 * fit over five points, on a client that may lag its plan on a busy machine */
                double knee = test_num(json_object_get(d, "knee"), "load"), mg = test_num(json_object_get(d, "max_goodput"), "load");
                CHECK_MSG(knee == 256 || knee == 128, "%s: knee at %.0f (README: c=256)", c, knee);
                CHECK_MSG(mg >= 32 && mg <= 128, "%s: max goodput at %.0f (README: c=64)", c, mg);
            }
            json_decref(d);
            handled++;
        } else if (!strncmp(c, "dsperf diagnose ", 16) || !strncmp(c, "dsperf report ", 14) || !strncmp(c, "dsperf plan ", 12)) {
            tour_rewrite(c, "", false, args, sizeof args);
            CHECK_MSG(test_run(args, &out, &err) == 0, "%s: %s", c, err ? err : "");
            if (!strncmp(c, "dsperf diagnose ", 16)) CHECK_MSG(out && strstr(out, "1."), "%s: no ranked finding:\n%s", c, out ? out : "");
            if (!strncmp(c, "dsperf report ", 14)) {
                snprintf(path, sizeof path, "%s/report.html", harness_tmpdir());
                FILE *h = fopen(path, "r");
                CHECK_MSG(h != NULL, "%s wrote no report.html", c);
                if (h) fclose(h);
            }
            handled++;
        } else if (!strncmp(c, "dsperf sim ", 11)) {
            tour_rewrite(c, "", false, args, sizeof args);
            bool file = strstr(c, "--out") != NULL;
            if (!file) { strncat(args, " --out ", sizeof args - strlen(args) - 1); strncat(args, harness_tmpdir(), sizeof args - strlen(args) - 1);
                         strncat(args, "/sim_over.json", sizeof args - strlen(args) - 1); }
            CHECK_MSG(test_run(args, &out, &err) == 0, "%s: %s", c, err ? err : "");
            snprintf(path, sizeof path, "%s/%s", harness_tmpdir(), file ? "sim.json" : "sim_over.json");
            json_t *r = test_load_json(path);
            CHECK_MSG(r != NULL, "%s: no results", c);
            double rate = test_num(json_object_get(r, "config"), "rate_per_s"), got = test_num(r, "request_throughput");
            if (rate <= 15) {
                /* within capacity: served at its rate, no queue (mean TTFT well under a second) */
                CHECK_MSG(got >= 0.95 * rate && test_num(r, "mean_ttft_ms") < 1000, "%s: %.2f req/s, mean TTFT %.0f ms", c, got,
                          test_num(r, "mean_ttft_ms"));
            } else {
                /* past capacity, as the comment says: throughput caps, TTFT grows to tens of seconds */
                CHECK_MSG(got < 0.9 * rate && test_num(r, "mean_ttft_ms") > 10000, "%s: %.2f req/s, mean TTFT %.0f ms", c, got,
                          test_num(r, "mean_ttft_ms"));
            }
            json_decref(r);
            handled++;
        } else if (!strncmp(c, "dsperf tokenize ", 16)) {
            tour_rewrite(c, "", false, args, sizeof args);
            const char *tok = harness_testdata_file("tokenizers/deepseek-v3/tokenizer.json");
            if (tok && access(tok, R_OK) == 0) {
                CHECK_MSG(test_run(args, &out, &err) == 0 && out && atoi(out) > 0, "%s: %s%s", c, out ? out : "", err ? err : "");
            }
            handled++;
        } else if (!strncmp(c, "dsperf gpu ", 11)) {
            handled++;   /* needs an NVIDIA GPU: the gpu_ tests run it where there is one */
        } else if (!strcmp(c, "dsperf env")) {
            CHECK_MSG(test_run("env", &out, &err) == 0, "env: %s", err ? err : "");
            handled++;
        } else {
            CHECK_MSG(0, "a tour command this test does not know (or the deployment did not start): %s", c);
        }
        free(out);
        free(err);
    }
    CHECK_EQ_INT(handled, (int)n);
    if (up) test_serve_stop(&dep);
    for (size_t i = 0; i < n; i++) free(cmds[i]);
    free(cmds);
}
