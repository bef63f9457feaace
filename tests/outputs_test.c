/* outputs tests — through the binary: "-" is standard output in every output flag (one document
 * there, the summary moved to stderr), /dev/stdout stays the system's symlink, a symlinked --out
 * updates its target, and a run without --out gets a new file that names no earlier run while an
 * explicit --out overwrites. */
#include "harness.h"
#include "testutil.h"
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#define LOAD "--concurrency 2 --requests 6 --dataset random:in=8,out=4"

static json_t *one_doc(const char *text) {
    json_error_t je;
    return text ? json_loads(text, 0, &je) : NULL;   /* trailing text after the document fails */
}

static int one_line(const char *s) {
    const char *nl = s ? strchr(s, '\n') : NULL;
    return s && nl && !nl[1];
}

/* Files in dir whose names start with prefix, into names (up to cap). */
static int files_with(const char *dir, const char *prefix, char names[][512], int cap) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (!strncmp(e->d_name, prefix, strlen(prefix)) && n < cap) snprintf(names[n++], 512, "%s/%s", dir, e->d_name);
    if (d) closedir(d);
    return n;
}

TEST(outputs_dash_is_standard_output) {
    test_server s;
    if (test_serve_start(&s, "--ttft 1ms --itl 1ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    setenv("DSPERF_RESULTS_DIR", harness_tmpdir(), 1);
    char cmd[1024];
    char *out = NULL, *err = NULL;
    snprintf(cmd, sizeof cmd, "bench --url %s " LOAD " --out -", s.url);
    CHECK_EQ_INT(test_run(cmd, &out, &err), 0);
    json_t *d = one_doc(out);
    CHECK_MSG(d && !strncmp(json_string_value(json_object_get(d, "schema")), "dsperf.results/", 15), "stdout: %.300s", out ? out : "");
    if (d) CHECK_EQ_INT(json_integer_value(json_object_get(d, "completed")), 6);
    CHECK_MSG(err && strstr(err, "Successful requests"), "the summary goes to stderr: %.300s", err ? err : "");
    json_decref(d);
    free(out); free(err); out = err = NULL;
    /* the per-request file: one JSON line per request */
    snprintf(cmd, sizeof cmd, "bench --url %s " LOAD " --quiet --out /dev/null --save-requests -", s.url);
    CHECK_EQ_INT(test_run(cmd, &out, NULL), 0);
    int lines = 0;
    for (char *p = out, *nl; p && (nl = strchr(p, '\n')); p = nl + 1) {
        *nl = 0;
        json_t *r = one_doc(p);
        lines += r && json_object_get(r, "ttft_ms") != NULL;
        json_decref(r);
    }
    CHECK_EQ_INT(lines, 6);
    free(out); out = NULL;
    /* two flags cannot both have standard output */
    snprintf(cmd, sizeof cmd, "bench --url %s " LOAD " --out - --save-requests -", s.url);
    CHECK_EQ_INT(test_run(cmd, NULL, &err), 2);
    CHECK_MSG(err && strstr(err, "standard output") && one_line(err), "%s", err ? err : "");
    free(err); err = NULL;
    /* a sweep: one document at the end, not one per level */
    snprintf(cmd, sizeof cmd, "sweep --url %s --concurrency 1,2 --requests 6 --dataset random:in=8,out=4 --out -", s.url);
    CHECK_EQ_INT(test_run(cmd, &out, NULL), 0);
    d = one_doc(out);
    CHECK_MSG(d && json_array_size(json_object_get(d, "levels")) == 2, "stdout: %.300s", out ? out : "");
    json_decref(d);
    free(out); out = NULL;
    test_serve_stop(&s);
    /* offline: sim, and a report from a results file */
    CHECK_EQ_INT(test_run("sim --requests 20 --concurrency 4 --out -", &out, NULL), 0);
    d = one_doc(out);
    CHECK_MSG(d && json_integer_value(json_object_get(d, "completed")) == 20, "sim stdout: %.300s", out ? out : "");
    json_decref(d);
    free(out); out = NULL;
    char res[600];
    snprintf(res, sizeof res, "%s/sim.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sim --requests 20 --concurrency 4 --quiet --out %s", res);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    snprintf(cmd, sizeof cmd, "report %s -o - --md /dev/null", res);
    CHECK_EQ_INT(test_run(cmd, &out, NULL), 0);
    CHECK_MSG(out && strstr(out, "<html") && strstr(out, "</html>"), "report -o -: %.200s", out ? out : "");
    free(out);
    CHECK(access("-", F_OK) != 0);     /* no file named "-" anywhere a test ran */
}

/* As root, --out /dev/stdout once replaced the system's /dev/stdout symlink with a file. */
TEST(outputs_dev_stdout_stays_a_link) {
    struct stat before, after;
    if (lstat("/dev/stdout", &before) != 0) SKIP("no /dev/stdout on this machine");
    char *out = NULL;
    CHECK_EQ_INT(test_run("sim --requests 10 --concurrency 2 --out /dev/stdout", &out, NULL), 0);
    json_t *d = one_doc(out);
    CHECK_MSG(d && json_integer_value(json_object_get(d, "completed")) == 10, "stdout: %.300s", out ? out : "");
    json_decref(d);
    free(out);
    CHECK(lstat("/dev/stdout", &after) == 0 && (after.st_mode & S_IFMT) == (before.st_mode & S_IFMT));
    CHECK_EQ_INT(after.st_ino, before.st_ino);
    CHECK(test_run("sim --requests 10 --concurrency 2 --quiet --out /dev/null", NULL, NULL) == 0);
    CHECK(lstat("/dev/null", &after) == 0 && S_ISCHR(after.st_mode));
}

TEST(outputs_symlinked_out_updates_its_target) {
    char target[600], link[600], cmd[1400];
    snprintf(target, sizeof target, "%s/target.json", harness_tmpdir());
    snprintf(link, sizeof link, "%s/link.json", harness_tmpdir());
    FILE *f = fopen(target, "w");
    if (f) { fputs("{}", f); fclose(f); }
    CHECK(symlink("target.json", link) == 0);
    snprintf(cmd, sizeof cmd, "sim --requests 10 --concurrency 2 --quiet --out %s", link);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    struct stat st;
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    json_t *d = test_load_json(target);
    CHECK(d && json_integer_value(json_object_get(d, "completed")) == 10);
    json_decref(d);
}

/* sweep without --out once overwrote the sweep.json of a 3.5-minute run with a small one. */
TEST(outputs_default_never_overwrites_an_earlier_run) {
    test_server s;
    if (test_serve_start(&s, "--ttft 1ms --itl 1ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char dir[600];
    snprintf(dir, sizeof dir, "%s/runs", harness_tmpdir());
    mkdir(dir, 0755);
    setenv("DSPERF_RESULTS_DIR", dir, 1);
    char cmd[1024], names[8][512];
    const int levels[2] = { 2, 1 };
    for (int k = 0; k < 2; k++) {
        char *err = NULL;
        snprintf(cmd, sizeof cmd, "sweep --url %s --concurrency %s --requests 6 --dataset random:in=8,out=4 --quiet", s.url,
                 k == 0 ? "1,2" : "1");
        CHECK_EQ_INT(test_run(cmd, NULL, &err), 0);
        CHECK_MSG(err && strstr(err, "/sweep-"), "where the sweep went is said: %s", err ? err : "");
        free(err);
    }
    int n = files_with(dir, "sweep-", names, 8);
    CHECK_EQ_INT(n, 2);
    int seen[3] = { 0, 0, 0 };
    for (int i = 0; i < n; i++) {
        json_t *d = test_load_json(names[i]);
        size_t nl = d ? json_array_size(json_object_get(d, "levels")) : 0;
        if (nl <= 2) seen[nl]++;
        json_decref(d);
    }
    CHECK_MSG(seen[levels[0]] == 1 && seen[levels[1]] == 1, "the first sweep's 2 levels and the second's 1 are both kept");
    /* bench without --out keeps its run too */
    char *err = NULL;
    snprintf(cmd, sizeof cmd, "bench --url %s " LOAD " --quiet", s.url);
    CHECK_EQ_INT(test_run(cmd, NULL, &err), 0);
    CHECK_MSG(err && strstr(err, "/bench-"), "%s", err ? err : "");
    free(err);
    CHECK_EQ_INT(files_with(dir, "bench-", names, 8), 1);
    json_t *d = test_load_json(names[0]);
    CHECK(d && json_integer_value(json_object_get(d, "completed")) == 6);
    json_decref(d);
    /* an explicit --out overwrites, as users expect */
    char out[700];
    snprintf(out, sizeof out, "%s/mine.json", dir);
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "bench --url %s --concurrency 1 --requests %d --dataset random:in=8,out=4 --quiet --out %s",
                 s.url, 3 + k, out);
        CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    }
    d = test_load_json(out);
    CHECK(d && json_integer_value(json_object_get(d, "completed")) == 4);
    json_decref(d);
    CHECK_EQ_INT(files_with(dir, "bench-", names, 8), 1);
    test_serve_stop(&s);
    /* a default that cannot be made is refused before the run */
    setenv("DSPERF_RESULTS_DIR", "/nonexistent-dir", 1);
    err = NULL;
    CHECK_EQ_INT(test_run("bench --url http://127.0.0.1:1 --concurrency 1 --requests 1", NULL, &err), 2);
    CHECK_MSG(err && strstr(err, "DSPERF_RESULTS_DIR") && one_line(err), "%s", err ? err : "");
    free(err);
}
