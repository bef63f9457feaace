/* The real-engine scenario corpus: each scenario (tests/scenarios/NAME.scn, described in
 * tests/scenarios/README.md) is a llama-server configuration serving the random-weight DeepSeek-V2
 * `tiny` GGUF on the CPU whose limiting factor is known by construction, and a load. The test
 * starts the server, runs the load with full telemetry (--server-metrics, --server-pid,
 * --host-metrics), runs `dsperf diagnose --json` and asserts the first finding: its class, and
 * that one of its knobs names the engine flag the scenario turned, with the value it was given.
 * The .scn files also drive scripts/run_scenarios.sh, so the script and the tests agree.
 *
 * .scn format: "key: value" lines, '#' comments. Keys: server (llama-server flags; --metrics is
 * always added), model (a GGUF under the engine's models/, default tiny), load (a dsperf command;
 * @MODEL@ is the model's path, for --tokenizer), expect_class, expect_flag and expect_current
 * (optional: the knob), expect_sweep_rc (default 0), kill_after_decodes (the fault: SIGKILL the
 * server once /metrics counts that many decode steps), why (for the README). */
#include "harness.h"
#include "testutil.h"
#include "llamacpp_util.h"
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SCN_DIR "tests/scenarios"

typedef struct {
    char server[512], model[64], load[1024];
    char expect_class[64], expect_flag[32], expect_current[32];
    int expect_sweep_rc;
    long kill_after_decodes;
} scenario;

/* expect_class may list classes that name the same cause with what the run could prove (one
 * word each, space separated): e.g. prefill_compute where the server had its threads, prefill where
 * other processes held the cores; the knob and its current value are asserted either way. */
static int class_expected(const char *list, const char *cls) {
    size_t n = strlen(cls);
    for (const char *p = list; *p;) {
        while (*p == ' ') p++;
        const char *e = p;
        while (*e && *e != ' ') e++;
        if ((size_t)(e - p) == n && !strncmp(p, cls, n)) return 1;
        p = e;
    }
    return 0;
}

static void trim(char *s) {
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = 0;
}

/* 0 ok; -1 when the file is missing or a key the test needs is absent. */
static int scenario_load(const char *name, scenario *sc) {
    memset(sc, 0, sizeof *sc);
    snprintf(sc->model, sizeof sc->model, "tiny");
    char path[256];
    snprintf(path, sizeof path, SCN_DIR "/%s.scn", name);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[2048];
    while (fgets(line, sizeof line, f)) {
        trim(line);
        if (line[0] == '#' || !line[0]) continue;
        char *colon = strchr(line, ':');
        if (!colon) continue;
        *colon = 0;
        const char *v = colon + 1;
        while (*v == ' ' || *v == '\t') v++;
        if (!strcmp(line, "server")) snprintf(sc->server, sizeof sc->server, "%s", v);
        else if (!strcmp(line, "model")) snprintf(sc->model, sizeof sc->model, "%s", v);
        else if (!strcmp(line, "load")) snprintf(sc->load, sizeof sc->load, "%s", v);
        else if (!strcmp(line, "expect_class")) snprintf(sc->expect_class, sizeof sc->expect_class, "%s", v);
        else if (!strcmp(line, "expect_flag")) snprintf(sc->expect_flag, sizeof sc->expect_flag, "%s", v);
        else if (!strcmp(line, "expect_current")) snprintf(sc->expect_current, sizeof sc->expect_current, "%s", v);
        else if (!strcmp(line, "expect_sweep_rc")) sc->expect_sweep_rc = atoi(v);
        else if (!strcmp(line, "kill_after_decodes")) sc->kill_after_decodes = atol(v);
    }
    fclose(f);
    return sc->load[0] && sc->expect_class[0] ? 0 : -1;
}

/* The load line with @MODEL@ replaced by the model's path. */
static void expand_model(const char *load, const char *model_path, char *out, size_t cap) {
    size_t o = 0;
    for (const char *p = load; *p && o + 1 < cap;) {
        if (!strncmp(p, "@MODEL@", 7)) {
            int n = snprintf(out + o, cap - o, "%s", model_path);
            o += n > 0 ? (size_t)n : 0;
            if (o >= cap) o = cap - 1;
            p += 7;
        } else out[o++] = *p++;
    }
    out[o] = 0;
}

/* The fault: a child that polls /metrics every 100 ms and SIGKILLs the server once it has run
 * `decodes` decode steps (a count of work done, not a time, so a busy machine only delays it). */
