/* tune_run_test — `dsperf tune` end to end on loopback: servers started from a template (the
 * built-in simulator, and shell commands that fail or never become healthy), the sweep per
 * configuration, the ordering the simulator's physics predicts, the recommendation, failures
 * recorded, usage errors, and Ctrl-C stopping the running server. */
#include "harness.h"
#include "engine/sim_interval.h"
#include <math.h>
#include "testutil.h"
#include "tune/tune.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const json_t *cfg_at(const json_t *d, size_t i) { return json_array_get(json_object_get(d, "configs"), i); }
static const json_t *point_at(const json_t *cfg, size_t i) {
    return json_array_get(json_object_get(json_object_get(cfg, "summary"), "points"), i);
}

/* True when something accepts connections on 127.0.0.1:port. */
static bool listening(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    bool ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

static bool file_exists(const char *p) { return p && access(p, R_OK) == 0; }

/* Output tokens/s of the offline simulator for the same engine and load, to derive expectations. */
static double sim_output_tput(int seqs, int conc) {
    char cmd[1024], path[512];
    snprintf(path, sizeof path, "%s/sim%d.json", harness_tmpdir(), seqs);
    snprintf(cmd, sizeof cmd, "sim --max-num-seqs %d --concurrency %d --requests 300 --dataset random:in=64,out=128 --quiet "
             "--out %s", seqs, conc, path);
    if (test_run(cmd, NULL, NULL) != 0) return NAN;
    json_t *d = test_load_json(path);
    double v = test_num(d, "output_throughput");
    json_decref(d);
    return v;
}

/* DeepSeek-V2-Lite on an H200 (the simulator's defaults) with 16 users: max-num-seqs 4 runs 4 of
 * them at a time, 32 runs all 16, so its output throughput is over 2x (offline simulator) and the
 * 4-seqs server's queue (three 128-token answers ahead, some 600 ms of wall time at --speedup 2)
 * puts its TTFT far above the 300 ms SLO, while at 2 users the first token comes in a few ms.
 * Levels of 3 s: an answer lasts over a second of wall time, and a 1 s level was mostly its edges
 * (on a busy machine the 32-seqs level then measured half its engine's pace). */
TEST(tune_sim_larger_batch_wins) {
    const char *tmp = harness_tmpdir();
    char out[512], cmd[2048];
    snprintf(out, sizeof out, "%s/tune.json", tmp);
    const double speedup = 2;
    snprintf(cmd, sizeof cmd, "tune --server-cmd '%s serve --engine sim --port {port} --max-num-seqs {seqs} --speedup 2' "
             "--grid seqs=4,32 --gpus 2 --health-timeout 20s --concurrency 2,16 --duration 3s "
             "--dataset random:in=64,out=128 --slo ttft=300ms --quiet --out %s", harness_bin(), out);
    char *err = NULL;
    int rc = test_run(cmd, NULL, &err);
    CHECK_EQ_INT(rc, 0);
    if (rc) fprintf(stderr, "    tune: %s\n", err ? err : "");
    free(err);
    json_t *d = test_load_json(out);
    CHECK(d != NULL);
    if (!d) return;
    CHECK_STR(json_string_value(json_object_get(d, "schema")), TUNE_SCHEMA);
    CHECK_EQ_INT(json_array_size(json_object_get(d, "configs")), 2);
    for (size_t i = 0; i < 2; i++) {
        const json_t *c = cfg_at(d, i);
        CHECK_STR(json_string_value(json_object_get(c, "status")), "ok");
        CHECK_STR(json_string_value(json_object_get(c, "stopped_by")), "SIGTERM");
        CHECK(file_exists(json_string_value(json_object_get(c, "log"))));
        json_t *sw = test_load_json(json_string_value(json_object_get(c, "sweep_file")));
        CHECK(sw && !strcmp(json_string_value(json_object_get(sw, "schema")), "dsperf.sweep/1"));
        json_decref(sw);
        /* the server was stopped */
        CHECK(!listening((int)json_integer_value(json_object_get(c, "port"))));
    }
    CHECK_STR(json_string_value(json_object_get(json_object_get(cfg_at(d, 1), "settings"), "seqs")), "32");
    const json_t *p4 = point_at(cfg_at(d, 0), 1), *p32 = point_at(cfg_at(d, 1), 1);
    double o4 = test_num(p4, "output_throughput"), o32 = test_num(p32, "output_throughput");
    CHECK_NEAR(test_num(p32, "output_throughput_per_gpu"), o32 / 2, 1e-6 * o32);
    /* the ordering holds on any machine (engine time runs 2x wall time) */
    CHECK_MSG(o32 > 1.4 * o4, "seqs=32 %.0f tok/s vs seqs=4 %.0f", o32, o4);
    double e4 = sim_output_tput(4, 16), e32 = sim_output_tput(32, 16);
    CHECK(e32 > 2 * e4);
    /* the served engine keeps the simulator's clock (at --speedup): its offline throughput is a
     * ceiling that a busy machine can only fall short of */
    CHECK_MSG(o4 <= 1.05 * speedup * e4, "seqs=4: %.0f tok/s above the engine's %.0f", o4, speedup * e4);
    CHECK_MSG(o32 <= 1.05 * speedup * e32, "seqs=32: %.0f tok/s above the engine's %.0f", o32, speedup * e32);
    /* under the SLO the 4-seqs server holds only at 2 users, the 32-seqs one at 16 */
    CHECK(json_is_false(json_object_get(p4, "meets_slo")));
    CHECK(json_is_true(json_object_get(p32, "meets_slo")));
    CHECK_NEAR(test_num(json_object_get(json_object_get(cfg_at(d, 0), "summary"), "goodput_under_slo"), "load"), 2, 0);
    const json_t *rec = json_object_get(d, "recommendation");
    CHECK(json_is_object(rec));
    CHECK_EQ_INT(json_integer_value(json_object_get(rec, "config")), 1);
    CHECK_EQ_INT(json_integer_value(json_object_get(rec, "compared_with")), 0);
    CHECK(strstr(json_string_value(json_object_get(rec, "buys")), "the default seqs=4") != NULL);
    CHECK(json_is_true(json_object_get(cfg_at(d, 1), "on_front")));
    CHECK(json_array_size(json_object_get(json_object_get(d, "pareto"), "front")) >= 1);
    const char *note = json_string_value(json_object_get(d, "target_note"));
    CHECK(note && strstr(note, "--speedup 2"));
    json_decref(d);
    /* the saved file prints the same recommendation */
    char show[600], *text = NULL;
    snprintf(show, sizeof show, "tune --show %s", out);
    CHECK_EQ_INT(test_run(show, &text, NULL), 0);
    CHECK(text && strstr(text, "Recommendation: seqs=32") && strstr(text, "Runner-up: seqs=4"));
    free(text);
}

/* A server that exits at once (with a message in its log) and one that never answers are
 * recorded as failed; tune goes on to the next and measures it. */
TEST(tune_failed_configs_recorded) {
    char out[512], cmd[2048];
    snprintf(out, sizeof out, "%s/fail.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "tune --server-cmd 'case {v} in bad) echo boom >&2; exit 3;; slow) exec sleep 30;; "
             "*) exec %s serve --port {port} --ttft 5ms --itl 1ms;; esac' --grid v=bad,slow,ok --health-timeout 1500ms "
             "--stop-grace 2s --concurrency 2 --requests 10 --dataset random:in=8,out=4 --quiet --out %s", harness_bin(), out);
    int rc = test_run(cmd, NULL, NULL);
    CHECK_EQ_INT(rc, 0);
    json_t *d = test_load_json(out);
    CHECK(d != NULL);
    if (!d) return;
    const json_t *bad = cfg_at(d, 0), *slow = cfg_at(d, 1), *ok = cfg_at(d, 2);
    CHECK_STR(json_string_value(json_object_get(bad, "status")), "failed");
    CHECK(strstr(json_string_value(json_object_get(bad, "error")), "exited with status 3") != NULL);
    CHECK_STR(json_string_value(json_object_get(bad, "log_tail")), "boom");
    CHECK_STR(json_string_value(json_object_get(slow, "status")), "failed");
    CHECK(strstr(json_string_value(json_object_get(slow, "error")), "within 1.5 s") != NULL);
    CHECK_STR(json_string_value(json_object_get(slow, "stopped_by")), "SIGTERM");
    CHECK_STR(json_string_value(json_object_get(ok, "status")), "ok");
    CHECK(!json_object_get(bad, "summary") && json_is_object(json_object_get(ok, "summary")));
    /* without --slo the recommendation is the highest throughput: the only measured one */
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(d, "recommendation"), "config")), 2);
    json_decref(d);
}

