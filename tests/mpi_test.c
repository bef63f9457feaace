/* Integration tests of multi-host runs (src/dist): real jobs under Open MPI's mpirun on this
 * host (2-4 ranks, oversubscribed) against `dsperf serve` with known timing. Asserted without
 * wall-clock tolerances: exact counts and token totals, merged statistics against the job's own
 * per-request records (exact for request metrics, within the HDR error for pooled ITL), the
 * schedule against the plan and against a single process's, clock offsets on one host, one
 * result from rank 0, and no hang when a rank dies or mpirun is interrupted. */
#include "harness.h"
#include "testutil.h"
#include "metrics/hdr.h"
#include <dirent.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    pid_t pid;
    char log[600];
    char token[40];          /* in every rank's environment, to find them */
} mpi_job;

static bool have_mpirun(void) { return system("command -v mpirun >/dev/null 2>&1") == 0; }

/* Starts `mpirun <opts> -np N <dsperf> <args>` in its own process group, output to a log. */
static int job_start(mpi_job *j, const char *opts, int np, const char *args) {
    static int seq;
    snprintf(j->log, sizeof j->log, "%s/mpirun%d.log", harness_tmpdir(), ++seq);
    snprintf(j->token, sizeof j->token, "%d-%d", (int)getpid(), seq);
    size_t len = strlen(opts) + strlen(args) + strlen(harness_bin()) + 256;
    char *cmd = malloc(len);
    snprintf(cmd, len, "exec mpirun --allow-run-as-root --oversubscribe --bind-to none %s -np %d %s %s", opts, np,
             harness_bin(), args);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        int fd = open(j->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) { dup2(fd, 1); dup2(fd, 2); close(fd); }
        setenv("DSPERF_TEST_JOB", j->token, 1);
        /* Open MPI makes its session folder under TMPDIR (/tmp/ompi.HOST.UID by default): two
         * mpiruns of tests that run side by side race to create that one folder, and the loser
         * fails orte_init ("mkdir ... File exists"). Each test's own folder keeps them apart. */
        setenv("TMPDIR", harness_tmpdir(), 1);
        /* Open MPI's allocations are not ours to report, nor can they be told apart: it unloads its
         * components at MPI_Finalize, so LeakSanitizer sees them as "<unknown module>". dsperf's
         * own paths are leak-checked by every other test (the merge by src/dist/dist_test.c). */
        char asan[2048];
        snprintf(asan, sizeof asan, "%s detect_leaks=0", getenv("ASAN_OPTIONS") ? getenv("ASAN_OPTIONS") : "");
        setenv("ASAN_OPTIONS", asan, 1);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    free(cmd);
    j->pid = pid;
    return pid > 0 ? 0 : -1;
}

/* Waits up to timeout_s for mpirun; returns its exit code, or -1 when it had to be killed (a hang). */
static int job_wait(mpi_job *j, int timeout_s, double *took_s) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int st = 0;
    for (int i = 0; i < timeout_s * 20; i++) {
        if (waitpid(j->pid, &st, WNOHANG) == j->pid) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            if (took_s) *took_s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        usleep(50000);
    }
    kill(-j->pid, SIGKILL);     /* the group this test made: mpirun and its ranks */
    waitpid(j->pid, &st, 0);
    return -1;
}

/* The pid of the job's rank r (its environment carries the job's token), or -1. */
static pid_t job_rank_pid(const mpi_job *j, int r) {
    DIR *dir = opendir("/proc");
    struct dirent *e;
    pid_t found = -1;
    char want_tok[80], want_rank[64];
    snprintf(want_tok, sizeof want_tok, "DSPERF_TEST_JOB=%s", j->token);
    snprintf(want_rank, sizeof want_rank, "OMPI_COMM_WORLD_RANK=%d", r);
    while (dir && found < 0 && (e = readdir(dir))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char path[300], buf[65536];
        snprintf(path, sizeof path, "/proc/%s/environ", e->d_name);
        int fd = open(path, O_RDONLY);
        if (fd < 0) continue;
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0) continue;
        bool tok = false, rank = false;
        for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1) {
            buf[n] = 0;
            if (!strcmp(buf + i, want_tok)) tok = true;
            if (!strcmp(buf + i, want_rank)) rank = true;
        }
        char cpath[300], cmd[256] = "";
        snprintf(cpath, sizeof cpath, "/proc/%s/comm", e->d_name);
        int cf = open(cpath, O_RDONLY);
        if (cf >= 0) { ssize_t k = read(cf, cmd, sizeof cmd - 1); if (k > 0) cmd[k] = 0; close(cf); }
        if (tok && rank && strstr(cmd, "dsperf")) found = (pid_t)atoi(e->d_name);
    }
    if (dir) closedir(dir);
    return found;
}