static pid_t start_killer(const char *url, pid_t server, long decodes) {
    pid_t k = fork();
    if (k != 0) return k;
    char murl[128];
    snprintf(murl, sizeof murl, "%s/metrics", url);
    for (;;) {
        if (kill(server, 0) != 0) _exit(0);
        char *m = test_http_get(murl);
        double d = m ? test_prom_value(m, "llamacpp:n_decode_total") : NAN;
        free(m);
        if (!isnan(d) && d >= (double)decodes) { kill(server, SIGKILL); _exit(0); }
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Does the knob's flag name `flag`? The flag text is "-np", "-b/-ub", "-c (total, split over -np
 * slots)", "--cache-reuse N (and cache_prompt)": only the part before the first space counts (so
 * -c's note about -np does not name -np), split on '/'. */
static int flag_names(const char *text, const char *flag) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", text);
    char *sp = strchr(buf, ' ');
    if (sp) *sp = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, "/", &save); t; t = strtok_r(NULL, "/", &save))
        if (!strcmp(t, flag)) return 1;
    return 0;
}

/* The knob's current value against the expected text: equal strings, or equal numbers ("1s"
 * against 1: the unit is the flag's own). */
static int current_is(const json_t *cur, const char *want) {
    if (json_is_string(cur)) {
        if (!strcmp(json_string_value(cur), want)) return 1;
        char *end;
        double a = strtod(json_string_value(cur), &end), b = strtod(want, NULL);
        return end != json_string_value(cur) && a == b;
    }
    if (json_is_number(cur)) {
        char *end;
        double b = strtod(want, &end);
        return end != want && json_number_value(cur) == b;
    }
    return 0;
}

static void run_scenario(const char *name) {
    LLAMA_REQUIRE();
    scenario sc;
    if (scenario_load(name, &sc) != 0) { CHECK_MSG(0, "%s/%s.scn is missing or lacks load/expect_class", SCN_DIR, name); return; }
    const char *mp = test_llama_model(sc.model);
    if (!mp) { CHECK_MSG(0, "model %s is not under %s/models (scripts/real_engine.sh makes it)", sc.model, test_llama_dir()); return; }
    char model_path[1024], load[2048], args[640];
    snprintf(model_path, sizeof model_path, "%s", mp);
    expand_model(sc.load, model_path, load, sizeof load);
    snprintf(args, sizeof args, "%s --metrics", sc.server);

    test_llama s;
    if (test_llama_start(&s, sc.model, args) != 0) { CHECK_MSG(0, "llama-server %s did not start", args); return; }
    pid_t killer = sc.kill_after_decodes > 0 ? start_killer(s.url, s.pid, sc.kill_after_decodes) : 0;

    char sweep[512], cmd[4096];
    snprintf(sweep, sizeof sweep, "%s/%s.sweep.json", harness_tmpdir(), name);
    snprintf(cmd, sizeof cmd, "%s --url %s --server-metrics %s/metrics --server-pid %d --host-metrics --quiet --out %s",
             load, s.url, s.url, (int)s.pid, sweep);
    char *err = NULL;
    int rc = test_run(cmd, NULL, &err);
    if (killer > 0) { kill(killer, SIGKILL); waitpid(killer, NULL, 0); }
    test_llama_stop(&s);
    CHECK_MSG(rc == sc.expect_sweep_rc, "%s: the load exited %d (expected %d): %s", name, rc, sc.expect_sweep_rc, err ? err : "");
    free(err);
    if (rc != sc.expect_sweep_rc) {
        /* what failed, by class, with each level's example: a scenario that fails says why */
        json_t *sw = test_load_json(sweep);
        size_t li;
        json_t *lv;
        json_array_foreach(json_object_get(sw, "levels"), li, lv) {
            char *ex = json_dumps(json_object_get(json_object_get(lv, "results"), "error_examples"), JSON_COMPACT);
            fprintf(stderr, "    level %zu errors: %s\n", li, ex ? ex : "(none)");
            free(ex);
        }
        json_decref(sw);
        fprintf(stderr, "    the server's log: %s\n", s.log_path);
    }

    snprintf(cmd, sizeof cmd, "diagnose %s --json", sweep);
    char *out = NULL;
    err = NULL;
    rc = test_run(cmd, &out, &err);
    CHECK_MSG(rc == 0, "%s: diagnose exited %d: %s", name, rc, err ? err : "");
    free(err);
    json_error_t je;
    json_t *d = out ? json_loads(out, 0, &je) : NULL;
    free(out);
    CHECK_MSG(d != NULL, "%s: diagnose --json printed no JSON", name);
    if (!d) return;
    json_t *first = json_array_get(json_object_get(d, "findings"), 0);
    CHECK_MSG(first != NULL, "%s: no finding at all (expected %s)", name, sc.expect_class);
    if (!first) { json_decref(d); return; }
    const char *cls = json_string_value(json_object_get(first, "class"));
    const char *title = json_string_value(json_object_get(first, "title"));
    CHECK_MSG(cls && class_expected(sc.expect_class, cls), "%s: first finding is %s (\"%s\"), expected %s",
              name, cls ? cls : "(none)", title ? title : "", sc.expect_class);
    if (sc.expect_flag[0]) {
        json_t *knobs = json_object_get(first, "knobs"), *k, *found = NULL;
        size_t i;
        json_array_foreach(knobs, i, k) {
            /* an engine setting names its flag in "flag"; a dsperf one ("--timeout") is its own name */
            const char *fl = json_string_value(json_object_get(k, "flag"));
            const char *kn = json_string_value(json_object_get(k, "knob"));
            if ((fl && flag_names(fl, sc.expect_flag)) || (!fl && kn && kn[0] == '-' && flag_names(kn, sc.expect_flag))) {
                found = k;
                break;
            }
        }
        CHECK_MSG(found != NULL, "%s: the first finding (%s) has no knob with the flag %s", name, cls ? cls : "(none)", sc.expect_flag);
        if (found) {
            json_t *cur = json_object_get(found, "current");
            char *ctext = cur ? json_dumps(cur, JSON_ENCODE_ANY) : NULL;
            CHECK_MSG(cur && current_is(cur, sc.expect_current), "%s: knob %s (%s) has current %s, expected %s", name,
                      json_string_value(json_object_get(found, "knob")), sc.expect_flag, ctext ? ctext : "(absent)", sc.expect_current);
            free(ctext);
        }
    }
    json_decref(d);
}