TEST(tune_nothing_measured_exit_1) {
    char out[512], cmd[1024];
    snprintf(out, sizeof out, "%s/none.json", harness_tmpdir());
    /* two axes after one --grid, as the product brief writes them */
    snprintf(cmd, sizeof cmd, "tune --server-cmd 'false {port} {tp} {kv}' --grid tp=1,2 kv=auto,fp8 --gpus-key tp "
             "--concurrency 1 --requests 1 --out %s", out);
    char *err = NULL;
    CHECK_EQ_INT(test_run(cmd, NULL, &err), 1);
    CHECK(err && strstr(err, "no configuration could be measured"));
    free(err);
    json_t *d = test_load_json(out);
    CHECK(d != NULL);
    CHECK_EQ_INT(json_array_size(json_object_get(d, "configs")), 4);
    const char *labels[4] = { "tp=1 kv=auto", "tp=1 kv=fp8", "tp=2 kv=auto", "tp=2 kv=fp8" };
    for (size_t i = 0; i < 4; i++) {
        const json_t *c = cfg_at(d, i);
        CHECK_STR(json_string_value(json_object_get(c, "label")), labels[i]);
        CHECK_STR(json_string_value(json_object_get(c, "status")), "failed");
        CHECK(strstr(json_string_value(json_object_get(c, "error")), "exited with status 1") != NULL);
        CHECK_NEAR(test_num(c, "gpus"), i < 2 ? 1 : 2, 0);   /* --gpus-key tp */
    }
    CHECK(json_is_null(json_object_get(d, "recommendation")));
    json_decref(d);
}

