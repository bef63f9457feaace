/* The report's long-context and stability views: a simulated sweep along prompt length on V3 (KV
 * runs out at 32k) gives the context section with its three figures, the roofline drawn beside the
 * measurement, the "stops fitting" rule and table row, the headline tile, and the same in Markdown;
 * a concurrency sweep of the fixed engine with load-dependent jitter gives the stability figure
 * with its fitted curve; a sweep file written without the sections gets them from the report. */
#include "harness.h"
#include "testutil.h"
#include "report/report.h"
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *render(json_t *doc, bool md) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    report_opts o;
    report_default_opts(&o);
    char err[256];
    int rc = md ? report_write_markdown(f, doc, &o, err, sizeof err) : report_write_html(f, doc, &o, err, sizeof err);
    fclose(f);
    if (rc != 0) { free(buf); return NULL; }
    return buf;
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

TEST(report_context_view) {
    char path[512], cmd[1024];
    snprintf(path, sizeof path, "%s/ctx.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sim --model deepseek-v3 --gpu h200 --tp 8 --input-len 4k..64k --concurrency 32 --requests 32 --quiet --out %s", path);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    json_t *d = test_load_json(path);
    CHECK(d != NULL);
    if (!d) return;
    char *h = render(d, false);
    CHECK(h != NULL);
    if (h) {
        CHECK(strstr(h, "id=\"context\"") && strstr(h, "href=\"#context\""));
        CHECK(strstr(h, "id=\"fig-ctx-ttft\"") && strstr(h, "id=\"fig-ctx-tpot\"") && strstr(h, "id=\"fig-ctx-mem\""));
        CHECK(!strstr(h, "id=\"fig-saturation\""));   /* the load is fixed: no saturation curve */
        CHECK(strstr(h, "The deployment stops fitting at 32k tokens") != NULL);
        CHECK(strstr(h, "stops fitting at 32k") != NULL);          /* the rule on the charts */
        CHECK(count(h, "class=\"s pred\"") + count(h, "pred\"") >= 2);   /* roofline lines */
        CHECK(strstr(h, "deepseek-v3 on h200, tp 8") != NULL);
        CHECK(strstr(h, ">stops fitting at<") && strstr(h, ">32k tokens<"));   /* the headline tile */
        CHECK(strstr(h, "in=32k") != NULL);                        /* levels labelled by length */
    }
    char *m = render(d, true);
    CHECK(m && strstr(m, "## Context length (prompt)") && strstr(m, "**Stops fitting at 32k tokens**"));
    CHECK(m && strstr(m, "| 32k | 128 |") != NULL);
    free(h);
    free(m);
    json_decref(d);
}

TEST(report_stability_view) {
    char path[512], cmd[1024];
    snprintf(path, sizeof path, "%s/stab.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sim --engine fixed --ttft 0 --itl 10ms --jitter 0.02 --jitter-per-stream 0.004 --concurrency 4..64x2 "
             "--dataset random:in=16,out=101 --requests 640 --quiet --out %s", path);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    json_t *d = test_load_json(path);
    CHECK(d != NULL);
    if (!d) return;
    char *h = render(d, false);
    CHECK(h && strstr(h, "id=\"stability\"") && strstr(h, "id=\"fig-stability\"") && strstr(h, "<b>unstable</b>"));
    char *m = render(d, true);
    CHECK(m && strstr(m, "## Stability") && strstr(m, "**unstable**: lambda 0.2"));
    free(h);
    free(m);
    /* a file without the sections: the report computes them (dsperf report) */
    json_object_del(d, "stability");
    char path2[512], out[512], cmd2[1200];
    snprintf(path2, sizeof path2, "%s/old.json", harness_tmpdir());
    snprintf(out, sizeof out, "%s/old.md", harness_tmpdir());
    CHECK(json_dump_file(d, path2, 0) == 0);
    snprintf(cmd2, sizeof cmd2, "report %s --md %s", path2, out);
    CHECK_EQ_INT(test_run(cmd2, NULL, NULL), 0);
    FILE *f = fopen(out, "r");
    char buf[65536] = "";
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = 0;
    if (f) fclose(f);
    CHECK(strstr(buf, "**unstable**") != NULL);
    json_decref(d);
}
