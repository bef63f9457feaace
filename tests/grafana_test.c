/* grafana tests — the dashboard in contrib/grafana/dsperf.json queries only metrics the exporters
 * serve: every dsperf_* name in its expressions is in a live `dsperf monitor` exporter's /metrics
 * (scraped after real probes of `dsperf serve`), or is dsperf_gpu_<column> for a column the
 * `gpu --prom` exporter writes (its names are built from gpu_col_names). */
#include "harness.h"
#include "testutil.h"
#include "telemetry/nvml.h"
#include <ctype.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

static void collect_exprs(const json_t *j, json_t *out) {
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v) {
            if (!strcmp(k, "expr") && json_is_string(v)) json_array_append(out, v);
            else collect_exprs(v, out);
        }
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) collect_exprs(v, out);
    }
}

/* A sample line of name in Prometheus text: "name{" or "name " at a line start. */
static int served(const char *text, const char *name) {
    size_t n = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, name, n) && (p[n] == '{' || p[n] == ' ')) return 1;
    return 0;
}

TEST(grafana_dashboard_queries_only_served_metrics) {
    json_t *dash = test_load_json("contrib/grafana/dsperf.json");
    CHECK_MSG(dash != NULL, "contrib/grafana/dsperf.json is not valid JSON");
    if (!dash) return;
    json_t *exprs = json_array();
    collect_exprs(dash, exprs);
    CHECK(json_array_size(exprs) >= 8);
    test_server s;
    if (test_serve_start(&s, "--ttft 1ms --itl 1ms") != 0) { CHECK_MSG(0, "serve did not start"); json_decref(exprs); json_decref(dash); return; }
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "exec %s monitor --url %s --rate 20/s --requests 5 --slo ttft=1s --listen 127.0.0.1:0 --linger 60s",
             harness_bin(), s.url);
    int po[2];
    CHECK(pipe(po) == 0);
    pid_t m = fork();
    if (m == 0) {
        dup2(po[1], 1);
        close(po[0]);
        close(po[1]);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(po[1]);
    /* the exporter's address is its first line on stdout; the probes are over at "done:" */
    FILE *mo = fdopen(po[0], "r");
    char line[512], url[256] = "";
    while (mo && fgets(line, sizeof line, mo)) {
        const char *u = strstr(line, "http://");
        if (u && !url[0]) { snprintf(url, sizeof url, "%s", u); url[strcspn(url, " \n")] = 0; }
        if (strstr(line, "done:")) break;
    }
    CHECK_MSG(url[0], "monitor printed no exporter address");
    char *text = url[0] ? test_http_get(url) : NULL;
    CHECK(text != NULL && served(text, "dsperf_ttft_seconds_count"));
    size_t i, names = 0;
    json_t *e;
    json_array_foreach(exprs, i, e) {
        const char *x = json_string_value(e);
        for (const char *p = strstr(x, "dsperf_"); p; p = strstr(p + 1, "dsperf_")) {
            if (p > x && (isalnum((unsigned char)p[-1]) || p[-1] == '_')) continue;
            char name[128];
            size_t n = 0;
            while ((isalnum((unsigned char)p[n]) || p[n] == '_') && n < sizeof name - 1) { name[n] = p[n]; n++; }
            name[n] = 0;
            names++;
            if (!strncmp(name, "dsperf_gpu_", 11)) {
                int known = 0;
                for (int k = 0; k < GPU_COL_COUNT; k++) known |= !strcmp(name + 11, gpu_col_names[k]);
                CHECK_MSG(known, "%s: no such column in `dsperf gpu --prom`", name);
            } else {
                CHECK_MSG(text && served(text, name), "%s is not served by `dsperf monitor`", name);
            }
        }
    }
    CHECK(names >= 10);
    free(text);
    kill(m, SIGTERM);
    waitpid(m, NULL, 0);
    if (mo) fclose(mo);
    test_serve_stop(&s);
    json_decref(exprs);
    json_decref(dash);
}