TEST(tune_usage_errors) {
    const char *bad[] = {
        "tune --server-cmd 'serve --port {port} --max-num-seqs {seqs} --tp {tp}' --grid seqs=1,2 --concurrency 1",
        "tune --concurrency 1",
        "tune --server-cmd 'x {port}' --grid seqs= --concurrency 1",
        "tune --server-cmd 'x {port}' --grid seqs=1 --gpus-key tp --concurrency 1",
        "tune --server-cmd 'x {port}' --grid seqs=1",
        "tune --server-cmd 'x {port}' --concurrency 1 --objective fast",
        "tune --server-cmd 'x --port 8000' --concurrency 1",
        "tune --server-cmd 'x {port}' --concurrency 1 --no-such-option",
        "tune --show /nonexistent/tune.json",
        "tune --server-cmd 'x {port}' --concurrency 1 --out /nonexistent/dir/t.json",
        "tune --sim-flags '--max-num-seqs {seqs} --port {port}' --grid seqs=1 --concurrency 1",
        "tune --sim-flags '--max-num-seqs 4' --server-cmd 'x {port}' --concurrency 1",
        "tune --sim-flags '--max-num-seqs 4' --auto",
        "tune --sim-flags '--max-num-seqs 4' --concurrency 1,2 --duration 10s",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *err = NULL;
        CHECK_EQ_INT(test_run(bad[i], NULL, &err), 2);
        CHECK_MSG(err && strstr(err, "dsperf:") && !strchr(strchr(err, '\n') ? strchr(err, '\n') + 1 : "", '\n'),
                  "not one line for '%s': %s", bad[i], err ? err : "(none)");
        free(err);
    }
    char *err = NULL;
    test_run(bad[0], NULL, &err);
    CHECK(err && strstr(err, "{tp}"));
    free(err);
    char *out = NULL;
    CHECK_EQ_INT(test_run("tune --help", &out, NULL), 0);
    CHECK(out && strstr(out, "examples:"));
    free(out);
    /* --dry-run shows the filled templates and starts nothing */
    out = NULL;
    CHECK_EQ_INT(test_run("tune --server-cmd 'vllm serve M --port {port} -tp {tp}' --grid tp=1,2 --gpus-key tp "
                          "--concurrency 1 --dry-run --out x/t.json", &out, NULL), 0);
    CHECK(out && strstr(out, "1 [tp=2] 2 GPUs: vllm serve M --port {port} -tp 2") && strstr(out, "x/t.1.sweep.json"));
    free(out);
}

