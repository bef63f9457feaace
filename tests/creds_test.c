/* Credentials never leave the process: bench, sweep, tune (a server per configuration and the
 * simulator), monitor, report, compare and diagnose run with keys in headers (argv, --header-file,
 * $ENV{}), URL userinfo, query strings, a server command and a server's own log, and no file they
 * write and nothing they print holds any of them; the scripted server shows the real values were
 * sent; two keys stay distinguishable after masking; servers warn off loopback. */
#include "harness.h"
#include "testutil.h"
#include "client/client.h"
#include "common/bindaddr.h"
#include "common/fileio.h"
#include "monitor/monitor.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define S_BEARER "sk-bearer-SECRET-a1b2c3d4e5f6"   /* Authorization in --header-file */
#define S_XKEY "xk-header-SECRET-778899"          /* --header on argv */
#define S_ENVHDR "ev-indirect-SECRET-4242"        /* --header 'X-Env-Token: $ENV{...}' */
#define S_PASS "pw-userinfo-SECRET-31337"         /* http://u:PASS@ */
#define S_QUERY "qs-param-SECRET-27182"           /* ?api_key= */
#define S_QUERY2 "qs-metrics-SECRET-1414"         /* --server-metrics ...?token= */
#define S_OPENAI "sk-envkey-SECRET-161803"        /* OPENAI_API_KEY */
#define S_HF "hf_servercmd_SECRET_0xBEEF"         /* export HF_TOKEN=... in --server-cmd */
#define S_LOG "lg-serverlog-SECRET-9001"          /* printed by the server only (never on argv) */

static const char *const secrets[] = {S_BEARER, S_XKEY, S_ENVHDR, S_PASS, S_QUERY, S_QUERY2, S_OPENAI, S_HF, S_LOG, NULL};

/* Fails with the first secret found in text. 1 when one was. */
static int leaks(const char *what, const char *text) {
    for (const char *const *s = secrets; text && *s; s++)
        if (strstr(text, *s)) {
            const char *at = strstr(text, *s);
            size_t off = (size_t)(at - text);
            harness_fail(__FILE__, __LINE__, "%s holds %s: ...%.80s...", what, *s, at - (off > 40 ? 40 : off));
            return 1;
        }
    return 0;
}

/* Every file under dir, searched; returns how many files were read. */
static int search_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) < 0) continue;
        if (S_ISDIR(st.st_mode)) { n += search_tree(p); continue; }
        char *text = NULL;
        size_t len = 0;
        if (fileio_read_all(p, &text, &len) == 0) {
            /* a NUL inside would hide the rest from strstr: search it piecewise */
            for (size_t off = 0; off < len; off += strlen(text + off) + 1) leaks(p, text + off);
            n++;
        }
        free(text);
    }
    closedir(d);
    return n;
}

/* Runs dsperf with args; its stdout and stderr are searched too. Returns the exit code. */
static int run_clean(const char *args) {
    char *out = NULL, *err = NULL;
    int rc = test_run(args, &out, &err);
    char what[160];
    snprintf(what, sizeof what, "output of 'dsperf %.60s...'", args);
    leaks(what, out);
    leaks(what, err);
    if (rc != 0 && rc != 1) fprintf(stderr, "    dsperf %.*s exited %d: %s\n", (int)strcspn(args, " "), args, rc, err ? err : "");
    free(out);
    free(err);
    return rc;
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (f) { fputs(text, f); fclose(f); }
}

static char *file_text(const char *path) {
    char *t = NULL;
    return fileio_read_all(path, &t, NULL) == 0 ? t : NULL;
}

/* Whether dir/name holds needle. */
static bool file_has(const char *dir, const char *name, const char *needle) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *t = file_text(path);
    bool has = t && strstr(t, needle);
    free(t);
    return has;
}

static const char sse_ok[] =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    "data: {\"choices\":[{\"index\":0,\"text\":\" Hello\"}]}\r\n\r\n"
    "data: {\"choices\":[{\"index\":0,\"text\":\" world\",\"finish_reason\":\"length\"}]}\r\n\r\n"
    "data: [DONE]\r\n\r\n";