static char *job_output(const mpi_job *j) {
    FILE *f = fopen(j->log, "r");
    if (!f) return strdup("");
    char *b = malloc(1 << 20);
    size_t n = fread(b, 1, (1 << 20) - 1, f);
    b[n] = 0;
    fclose(f);
    return b;
}

static int count_of(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
    return n;
}

static double num(const json_t *o, const char *k) { return test_num(o, k); }
static const json_t *dist_rank(const json_t *r, int k) { return json_array_get(json_object_get(json_object_get(r, "dist"), "rank_info"), (size_t)k); }

/* Starts `dsperf serve` with serve_args and names the test's output file; 0 ok (else failed). */
static int serve_and_out(test_server *s, const char *serve_args, char *out, size_t len, const char *name) {
    snprintf(out, len, "%s/%s", harness_tmpdir(), name);
    if (test_serve_start(s, serve_args) == 0) return 0;
    CHECK_MSG(0, "serve did not start");
    return -1;
}

#define NEED_MPIRUN() do { if (!have_mpirun()) { CHECK_MSG(0, "mpirun not found: install openmpi-bin (scripts/deps.sh)"); return; } } while (0)

/* Runs a job to completion; returns the results (NULL on failure) and the exit code. */
static json_t *run_job(int np, const char *opts, const char *args, const char *out, int *rc, char **log) {
    mpi_job j;
    if (job_start(&j, opts, np, args) != 0) return NULL;
    *rc = job_wait(&j, 120, NULL);
    char *text = job_output(&j);
    if (*rc != 0) fprintf(stderr, "    mpirun exited %d:\n%.3000s\n", *rc, text);
    if (log) *log = text; else free(text);
    return test_load_json(out);
}

TEST_ALONE(mpi_bench_counts_exact_one_result_clocks_on_one_host) {
    NEED_MPIRUN();
    test_server s;
    char out[600], args[1200];
    if (serve_and_out(&s, "--ttft 20ms --itl 5ms --prefill-per-token 0", out, sizeof out, "job.json") != 0) return;
    /* two request classes: each is summarised from its own merged histograms and bins */
    snprintf(args, sizeof args, "bench --url %s --concurrency 6 --requests 60 --client-threads 1 --dataset random:in=16,out=10 "
             "--class 'chat;weight=1' --class 'batch;weight=2' --out %s", s.url, out);
    int rc;
    char *log = NULL;
    json_t *r = run_job(3, "", args, out, &rc, &log);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    CHECK(r != NULL);
    if (!r) { free(log); return; }
    /* counts and totals are exact: the job is the plan, split three ways */
    CHECK_EQ_INT(num(r, "completed"), 60);
    CHECK_EQ_INT(num(r, "failed"), 0);
    CHECK_EQ_INT(num(r, "total_output_tokens"), 600);
    CHECK_EQ_INT(num(r, "total_input_tokens"), 960);
    CHECK_EQ_INT(num(r, "itl_samples"), 60 * 9);
    CHECK(json_is_false(json_object_get(r, "partial")));
    json_t *dist = json_object_get(r, "dist");
    CHECK_EQ_INT(num(dist, "ranks"), 3);
    CHECK_EQ_INT(num(dist, "shards"), 3);
    CHECK_EQ_INT(json_array_size(json_object_get(dist, "lost_ranks")), 0);
    long sum_started = 0, sum_tokens = 0;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(json_object_get(r, "timeline"), "started"), i, v) sum_started += (long)json_integer_value(v);
    json_array_foreach(json_object_get(json_object_get(r, "timeline"), "output_tokens"), i, v) sum_tokens += (long)json_integer_value(v);
    CHECK_EQ_INT(sum_started, 60);
    CHECK_EQ_INT(sum_tokens, 600);
    json_t *client = json_object_get(r, "client");
    CHECK_EQ_INT(json_array_size(json_object_get(client, "ranks")), 3);
    CHECK_EQ_INT(num(client, "chunks"), 600);
    CHECK_EQ_INT(num(client, "threads"), 3);
    for (int k = 0; k < 3; k++) {
        const json_t *ri = dist_rank(r, k), *clk = json_object_get(ri, "clock");
        CHECK_EQ_INT(num(ri, "requests"), 20);    /* 60 requests over 3 shards of one thread each */
        CHECK_EQ_INT(num(ri, "shard_base"), k);
        CHECK_STR(json_string_value(json_object_get(ri, "status")), "ok");
        if (k == 0) continue;
        /* one host, one CLOCK_MONOTONIC: the true offset is 0 */
        /* the true offset is 0, so the estimate must lie within the bound the method guarantees: half
         * the shortest round trip (how short that is depends on the machine's load, not on us) */
        double off = num(clk, "offset_ns"), unc = num(clk, "uncertainty_ns"), rtt = num(clk, "rtt_min_ns");
        CHECK_MSG(rtt > 0 && unc == floor((rtt + 1) / 2), "rank %d: uncertainty %.0f ns is not half the shortest round trip "
                  "%.0f ns", k, unc, rtt);
        CHECK_MSG(fabs(off) <= unc + 1, "rank %d clock offset %.0f ns outside its own bound %.0f ns", k, off, unc);
        /* and the shortest of the ping-pongs on one host is short: the offset is within 100 us of 0 */
        CHECK_MSG(fabs(off) <= 100000, "rank %d clock offset %.0f ns (uncertainty %.0f ns): want within 100 us of 0", k, off, unc);
        CHECK(json_is_number(json_object_get(clk, "drift_ns")));
    }
    long class_done = 0;
    json_array_foreach(json_object_get(r, "classes"), i, v) {
        double done = num(v, "completed");
        class_done += (long)done;
        CHECK_EQ_INT(num(v, "total_output_tokens"), done * 10);
        CHECK_EQ_INT(num(v, "itl_samples"), done * 9);
        CHECK(done == 0 || num(v, "max_output_tokens_per_s") > 0);
    }
    CHECK_EQ_INT(json_array_size(json_object_get(r, "classes")), 2);
    CHECK_EQ_INT(class_done, 60);
    /* rank 0 speaks for the job: one summary, one results line */
    CHECK_EQ_INT(count_of(log, "Serving Benchmark Result"), 1);
    CHECK_EQ_INT(count_of(log, "results written to"), 1);
    json_decref(r);
    free(log);
}