/* Ctrl-C in the middle of a configuration: the server is stopped, the file says partial. The
 * signal goes when the first configuration's server has written its log's first line (it is
 * listening), not at a fixed delay: a loaded or sanitized tune may not have reached its first
 * server by then. (Not when the log merely exists: tune opens it before it forks the server, and
 * one TSan run whose signal came in that instant ran both configurations to the end.) */
TEST(tune_interrupt_stops_server) {
    char out[512], cmd[2048], log0[512];
    snprintf(out, sizeof out, "%s/int.json", harness_tmpdir());
    snprintf(log0, sizeof log0, "%s/int.0.log", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "tune --server-cmd '%s serve --port {port} --ttft {ttft} --itl 2ms' --grid ttft=5ms,6ms "
             "--concurrency 2 --duration 20s --dataset random:in=8,out=10 --quiet --out %s", harness_bin(), out);
    CHECK_EQ_INT(test_run_interrupt_when_file(cmd, log0, NULL, NULL), 1);
    json_t *d = test_load_json(out);
    CHECK(d != NULL);
    if (!d) return;
    CHECK(json_is_true(json_object_get(d, "partial")));
    CHECK_EQ_INT(json_array_size(json_object_get(d, "configs")), 1);
    const json_t *c = cfg_at(d, 0);
    CHECK_STR(json_string_value(json_object_get(c, "status")), "interrupted");
    CHECK(!listening((int)json_integer_value(json_object_get(c, "port"))));
    json_decref(d);
}

/* A server that exits in the middle of the sweep (after 35 responses: the first level's 30 and 5 of
 * the second's, whatever the machine's pace): the level before is kept, the one it died in (25 of
 * 30 requests refused) is not ranked, and the configuration says what happened. */
TEST(tune_server_dies_mid_sweep) {
    char out[512], cmd[2048];
    snprintf(out, sizeof out, "%s/dies.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "tune --server-cmd '%s serve --port {port} --ttft 5ms --itl 2ms --exit-after {life}' "
             "--grid life=35 --concurrency 2,4 --requests 30 --dataset random:in=8,out=10 --quiet --out %s",
             harness_bin(), out);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    json_t *d = test_load_json(out);
    CHECK(d != NULL);
    if (!d) return;
    const json_t *c = cfg_at(d, 0);
    CHECK_STR(json_string_value(json_object_get(c, "status")), "partial");
    CHECK(strstr(json_string_value(json_object_get(c, "error")), "exited with status 0 during the sweep") != NULL);
    CHECK(json_is_true(json_object_get(point_at(c, 0), "usable")));
    CHECK(json_is_false(json_object_get(point_at(c, 1), "usable")));
    CHECK(test_num(point_at(c, 1), "error_rate") > 0.5);
    const json_t *front = json_object_get(json_object_get(d, "pareto"), "front");
    CHECK_EQ_INT(json_array_size(front), 1);
    CHECK_NEAR(test_num(json_array_get(front, 0), "load"), 2, 0);
    json_decref(d);
}

/* --sim-flags: every level is one `dsperf sim` run on the virtual clock, so each point equals
 * what `dsperf sim` gives for the same flags, load and seed; per GPU uses the simulator's --tp. */
