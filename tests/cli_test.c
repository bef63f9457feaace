/* cli tests — one CLI: output paths checked before any request is sent, one flag per meaning
 * (--gpu-ids picks local GPUs to sample; the GPU type is --gpu), a flag missing its value does not
 * swallow the next option, one name for the per-request file, and serve's help names each flag
 * once. Every bad input is one line and exit 2. */
#include "harness.h"
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int one_line(const char *s) {
    const char *nl = s ? strchr(s, '\n') : NULL;
    return s && nl && !nl[1];
}

/* A run whose output cannot be written stops before its first request: the server saw none. */
TEST(cli_outputs_checked_before_the_run) {
    test_server s;
    if (test_serve_start(&s, "--ttft 1ms --itl 1ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    const char *cmds[] = {
        "bench --url %s --concurrency 2 --requests 20 --out /nonexistent/x.json",
        "bench --url %s --concurrency 2 --requests 20 --save-requests /nonexistent/x.jsonl",
        "sweep --url %s --concurrency 1,2 --requests 10 --out /nonexistent/s.json",
        "sweep --url %s --concurrency 1,2 --requests 10 --out %s --save-requests /nonexistent/p",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char cmd[1024], ok_out[600];
        snprintf(ok_out, sizeof ok_out, "%s/ok.json", harness_tmpdir());
        snprintf(cmd, sizeof cmd, cmds[i], s.url, ok_out);
        char *err = NULL;
        CHECK_EQ_INT(test_run(cmd, NULL, &err), 2);
        CHECK_MSG(err && strstr(err, "/nonexistent/") && strstr(err, "cannot write") && one_line(err), "%s: %s", cmd, err ? err : "");
        free(err);
    }
    char murl[128];
    snprintf(murl, sizeof murl, "%s/metrics", s.url);
    char *m = test_http_get(murl);
    CHECK(m != NULL);
    /* no completion request reached the server: it generated nothing */
    if (m) CHECK_MSG(test_prom_value(m, "vllm:generation_tokens_total") == 0,
                     "requests were served before the output path was checked");
    free(m);
    test_serve_stop(&s);
    const char *offline[] = {
        "sim --requests 10 --out /nonexistent/x.json",
        "sim --requests 10 --save-requests /nonexistent/x.jsonl",
    };
    for (size_t i = 0; i < sizeof offline / sizeof offline[0]; i++) {
        char *err = NULL;
        CHECK_EQ_INT(test_run(offline[i], NULL, &err), 2);
        CHECK_MSG(err && strstr(err, "cannot write") && one_line(err), "%s: %s", offline[i], err ? err : "");
        free(err);
    }
}

TEST(cli_one_flag_per_meaning) {
    struct { const char *cmd, *want; } cases[] = {
        /* a GPU type where GPU indices belong: a usage error naming both flags */
        {"bench --url http://127.0.0.1:1 --concurrency 1 --gpu-ids h200", "--gpu in plan"},
        /* a missing value must not swallow the next option */
        {"bench --url http://127.0.0.1:1 --concurrency 1 --gpu-ids --server-metrics http://127.0.0.1:1/metrics", "needs a value"},
        {"sweep --url http://127.0.0.1:1 --concurrency 1,2 --gpu-ids --server-metrics http://127.0.0.1:1/metrics", "needs a value"},
        {"gpu --gpu-ids h200", "--gpu-ids"},
        /* the per-request file has one name: the old ones are gone */
        {"sim --requests 10 --requests-out x.jsonl", "requests-out"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *err = NULL;
        int rc = test_run(cases[i].cmd, NULL, &err);
        CHECK_MSG(rc == 2, "%s: exit %d", cases[i].cmd, rc);
        CHECK_MSG(err && strstr(err, cases[i].want) && one_line(err), "%s: %s", cases[i].cmd, err ? err : "");
        free(err);
    }
    char *out = NULL;
    CHECK_EQ_INT(test_run("serve --help", &out, NULL), 0);
    int n_model = 0;
    for (const char *p = out; p && (p = strstr(p, "\n  --model ")); p++) n_model++;
    CHECK_MSG(n_model == 1, "serve --help lists --model %d times", n_model);
    free(out);
    const char *helps[] = { "bench --help", "sim --help", "report --help", "sweep --help" };
    for (size_t i = 0; i < sizeof helps / sizeof helps[0]; i++) {
        out = NULL;
        CHECK_EQ_INT(test_run(helps[i], &out, NULL), 0);
        CHECK_MSG(out && strstr(out, "--save-requests") && !strstr(out, "--requests-out"), "%s", helps[i]);
        free(out);
    }
}