/* One TEST per scenario; the README line of each says how it is built and why. */
static const char *const scenario_names[] = {
    "admission", "admission_open", "ctx_overflow", "ctx_ladder", "ctx_generation", "faults", "healthy",
    "interference", "prefill_threads", "prefix_slots", "client_timeout",
};

/* Every .scn in the folder is one of the scenarios tested here, and each has its README line: a
 * scenario added without a test (or a test without its file) is caught without an engine. */
TEST(scenario_corpus_complete) {
    size_t n = sizeof scenario_names / sizeof *scenario_names, files = 0;
    char *readme = NULL;
    FILE *rf = fopen(SCN_DIR "/README.md", "r");
    CHECK_MSG(rf != NULL, SCN_DIR "/README.md is missing");
    if (rf) {
        readme = calloc(1, 1 << 16);
        if (readme) readme[fread(readme, 1, (1 << 16) - 1, rf)] = 0;
        fclose(rf);
    }
    DIR *dir = opendir(SCN_DIR);
    CHECK_MSG(dir != NULL, "cannot read " SCN_DIR);
    struct dirent *e;
    char line[256];
    while (dir && (e = readdir(dir))) {
        snprintf(line, sizeof line, "%s", e->d_name);
        size_t l = strlen(line);
        if (l < 5 || strcmp(line + l - 4, ".scn")) continue;
        line[l - 4] = 0;
        files++;
        int known = 0;
        for (size_t i = 0; i < n; i++) known |= !strcmp(scenario_names[i], line);
        CHECK_MSG(known, "%s/%s.scn has no TEST in tests/scenario_test.c", SCN_DIR, line);
        char row[300];
        snprintf(row, sizeof row, "| %s |", line);
        CHECK_MSG(readme && strstr(readme, row), "%s/README.md has no line for %s", SCN_DIR, line);
        scenario sc;
        CHECK_MSG(scenario_load(line, &sc) == 0, "%s.scn lacks load or expect_class", line);
    }
    if (dir) closedir(dir);
    CHECK_EQ_INT((long)files, (long)n);
    free(readme);
}

TEST(scenario_admission) { run_scenario("admission"); }
TEST(scenario_admission_open) { run_scenario("admission_open"); }
TEST(scenario_ctx_overflow) { run_scenario("ctx_overflow"); }
TEST(scenario_ctx_ladder) { run_scenario("ctx_ladder"); }
TEST(scenario_faults) { run_scenario("faults"); }
/* its verdict needs the client to keep a single user's closed loop: beside three other tests of a
 * sanitized suite on two cores, the client itself fell behind that plan and diagnose said so */
TEST_ALONE(scenario_healthy) { run_scenario("healthy"); }
/* its cause is a 1200-token prefill sharing steps with chats on one thread: run alone, so the
 * suite's other tests do not stretch those prefills past what the level measures */
TEST_ALONE(scenario_interference) { run_scenario("interference"); }
TEST(scenario_prefill_threads) { run_scenario("prefill_threads"); }
TEST(scenario_prefix_slots) { run_scenario("prefix_slots"); }
TEST(scenario_client_timeout) { run_scenario("client_timeout"); }
TEST(scenario_ctx_generation) { run_scenario("ctx_generation"); }