TEST(tune_sim_flags_match_offline_sim) {
    char out[512], cmd[2048];
    snprintf(out, sizeof out, "%s/simtune.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "tune --sim-flags '--max-num-seqs {seqs} --tp 2' --grid seqs=0,4,32 --concurrency 2,16 "
             "--requests 200 --dataset random:in=64,out=32 --slo ttft=100ms --slo-percentile 90 --objective tpot --quiet "
             "--out %s", out);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    json_t *d = test_load_json(out);
    CHECK(d != NULL);
    if (!d) return;
    CHECK_STR(json_string_value(json_object_get(d, "mode")), "sim");
    /* the simulator's figures carry its interval (sim_interval.h) */
    json_t *iv = json_object_get(d, "sim_interval");
    CHECK_NEAR(test_num(iv, "throughput_factor"), exp(sim_interval_q(SIM_IV_TPUT, SIM_IV_STEADY, 0)), 1e-9);
    CHECK(strstr(json_string_value(json_object_get(d, "target_note")), "80% interval") != NULL);
    /* ... and so does the recommendation's score: score / factor to score x factor */
    const json_t *rec = json_object_get(d, "recommendation"), *riv = json_object_get(rec, "score_interval_80");
    double fx = exp(sim_interval_q(SIM_IV_TPUT, SIM_IV_STEADY, 0)), score = test_num(rec, "score");
    CHECK(json_array_size(riv) == 2 && score > 0);
    CHECK_NEAR(json_number_value(json_array_get(riv, 0)), score / fx, score * 1e-9);
    CHECK_NEAR(json_number_value(json_array_get(riv, 1)), score * fx, score * 1e-9);
    CHECK_STR(json_string_value(json_object_get(json_object_get(cfg_at(d, 1), "summary"), "latency_field")), "p90_tpot_ms");
    /* max-num-seqs 0 is refused by the simulator: failed, with its message, and tune goes on */
    const json_t *c0 = cfg_at(d, 0);
    CHECK_STR(json_string_value(json_object_get(c0, "status")), "failed");
    CHECK(strstr(json_string_value(json_object_get(c0, "log_tail")), "max-num-seqs") != NULL);
    const int seqs[2] = { 4, 32 }, loads[2] = { 2, 16 };
    for (int c = 0; c < 2; c++) {
        const json_t *cfg = cfg_at(d, (size_t)c + 1);
        CHECK_STR(json_string_value(json_object_get(cfg, "status")), "ok");
        CHECK_NEAR(test_num(cfg, "gpus"), 2, 0);
        for (int l = 0; l < 2; l++) {
            char path[600], sim[1024];
            snprintf(path, sizeof path, "%s/direct.json", harness_tmpdir());
            snprintf(sim, sizeof sim, "sim --max-num-seqs %d --tp 2 --concurrency %d --requests 200 --dataset "
                     "random:in=64,out=32 --seed 1 --quiet --out %s", seqs[c], loads[l], path);
            CHECK_EQ_INT(test_run(sim, NULL, NULL), 0);
            json_t *r = test_load_json(path);
            double want = test_num(r, "output_throughput"), tpot = test_num(r, "p90_tpot_ms"), ttft = test_num(r, "p90_ttft_ms");
            json_decref(r);
            const json_t *p = point_at(cfg, (size_t)l);
            CHECK_NEAR(test_num(p, "output_throughput"), want, 1e-6 * want);
            CHECK_NEAR(test_num(p, "output_throughput_per_gpu"), want / 2, 1e-6 * want);
            /* --objective tpot at --slo-percentile 90; the SLO judged on p90 TTFT */
            CHECK_NEAR(test_num(p, "latency_ms"), tpot, 1e-6 * tpot);
            CHECK(json_is_true(json_object_get(p, "meets_slo")) == (ttft <= 100));
        }
    }
    /* as on the live server: 32 seqs carry 16 users within the SLO, 4 seqs queue them */
    CHECK(json_is_false(json_object_get(point_at(cfg_at(d, 1), 1), "meets_slo")));
    CHECK(json_is_true(json_object_get(point_at(cfg_at(d, 2), 1), "meets_slo")));
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(d, "recommendation"), "config")), 2);
    json_decref(d);
}