/* numpy's linear percentile over sorted values */
static double pct(const double *v, size_t n, double p) {
    double h = (double)(n - 1) * p / 100.0;
    size_t lo = (size_t)h, hi = lo + 1 < n ? lo + 1 : lo;
    return v[lo] + (v[hi] - v[lo]) * (h - (double)lo);
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Reads a per-request JSONL: TTFT and E2EL (ms) of successes, every ITL gap (ns), and sched by index. */
static size_t read_requests(const char *path, double *ttft, double *e2el, double *itl, size_t itl_cap, size_t *n_itl,
                            long long *sched, size_t sched_cap) {
    FILE *f = fopen(path, "r");
    size_t n = 0;
    *n_itl = 0;
    char *line = NULL;
    size_t cap = 0;
    while (f && getline(&line, &cap, f) > 0) {
        json_t *o = json_loads(line, 0, NULL);
        if (!o) continue;
        size_t idx = (size_t)json_integer_value(json_object_get(o, "index"));
        if (idx < sched_cap) sched[idx] = json_integer_value(json_object_get(o, "sched_ns"));
        if (!strcmp(json_string_value(json_object_get(o, "outcome")), "ok")) {
            ttft[n] = json_number_value(json_object_get(o, "ttft_ms"));
            e2el[n] = json_number_value(json_object_get(o, "e2el_ms"));
            n++;
            json_t *c = json_object_get(o, "chunk_ns");
            for (size_t k = 1; k < json_array_size(c) && *n_itl < itl_cap; k++)
                itl[(*n_itl)++] = (double)(json_integer_value(json_array_get(c, k)) - json_integer_value(json_array_get(c, k - 1)));
        }
        json_decref(o);
    }
    free(line);
    if (f) fclose(f);
    return n;
}

TEST(mpi_merged_statistics_equal_the_jobs_requests) {
    NEED_MPIRUN();
    test_server s;
    if (test_serve_start(&s, "--ttft 20ms --itl 5ms --jitter 0.5 --prefill-per-token 0") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char out[600], req[600], args[1400];
    snprintf(out, sizeof out, "%s/job.json", harness_tmpdir());
    snprintf(req, sizeof req, "%s/job.jsonl", harness_tmpdir());
    snprintf(args, sizeof args, "bench --url %s --concurrency 8 --requests 80 --dataset random:in=16,out=12 --quiet "
             "--percentiles 50,90,99 --out %s --save-requests %s", s.url, out, req);
    int rc;
    json_t *r = run_job(4, "", args, out, &rc, NULL);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    if (!r) { CHECK(r != NULL); return; }
    /* the per-request file holds every rank's requests, chunk times and all, on rank 0's clock */
    static double ttft[200], e2el[200], itl[4000];
    long long sched[200];
    size_t n_itl, n = read_requests(req, ttft, e2el, itl, 4000, &n_itl, sched, 200);
    CHECK_EQ_INT(n, 80);
    CHECK_EQ_INT(n_itl, 80 * 11);
    CHECK_EQ_INT(num(r, "itl_samples"), n_itl);
    qsort(ttft, n, sizeof *ttft, cmp_d);
    qsort(e2el, n, sizeof *e2el, cmp_d);
    qsort(itl, n_itl, sizeof *itl, cmp_d);
    double ps[] = { 50, 90, 99 };
    const char *lbl[] = { "50", "90", "99" };
    for (int k = 0; k < 3; k++) {
        char key[64];
        /* request-level metrics are exact over samples: equal to the JSONL's (printed to 1 ns) */
        snprintf(key, sizeof key, "p%s_ttft_ms", lbl[k]);
        CHECK_NEAR(num(r, key), pct(ttft, n, ps[k]), 2e-6);
        snprintf(key, sizeof key, "p%s_e2el_ms", lbl[k]);
        CHECK_NEAR(num(r, key), pct(e2el, n, ps[k]), 2e-6);
        /* pooled ITL: the four ranks' histograms merged bucket by bucket, within the HDR bound */
        snprintf(key, sizeof key, "p%s_itl_ms", lbl[k]);
        double exact_ms = pct(itl, n_itl, ps[k]) / 1e6;
        CHECK_NEAR(num(r, key), exact_ms, exact_ms * HDR_REL_ERROR + 1e-6);
    }
    json_decref(r);
}

/* The job's schedule is a single process's with as many client threads: same seed, same shards,
 * same arrival times (to the nanosecond, moved onto rank 0's clock with one offset per rank). */
TEST(mpi_schedule_equals_the_plan_and_a_single_process) {
    NEED_MPIRUN();
    test_server s;
    if (test_serve_start(&s, "--ttft 5ms --itl 1ms --prefill-per-token 0") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char out[600], req[600], one[600], one_req[600], args[1400];
    snprintf(out, sizeof out, "%s/job.json", harness_tmpdir());
    snprintf(req, sizeof req, "%s/job.jsonl", harness_tmpdir());
    snprintf(one, sizeof one, "%s/one.json", harness_tmpdir());
    snprintf(one_req, sizeof one_req, "%s/one.jsonl", harness_tmpdir());
    const char *plan = "--rate 40/s --requests 40 --seed 5 --dataset random:in=8,out=4 --quiet";
    snprintf(args, sizeof args, "bench --url %s %s --client-threads 1 --out %s --save-requests %s", s.url, plan, out, req);
    int rc;
    json_t *r = run_job(2, "", args, out, &rc, NULL);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "bench --url %s %s --client-threads 2 --out %s --save-requests %s", s.url, plan, one, one_req);
    int rc1 = test_run(cmd, NULL, NULL);
    /* a constant rate, split over two ranks: request i at exactly i/rate */
    char cout[600], creq[600];
    snprintf(cout, sizeof cout, "%s/const.json", harness_tmpdir());
    snprintf(creq, sizeof creq, "%s/const.jsonl", harness_tmpdir());
    snprintf(args, sizeof args, "bench --url %s --rate 40/s --arrival constant --requests 40 --dataset random:in=8,out=4 "
             "--quiet --client-threads 1 --out %s --save-requests %s", s.url, cout, creq);
    int rc2;
    json_t *rconst = run_job(2, "", args, cout, &rc2, NULL);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(rc1, 0);
    CHECK_EQ_INT(rc2, 0);
    static double a[64], b[64], c[4096];
    long long sj[64], s1[64], sc[64];
    size_t ni;
    for (int i = 0; i < 64; i++) sj[i] = s1[i] = sc[i] = -1;
    CHECK_EQ_INT(read_requests(req, a, b, c, 4096, &ni, sj, 64), 40);
    CHECK_EQ_INT(read_requests(one_req, a, b, c, 4096, &ni, s1, 64), 40);
    CHECK_EQ_INT(read_requests(creq, a, b, c, 4096, &ni, sc, 64), 40);
    int poisson_same = 0, const_exact = 0;
    for (int i = 0; i < 40; i++) {
        if (sj[i] - sj[0] == s1[i] - s1[0]) poisson_same++;
        else if (poisson_same == i) fprintf(stderr, "    request %d: job %lld ns, single process %lld ns after request 0\n", i, sj[i] - sj[0], s1[i] - s1[0]);
        long long want = (long long)(i * 1e9 / 40);
        if (llabs(sc[i] - sc[0] - want) <= 2) const_exact++;
        else if (const_exact == i) fprintf(stderr, "    constant: request %d at %lld ns, planned %lld\n", i, sc[i] - sc[0], want);
    }
    CHECK_EQ_INT(poisson_same, 40);
    CHECK_EQ_INT(const_exact, 40);
    if (rconst) {
        CHECK_NEAR(num(rconst, "intended_rate_per_s"), 40, 1e-9);
        /* sends follow that schedule: 39 gaps of 25 ms; a lag of 140 ms over the run would fail */
        CHECK_NEAR(num(rconst, "achieved_rate_per_s"), 40, 6);
        CHECK_EQ_INT(num(rconst, "completed"), 40);
    }
    json_decref(r);
    json_decref(rconst);
}

/* Waits (at most 60 s) until the server has completed n requests: the job's run is under way. */
static void wait_for_load(const test_server *s, double n) {
    char murl[128];
    snprintf(murl, sizeof murl, "%s/metrics", s->url);
    for (int i = 0; i < 600; i++) {
        char *m = test_http_get(murl);
        double done = m ? test_prom_value(m, "vllm:request_success_total{finished_reason=\"length\"") : NAN;
        free(m);
        if (done >= n) return;
        usleep(100000);
    }
    CHECK_MSG(0, "the job's run did not start within 60 s");
}

/* A rank that dies mid-run: with --enable-recovery the job goes on, rank 0 declares it lost after
 * --rank-timeout and writes the others' results; by default mpirun ends the job at once (SIGTERM)
 * and rank 0 still writes what it has. Either way: a partial result naming the lost rank, no hang. */
static void killed_rank(const char *opts, int victim) {
    test_server s;
    char out[600], args[1400];
    if (serve_and_out(&s, "--ttft 20ms --itl 5ms --prefill-per-token 0", out, sizeof out, "job.json") != 0) return;
    snprintf(args, sizeof args, "bench --url %s --concurrency 6 --duration 6s --rank-timeout 2s --dataset random:in=16,out=20 "
             "--quiet --out %s", s.url, out);
    mpi_job j;
    CHECK_EQ_INT(job_start(&j, opts, 3, args), 0);
    pid_t victim_pid = -1;
    for (int i = 0; i < 100 && victim_pid < 0; i++) { usleep(50000); victim_pid = job_rank_pid(&j, victim); }
    wait_for_load(&s, 12);   /* into the run: the server has answered 12 requests */
    CHECK(victim_pid > 0);
    if (victim_pid > 0) kill(victim_pid, SIGKILL);
    double took = 0;
    int rc = job_wait(&j, 60, &took);
    test_serve_stop(&s);
    char *log = job_output(&j);
    CHECK_MSG(rc != -1, "the job hung after rank %d died (killed after 60 s):\n%.2000s", victim, log);
    json_t *r = test_load_json(out);
    CHECK_MSG(r != NULL, "no results file after rank %d died:\n%.2000s", victim, log);
    free(log);
    if (!r) return;
    CHECK(json_is_true(json_object_get(r, "partial")));
    CHECK(num(r, "completed") > 0);
    const json_t *ri = dist_rank(r, victim);
    CHECK_STR(json_string_value(json_object_get(ri, "status")), "lost");
    json_t *lost = json_object_get(json_object_get(r, "dist"), "lost_ranks");
    CHECK(json_array_size(lost) >= 1);
    CHECK_EQ_INT(num(json_array_get(lost, 0), "rank"), victim);
    const char *why = json_string_value(json_object_get(r, "partial_reason"));
    char want[32];
    snprintf(want, sizeof want, "rank %d", victim);
    CHECK(why && strstr(why, want));
    json_decref(r);
}

/* mpirun kills the ranks odls_base_sigkill_timeout after its SIGTERM: 1 s by default, and less
 * once its own loop lags on a loaded machine (measured: SIGTERM 1.04 s after the Ctrl-C, SIGKILL
 * 0.12 s later). The README advises more for a job whose partial result matters; so do the tests
 * that stop a job (a failed job's mpirun then takes twice that long to exit). */
#define KILL_TIMEOUT "--mca odls_base_sigkill_timeout 4"

TEST(mpi_rank_killed_with_recovery_gives_partial_result) {
    NEED_MPIRUN();
    killed_rank("--enable-recovery " KILL_TIMEOUT, 1);
}

TEST(mpi_rank_killed_gives_partial_result_no_hang) {
    NEED_MPIRUN();
    killed_rank(KILL_TIMEOUT, 2);
}

/* Ctrl-C on mpirun: it sends SIGTERM to every rank (and SIGKILL a second later); every rank stops
 * and rank 0 writes what the job measured, marked partial. */
TEST(mpi_ctrl_c_keeps_the_partial_result) {
    NEED_MPIRUN();
    test_server s;
    char out[600], args[1400];
    if (serve_and_out(&s, "--ttft 20ms --itl 5ms --prefill-per-token 0", out, sizeof out, "job.json") != 0) return;
    snprintf(args, sizeof args, "bench --url %s --concurrency 4 --duration 30s --dataset random:in=16,out=20 --quiet --out %s",
             s.url, out);
    mpi_job j;
    CHECK_EQ_INT(job_start(&j, KILL_TIMEOUT, 2, args), 0);
    wait_for_load(&s, 8);
    kill(j.pid, SIGINT);
    double took = 0;
    int rc = job_wait(&j, 30, &took);
    test_serve_stop(&s);
    char *log = job_output(&j);
    CHECK_MSG(rc != -1, "mpirun did not end after Ctrl-C:\n%.2000s", log);
    json_t *r = test_load_json(out);
    CHECK_MSG(r != NULL, "no results after Ctrl-C:\n%.2000s", log);
    free(log);
    if (!r) return;
    CHECK(json_is_true(json_object_get(r, "partial")));
    const char *why = json_string_value(json_object_get(r, "partial_reason"));
    CHECK(why && strstr(why, "interrupted"));
    CHECK(num(r, "completed") > 0);
    CHECK(num(r, "duration") < 20);
    json_decref(r);
}

TEST(mpi_sweep_writes_one_file_with_every_rank) {
    NEED_MPIRUN();
    test_server s;
    char out[600], args[1400];
    if (serve_and_out(&s, "--ttft 10ms --itl 2ms --prefill-per-token 0", out, sizeof out, "sweep.json") != 0) return;
    /* c=1 runs on one rank (the others have no user and wait), c=4 on both */
    snprintf(args, sizeof args, "sweep --url %s --concurrency 1,4 --requests 16 --dataset random:in=8,out=6 --quiet "
             "--no-early-stop --out %s", s.url, out);
    int rc;
    json_t *d = run_job(2, "", args, out, &rc, NULL);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    if (!d) { CHECK(d != NULL); return; }
    json_t *levels = json_object_get(d, "levels");
    CHECK_EQ_INT(json_array_size(levels), 2);
    for (size_t i = 0; i < json_array_size(levels); i++) {
        json_t *res = json_object_get(json_array_get(levels, i), "results");
        CHECK_EQ_INT(num(res, "completed"), 16);
        CHECK_EQ_INT(num(res, "total_output_tokens"), 16 * 6);
        CHECK_EQ_INT(num(json_object_get(res, "dist"), "ranks"), 2);
        CHECK_EQ_INT(num(json_object_get(res, "dist"), "shards"), i == 0 ? 1 : 2);
    }
    json_decref(d);
}

/* --db under a job: rank 0 records the job's one result (bench) and its sweep; no other rank
 * touches the history, so it holds exactly two runs with the job's totals. */
TEST(mpi_rank_0_records_the_job_in_the_history) {
    NEED_MPIRUN();
    test_server s;
    char out[600], db[600], args[1400];
    if (serve_and_out(&s, "--ttft 5ms --itl 1ms --prefill-per-token 0", out, sizeof out, "hjob.json") != 0) return;
    snprintf(db, sizeof db, "%s/job.db", harness_tmpdir());
    snprintf(args, sizeof args, "bench --url %s --concurrency 4 --requests 40 --client-threads 1 --dataset random:in=8,out=5 "
             "--quiet --out %s --db %s --label job=bench", s.url, out, db);
    int rc, rc2;
    json_t *r = run_job(2, "", args, out, &rc, NULL);
    snprintf(out, sizeof out, "%s/hsweep.json", harness_tmpdir());
    snprintf(args, sizeof args, "sweep --url %s --concurrency 2,4 --requests 12 --dataset random:in=8,out=5 --quiet "
             "--no-early-stop --out %s --db %s --label job=sweep", s.url, out, db);
    json_t *d = run_job(2, "", args, out, &rc2, NULL);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(rc2, 0);
    CHECK(r && d);
    json_decref(r);
    json_decref(d);
    char cmd[900], *text = NULL;
    snprintf(cmd, sizeof cmd, "history --db %s list", db);
    CHECK_EQ_INT(test_run(cmd, &text, NULL), 0);
    CHECK_MSG(text && strstr(text, "(2 runs)") && strstr(text, "job=bench") && strstr(text, "job=sweep"), "%s", text ? text : "");
    free(text);
    text = NULL;
    snprintf(cmd, sizeof cmd, "history --db %s show 1 --doc", db);
    CHECK_EQ_INT(test_run(cmd, &text, NULL), 0);
    json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
    CHECK_EQ_INT(num(doc, "completed"), 40);
    CHECK_EQ_INT(num(json_object_get(doc, "dist"), "ranks"), 2);
    json_decref(doc);
    free(text);
}

/* Different command lines per rank (MPMD): rank 1's server does not answer, so its pre-flight
 * fails; rank 0 names it and the whole job ends with the usage exit code, before any load. */
TEST(mpi_a_rank_that_cannot_prepare_ends_the_job_with_its_reason) {
    NEED_MPIRUN();
    test_server s;
    if (test_serve_start(&s, "--ttft 10ms --itl 2ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char args[1400];
    snprintf(args, sizeof args, "bench --url %s --concurrency 2 --requests 4 --quiet : -np 1 %s bench --url http://127.0.0.1:1 "
             "--concurrency 2 --requests 4 --quiet", s.url, harness_bin());
    mpi_job j;
    CHECK_EQ_INT(job_start(&j, "", 1, args), 0);
    int rc = job_wait(&j, 60, NULL);
    test_serve_stop(&s);
    char *log = job_output(&j);
    CHECK_MSG(rc == 2, "exit %d, want 2:\n%.2000s", rc, log);
    CHECK_MSG(strstr(log, "rank 1 (") != NULL, "rank 0 did not name rank 1:\n%.2000s", log);
    free(log);
}

/* Telemetry from every node: a third rank is given a host name of its own (a UTS namespace, as a
 * GPU node would have), listed in --gpu-nodes: it sends no load and samples its host; rank 0's
 * node samples its own. The result carries both nodes' host series, labelled, on the job's clock. */
TEST(mpi_telemetry_from_every_node_on_one_clock) {
    NEED_MPIRUN();
    if (geteuid() != 0) { CHECK_MSG(0, "needs root for a UTS namespace (unshare --uts); CI runs as root"); return; }
    test_server s;
    if (test_serve_start(&s, "--ttft 10ms --itl 2ms --prefill-per-token 0") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char out[600], common[900], args[2400];
    snprintf(out, sizeof out, "%s/job.json", harness_tmpdir());
    snprintf(common, sizeof common, "bench --url %s --concurrency 2 --duration 2s --dataset random:in=8,out=6 --quiet "
             "--host-metrics --telemetry-interval 100ms --gpu-nodes dsp-gpu-node-1 --out %s", s.url, out);
    snprintf(args, sizeof args, "%s : -np 1 unshare --uts sh -c 'hostname dsp-gpu-node-1 && exec %s %s'", common,
             harness_bin(), common);
    int rc;
    char *log = NULL;
    json_t *r = run_job(2, "", args, out, &rc, &log);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    if (!r) { CHECK_MSG(0, "no results:\n%.2000s", log); free(log); return; }
    free(log);
    json_t *dist = json_object_get(r, "dist");
    CHECK_EQ_INT(num(dist, "ranks"), 3);
    CHECK_EQ_INT(num(dist, "load_ranks"), 2);
    CHECK_EQ_INT(num(dist, "telemetry_ranks"), 1);
    CHECK_EQ_INT(num(dist, "hosts"), 2);
    const json_t *g = dist_rank(r, 2);
    CHECK_STR(json_string_value(json_object_get(g, "role")), "telemetry");
    CHECK_STR(json_string_value(json_object_get(g, "host")), "dsp-gpu-node-1");
    CHECK_EQ_INT(num(g, "requests"), 0);
    CHECK(json_is_true(json_object_get(g, "node_leader")));
    CHECK(json_is_false(json_object_get(dist_rank(r, 1), "node_leader")));   /* rank 0's host: rank 0 samples it */
    json_t *hosts = json_object_get(json_object_get(r, "telemetry"), "hosts");
    CHECK_EQ_INT(json_array_size(hosts), 2);
    bool saw_gpu_node = false;
    double dur = num(r, "duration");
    size_t i, k;
    json_t *h, *t;
    json_array_foreach(hosts, i, h) {
        const char *name = json_string_value(json_object_get(h, "host"));
        if (name && !strcmp(name, "dsp-gpu-node-1")) { saw_gpu_node = true; CHECK_EQ_INT(num(h, "rank"), 2); }
        json_t *ts = json_object_get(json_object_get(h, "series"), "t_s");
        CHECK(json_array_size(ts) >= 5);
        /* on the job's clock: samples from about the start to the end of the run, on every node */
        bool inside = false;
        json_array_foreach(ts, k, t) {
            double x = json_number_value(t);
            CHECK_MSG(x > -5 && x < dur + 5, "host %s sample at %.3f s, run of %.3f s", name, x, dur);
            if (x >= 0 && x <= dur) inside = true;
        }
        CHECK(inside);
    }
    CHECK(saw_gpu_node);
    CHECK_EQ_INT(json_array_size(json_object_get(json_object_get(r, "telemetry_summary"), "hosts")), 2);
    CHECK_EQ_INT(json_array_size(json_object_get(json_object_get(r, "telemetry"), "nodes")), 2);
    json_decref(r);
}

/* ---- two "hosts": network namespaces joined by a veth pair, made by the test itself ----
 * mpirun runs in namespace A (with the server, on A's address); Open MPI starts B's daemon through
 * an rsh agent that enters namespace B (with a host name of its own) instead of ssh; the ranks talk
 * TCP over the veth pair, so the ping-pong crosses a real network stack. Same kernel, so the true
 * clock offset is 0. */
#include <sched.h>

#define NS_NET "10.213.77"

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...) {
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Enters the network namespace name (NULL: back to the saved one). */
static int enter_netns(const char *name, int saved_fd) {
    int fd = saved_fd;
    char path[128];
    if (name) {
        snprintf(path, sizeof path, "/var/run/netns/%s", name);
        fd = open(path, O_RDONLY);
        if (fd < 0) return -1;
    }
    int rc = setns(fd, CLONE_NEWNET);
    if (name) close(fd);
    return rc;
}

TEST_ALONE(mpi_two_hosts_over_a_veth_pair) {
    NEED_MPIRUN();
    if (geteuid() != 0) SKIP("needs root to make network namespaces (CI runs as root)");
    if (sh("command -v ip >/dev/null 2>&1") != 0) SKIP("needs iproute2 (ip) to make network namespaces");
    char A[32], B[32], va[16], vb[16];
    snprintf(A, sizeof A, "dspA%d", (int)getpid());
    snprintf(B, sizeof B, "dspB%d", (int)getpid());
    snprintf(va, sizeof va, "dva%d", (int)getpid());
    snprintf(vb, sizeof vb, "dvb%d", (int)getpid());
    int made = sh("ip netns add %s && ip netns add %s && ip link add %s type veth peer name %s && "
                  "ip link set %s netns %s && ip link set %s netns %s && "
                  "ip -n %s addr add " NS_NET ".1/24 dev %s && ip -n %s addr add " NS_NET ".2/24 dev %s && "
                  "ip -n %s link set %s up && ip -n %s link set %s up && ip -n %s link set lo up && ip -n %s link set lo up",
                  A, B, va, vb, va, A, vb, B, A, va, B, vb, A, va, B, vb, A, B);
    int self = open("/proc/self/ns/net", O_RDONLY);
    test_server s = { 0 };
    json_t *r = NULL;
    char *log = NULL;
    int rc = -1;
    CHECK_EQ_INT(made, 0);
    if (made == 0 && self >= 0) {
        char agent[600], hosts[600], out[600], opts[2000], args[1200];
        snprintf(agent, sizeof agent, "%s/nsrsh.sh", harness_tmpdir());
        snprintf(hosts, sizeof hosts, "%s/hosts", harness_tmpdir());
        snprintf(out, sizeof out, "%s/job.json", harness_tmpdir());
        FILE *f = fopen(agent, "w");
        /* Open MPI runs "<agent> <host> <daemon command>", as it would run ssh */
        fprintf(f, "#!/bin/sh\nhost=$1; shift\n[ \"$host\" = " NS_NET ".2 ] || { echo \"nsrsh: unknown host $host\" >&2; exit 1; }\n"
                   "exec ip netns exec %s unshare --uts sh -c \"hostname dsp-ns-b; $*\"\n", B);
        fclose(f);
        chmod(agent, 0755);
        f = fopen(hosts, "w");
        fprintf(f, NS_NET ".1 slots=1\n" NS_NET ".2 slots=1\n");
        fclose(f);
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);            /* B's daemon, started by the agent */
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
        CHECK_EQ_INT(enter_netns(A, -1), 0);
        int up = test_serve_start(&s, "--host " NS_NET ".1 --ttft 10ms --itl 2ms --prefill-per-token 0");
        snprintf(opts, sizeof opts, "--hostfile %s --mca plm_rsh_agent %s --mca oob_tcp_if_include " NS_NET ".0/24 "
                 "--mca btl_tcp_if_include " NS_NET ".0/24 --mca btl tcp,self", hosts, agent);
        snprintf(args, sizeof args, "bench --url %s --concurrency 4 --requests 40 --dataset random:in=8,out=5 --quiet --out %s",
                 s.url, out);
        mpi_job j;
        int started = up == 0 ? job_start(&j, opts, 2, args) : -1;
        enter_netns(NULL, self);
        CHECK_MSG(up == 0, "serve did not start in namespace %s", A);
        if (started == 0) {
            rc = job_wait(&j, 120, NULL);
            log = job_output(&j);
            r = test_load_json(out);
        }
    }
    if (s.pid > 0) test_serve_stop(&s);
    sh("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", A, B);   /* the veth pair goes with them */
    if (self >= 0) close(self);
    CHECK_MSG(rc == 0, "mpirun exited %d:\n%.3000s", rc, log ? log : "");
    free(log);
    if (!r) { CHECK(r != NULL); return; }
    CHECK_EQ_INT(num(r, "completed"), 40);
    CHECK_EQ_INT(num(r, "total_output_tokens"), 200);
    CHECK_EQ_INT(num(json_object_get(r, "dist"), "hosts"), 2);
    const json_t *b = dist_rank(r, 1), *clk = json_object_get(b, "clock");
    CHECK_STR(json_string_value(json_object_get(b, "host")), "dsp-ns-b");
    CHECK_EQ_INT(num(b, "requests"), 20);
    double off = num(clk, "offset_ns"), unc = num(clk, "uncertainty_ns"), rtt = num(clk, "rtt_min_ns");
    /* one kernel's clock on both ends: the true offset is 0, and the estimate must lie within half
     * the shortest round trip over the pair (a busy machine lengthens it; the bound says so) */
    CHECK_MSG(rtt > 0 && unc == floor((rtt + 1) / 2), "over the veth pair: uncertainty %.0f ns is not half the shortest round "
              "trip %.0f ns", unc, rtt);
    CHECK_MSG(fabs(off) <= unc + 1, "offset %.0f ns outside its own bound %.0f ns", off, unc);
    json_decref(r);
}