TEST(creds_never_written_or_printed) {
    const char *t = harness_tmpdir();
    char in[512], o[600], hf[600], cmd[4096], url[512], path[700];
    snprintf(in, sizeof in, "%s/in", t);
    snprintf(o, sizeof o, "%s/out", t);
    mkdir(in, 0755);
    mkdir(o, 0755);
    snprintf(hf, sizeof hf, "%s/headers.txt", in);
    write_file(hf, "# the bearer token stays off argv\nAuthorization: Bearer " S_BEARER "\r\n\nX-Env-Token: $ENV{DSPERF_T_TOKEN}\n");
    /* the search can fail: the input file holds a secret */
    char *hft = file_text(hf);
    CHECK(hft && strstr(hft, S_BEARER));
    free(hft);
    setenv("DSPERF_T_TOKEN", S_ENVHDR, 1);
    setenv("OPENAI_API_KEY", S_OPENAI, 1);
    setenv("DSPERF_T_LOGSECRET", S_LOG, 1);

    test_server s;
    if (test_serve_start(&s, "--ttft 1ms --itl 1ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    snprintf(url, sizeof url, "http://u:" S_PASS "@127.0.0.1:%d/?api_key=" S_QUERY, s.port);
    const char *creds_fmt = "--url %s --header-file %s --header 'X-Api-Key: " S_XKEY "'";
    char creds[1200];
    snprintf(creds, sizeof creds, creds_fmt, url, hf);

    snprintf(cmd, sizeof cmd, "bench %s --concurrency 2 --requests 6 --dataset random:in=8,out=4 --out %s/bench.json "
             "--save-requests %s/bench.jsonl --server-metrics http://127.0.0.1:%d/metrics?token=" S_QUERY2,
             creds, o, o, s.port);
    CHECK_EQ_INT(run_clean(cmd), 0);
    snprintf(cmd, sizeof cmd, "sweep %s --concurrency 1..2x2 --requests 4 --dataset random:in=8,out=4 --out %s/sweep.json --quiet",
             creds, o);
    CHECK_EQ_INT(run_clean(cmd), 0);
    /* a server per configuration: one that answers, one that fails (a bad --ttft) after printing
     * its settings, key and all, as vLLM prints its Namespace */
    snprintf(cmd, sizeof cmd, "tune --server-cmd 'export HF_TOKEN=" S_HF "; echo \"Namespace(api_key=\\\"$DSPERF_T_LOGSECRET\\\", "
             "port={port})\" >&2; exec %s serve --port {port} --ttft {ttft} --itl 1ms' --grid ttft=1ms,bogus "
             "--url 'http://u:" S_PASS "@127.0.0.1:{port}/?api_key=" S_QUERY "' --header-file %s --header 'X-Api-Key: " S_XKEY "' "
             "--health-timeout 20s --concurrency 1..2x2 --requests 4 --dataset random:in=8,out=4 --out %s/tune.json --quiet",
             harness_bin(), hf, o);
    CHECK_EQ_INT(run_clean(cmd), 0);
    snprintf(cmd, sizeof cmd, "tune --sim-flags '--model deepseek-v2-lite --max-num-seqs {seqs}' --grid seqs=8 %s "
             "--concurrency 1..2x2 --requests 20 --out %s/tunesim.json --quiet", creds, o);
    CHECK_EQ_INT(run_clean(cmd), 0);
    snprintf(cmd, sizeof cmd, "monitor %s --rate 50/s --requests 5 --dataset random:in=8,out=4 --listen 127.0.0.1:0 --log %s/mon.jsonl",
             creds, o);
    CHECK_EQ_INT(run_clean(cmd), 0);
    /* unreachable: the error line quotes the URL */
    snprintf(cmd, sizeof cmd, "bench --url http://u:" S_PASS "@127.0.0.1:1/?api_key=" S_QUERY " --header 'X-Api-Key: " S_XKEY "' "
             "--requests 1 --concurrency 1 --out %s/dead.json", o);
    CHECK(run_clean(cmd) != 0);
    /* a server that echoes the refused key in its error */
    char resp[512];
    snprintf(resp, sizeof resp, "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
             "{\"error\":{\"message\":\"Incorrect API key provided: %s. Find your key at example.com\"}}", S_XKEY);
    int sport;
    test_script *sc = test_script_start(resp, strlen(resp), 0, &sport);
    snprintf(cmd, sizeof cmd, "bench --url http://127.0.0.1:%d --header 'X-Api-Key: " S_XKEY "' --concurrency 1 --requests 2 "
             "--dataset random:in=8,out=4 --out %s/echo.json --save-requests %s/echo.jsonl", sport, o, o);
    run_clean(cmd);
    test_script_stop(sc);
    test_serve_stop(&s);

    static const char *const reports[] = {"bench", "sweep", "tune", "tunesim", "echo", NULL};
    for (const char *const *r = reports; *r; r++) {
        snprintf(cmd, sizeof cmd, "report %s/%s.json -o %s/%s.html --md %s/%s.md --csv %s/%s.csv", o, *r, o, *r, o, *r, o, *r);
        CHECK_EQ_INT(run_clean(cmd), 0);
    }
    snprintf(cmd, sizeof cmd, "compare %s/bench.json %s/bench.json --md --out %s/cmp.json", o, o, o);
    run_clean(cmd);
    snprintf(cmd, sizeof cmd, "diagnose %s/sweep.json", o);
    run_clean(cmd);
    snprintf(cmd, sizeof cmd, "tune --show %s/tune.json", o);
    run_clean(cmd);

    int files = search_tree(o);
    static const char *const written[] = {"bench.json", "bench.jsonl", "sweep.json", "tune.json", "tune.0.log", "tune.1.log",
                                          "tune.0.sweep.json", "tunesim.json", "tunesim.0.sweep.json",
                                          "mon.jsonl", "echo.json", "echo.jsonl", "cmp.json", "bench.html", "bench.md",
                                          "bench.csv", "sweep.html", "tune.html", "tune.md", "tune.csv", "tunesim.html", NULL};
    for (const char *const *w = written; *w; w++) {
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", o, *w);
        CHECK_MSG(stat(path, &st) == 0 && st.st_size > 0, "%s was not written", *w);
    }
    CHECK_MSG(files >= 29, "only %d files written", files);
    /* the runs ran, with their credentials masked rather than dropped */
    snprintf(path, sizeof path, "%s/bench.json", o);
    json_t *b = test_load_json(path);
    CHECK(b && test_num(b, "completed") == 6);
    const char *line = json_string_value(json_object_get(b, "command_line"));
    CHECK(line && strstr(line, "--header \"X-Api-Key: ${X_API_KEY:?redacted xk-... #") && strstr(line, "u:${URL_PASSWORD:?redacted "));
    json_decref(b);
    snprintf(path, sizeof path, "%s/echo.json", o);
    b = test_load_json(path);
    CHECK(b && test_num(b, "failed") == 2);
    json_decref(b);
    CHECK(file_has(o, "echo.jsonl", "Incorrect API key provided: [redacted xk-... #"));
    snprintf(path, sizeof path, "%s/tune.json", o);
    json_t *tj = test_load_json(path);
    json_t *cfgs = json_object_get(tj, "configs");
    CHECK_EQ_INT(json_array_size(cfgs), 2);
    CHECK_STR(json_string_value(json_object_get(json_array_get(cfgs, 0), "status")), "ok");
    const char *tail = json_string_value(json_object_get(json_array_get(cfgs, 1), "log_tail"));
    CHECK(tail && strstr(tail, "Namespace(api_key=\"[redacted lg-...001 #"));
    json_decref(tj);
    CHECK(file_has(o, "tune.0.log", "Namespace(api_key=\"[redacted "));
    snprintf(path, sizeof path, "%s/mon.jsonl", o);
    char *mon = file_text(path);
    int lines = 0;
    for (const char *p = mon; p && *p; p++) lines += *p == '\n';
    CHECK_EQ_INT(lines, 5);
    free(mon);
    CHECK(file_has(o, "bench.html", "replaced by shell variables"));
    unsetenv("OPENAI_API_KEY");
}

/* The masks are for files and logs only: the server gets the real values. */
TEST(creds_sent_for_real) {
    const char *t = harness_tmpdir();
    char hf[512], cmd[2048];
    snprintf(hf, sizeof hf, "%s/h.txt", t);
    write_file(hf, "Authorization: Bearer " S_BEARER "\nX-Env-Token: $ENV{DSPERF_T_TOKEN}\n");
    setenv("DSPERF_T_TOKEN", S_ENVHDR, 1);
    setenv("OPENAI_API_KEY", S_OPENAI, 1);
    int port;
    test_script *sc = test_script_start(sse_ok, strlen(sse_ok), 0, &port);
    snprintf(cmd, sizeof cmd, "bench --url http://127.0.0.1:%d/v1?api_key=" S_QUERY " --header-file %s --header 'X-Api-Key: " S_XKEY "' "
             "--concurrency 1 --requests 2 --dataset random:in=4,out=2 --quiet --out %s/r1.json", port, hf, t);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    char *req = test_script_requests(sc);
    CHECK(req && strstr(req, "GET /v1/models?api_key=" S_QUERY " HTTP/1.1"));
    CHECK(req && strstr(req, "POST /v1/completions?api_key=" S_QUERY " HTTP/1.1"));
    CHECK(req && strstr(req, "Authorization: Bearer " S_BEARER "\r\n"));
    CHECK(req && strstr(req, "X-Api-Key: " S_XKEY "\r\n"));
    CHECK(req && strstr(req, "X-Env-Token: " S_ENVHDR "\r\n"));
    CHECK(req && !strstr(req, S_OPENAI));   /* an explicit Authorization replaces OPENAI_API_KEY's */
    free(req);
    test_script_stop(sc);

    /* OPENAI_API_KEY alone is the Bearer token; userinfo alone is Basic auth */
    sc = test_script_start(sse_ok, strlen(sse_ok), 0, &port);
    snprintf(cmd, sizeof cmd, "bench --url http://127.0.0.1:%d --concurrency 1 --requests 1 --dataset random:in=4,out=2 --quiet", port);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    req = test_script_requests(sc);
    CHECK(req && strstr(req, "Authorization: Bearer " S_OPENAI "\r\n"));
    free(req);
    test_script_stop(sc);
    unsetenv("OPENAI_API_KEY");
    sc = test_script_start(sse_ok, strlen(sse_ok), 0, &port);
    snprintf(cmd, sizeof cmd, "bench --url http://u:%s@127.0.0.1:%d --concurrency 1 --requests 1 --dataset random:in=4,out=2 --quiet",
             "p4ss", port);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    req = test_script_requests(sc);
    CHECK(req && strstr(req, "Authorization: Basic dTpwNHNz\r\n"));   /* base64("u:p4ss") */
    free(req);
    test_script_stop(sc);
}

/* The same key gives the same mask in every run; another key another one. */
TEST(creds_two_keys_stay_distinguishable) {
    test_server s;
    if (test_serve_start(&s, "--ttft 1ms --itl 1ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    static const char *const keys[] = {"sk-proj-AAAAAAAAAAAAAAAAAAAAAAAA-end123", "sk-proj-AAAAAAAAAAAAAAAAAAAAAAAB-end123",
                                       "sk-proj-AAAAAAAAAAAAAAAAAAAAAAAA-end123"};
    char masks[3][160] = {{0}};
    for (int i = 0; i < 3; i++) {
        char cmd[1024], path[600];
        snprintf(path, sizeof path, "%s/k%d.json", harness_tmpdir(), i);
        snprintf(cmd, sizeof cmd, "bench --url %s --header 'Authorization: Bearer %s' --concurrency 1 --requests 1 "
                 "--dataset random:in=4,out=2 --quiet --out %s", s.url, keys[i], path);
        CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
        json_t *r = test_load_json(path);
        const char *line = json_string_value(json_object_get(r, "command_line"));
        const char *m = line ? strstr(line, "${OPENAI_API_KEY:?redacted ") : NULL;
        CHECK_MSG(m && !strstr(line, "AAAAAAAA"), "command_line: %s", line ? line : "(none)");
        if (m) snprintf(masks[i], sizeof masks[i], "%.*s", (int)strcspn(m, "}"), m);
        json_decref(r);
    }
    test_serve_stop(&s);
    CHECK(masks[0][0] && strcmp(masks[0], masks[1]) != 0);   /* alike in prefix and tail, told apart */
    CHECK_STR(masks[0], masks[2]);
    CHECK(!strncmp(masks[0], "${OPENAI_API_KEY:?redacted sk-...123 #", 38));
}

TEST(creds_header_errors_quote_no_value) {
    char *err = NULL;
    int rc = test_run("bench --url http://127.0.0.1:1 --concurrency 1 --header 'X-Api-Key " S_XKEY "'", NULL, &err);
    CHECK_EQ_INT(rc, 2);
    CHECK(err && strstr(err, "is not a header") && !strstr(err, S_XKEY));
    free(err);
    unsetenv("DSPERF_T_UNSET");
    rc = test_run("bench --url http://127.0.0.1:1 --concurrency 1 --header 'Authorization: Bearer $ENV{DSPERF_T_UNSET}'", NULL, &err);
    CHECK_EQ_INT(rc, 2);
    CHECK(err && strstr(err, "$ENV{DSPERF_T_UNSET} is not set"));
    free(err);
    rc = test_run("sweep --url http://127.0.0.1:1 --concurrency 1..2 --header-file /nonexistent/h.txt", NULL, &err);
    CHECK_EQ_INT(rc, 2);
    CHECK(err && strstr(err, "--header-file /nonexistent/h.txt: No such file"));
    free(err);
}

TEST(creds_servers_warn_off_loopback) {
    CHECK(bindaddr_is_loopback("127.0.0.1") && bindaddr_is_loopback("127.3.2.1") && bindaddr_is_loopback("::1"));
    CHECK(bindaddr_is_loopback("::ffff:127.0.0.1") && bindaddr_is_loopback(""));
    CHECK(!bindaddr_is_loopback("0.0.0.0") && !bindaddr_is_loopback("::") && !bindaddr_is_loopback("10.0.0.5"));
    CHECK(!bindaddr_is_loopback("192.0.2.1"));
    /* 192.0.2.1 (TEST-NET-1) is on no interface: the bind fails after the warning, and nothing
     * listens; the interrupt is a guard should it ever bind */
    char *err = NULL;
    test_run_interrupt("serve --host 192.0.2.1 --port 0", 3000, NULL, &err);
    CHECK(err && strstr(err, "not loopback, and has no authentication"));
    free(err);
    err = NULL;
    test_run_interrupt("serve --host 127.0.0.1 --port 0 --duration 1s", 3000, NULL, &err);
    CHECK(err && !strstr(err, "no authentication"));
    free(err);
}

/* The exporter's info label names the URL: masked, as it is served to whoever scrapes. */
TEST(creds_not_in_monitor_metrics) {
    mon_metrics m;
    mon_slo slo = { .target = 0.99 };
    mon_metrics_init(&m, &slo, 1, "http://u:" S_PASS "@h:1/?api_key=" S_QUERY, "chat");
    size_t len = 0;
    char *text = mon_metrics_format(&m, 1000000000, &len);
    CHECK(text && strstr(text, "dsperf_monitor_info{url=\"http://u:[redacted pw-...337 #"));
    leaks("the exporter's /metrics", text);
    free(text);
    mon_metrics_free(&m);
}

TEST(client_url_keeps_the_query) {
    char *u = client_url("http://h:1/v1/?api-key=k&x=1", "/v1/completions");
    CHECK_STR(u, "http://h:1/v1/completions?api-key=k&x=1");
    free(u);
    u = client_url("http://h:1/", "/v1/models");
    CHECK_STR(u, "http://h:1/v1/models");
    free(u);
}
