/* cmd_sweep — `dsperf sweep`: `bench` over a ladder of concurrencies or request rates (or the
 * automatic synchronous → throughput → rates ladder), each level watched by the over-saturation
 * detector, with repeats; after every level the sweep file is rewritten atomically with the knee,
 * the max goodput and the confidence intervals, so Ctrl-C or a crash loses at most the level in
 * progress. The running is sweep_run_job (run/sweep.h; sweep_run, shared with `dsperf tune`). */
#include "cli/cli.h"
#include "common/fileio.h"
#include "run/sweep.h"
#include "run/job.h"
#include "cli/sweep_opts.h"
#include "common/log.h"
#include <stdlib.h>
#include <stdio.h>

static const char usage_text[] =
"usage: dsperf sweep --url URL (--concurrency LADDER | --rate LADDER | --auto) [options]\n"
"       dsperf sweep --url URL --input-len LADDER (--concurrency N | --rate R/s) [options]\n"
"\n"
"Runs `dsperf bench` once per load level, finds the knee (where output throughput stops rising\n"
"with load while latency turns up) and the max goodput under --slo, stops a level that is\n"
"over-saturated (in-flight requests and TTFT both climbing) and skips the levels above it.\n"
"Writes one file (--out, schema dsperf.sweep/1) holding every level's full results.\n"
"\n"
"ladders:\n"
"  --concurrency LADDER    closed loop: 1,2,4,8  |  1..256x2 (doubling)  |  8..64 step 8\n"
"  --rate LADDER           open loop: 1..40/s step 4  |  2,4,8/s  |  1..40/s (10 even points)\n"
"  --auto                  a synchronous run (c=1), a saturating run (--auto-max-concurrency) that\n"
"                          measures the max request rate, then --auto-levels rates from the\n"
"                          synchronous rate to 1.25x the max (open loop)\n"
"  --auto-levels N         rate levels in --auto (default 6)\n"
"  --auto-max-concurrency N  users of the saturating run (default 128)\n"
"along context length (one fixed --concurrency N or --rate R/s):\n"
"  --input-len LADDER      prompt lengths, e.g. 1k..128k x2 (k = 1024): each level sends prompts of exactly\n"
"                          that many tokens (with --tokenizer; else words) built for the level. The context\n"
"                          view: TTFT against prompt length (ms per 1k tokens, where attention's quadratic\n"
"                          term takes over), TPOT and decode tok/s against context, DRAM bandwidth and KV\n"
"                          usage (telemetry), where the deployment stops fitting (preemptions, rejected\n"
"                          prompts, admission held by a full KV cache), and dsperf plan's roofline beside\n"
"                          each number when the model and GPU are known\n"
"  --output-len LADDER     output lengths likewise; one value with --input-len sets the output length\n"
"stability (every load sweep):\n"
"  --stability-score S     itl-cv (default: exp(-CV of ITL)), tpot-tail (p50/p99 TPOT) or throughput-cv\n"
"                          (exp(-CV of 1 s output windows)); the fit S0 e^(-lambda b), b = batch / 64, grades\n"
"                          lambda: < 0.05 highly stable (batch 64-512), <= 0.15 moderately (32-256), else\n"
"                          unstable; too short (< 4 loads) or too noisy a sweep says so\n"
"per level (the bench options apply to each level):\n"
"  --duration T | --requests N   how long each level runs (default 100 requests); a level whose\n"
"                          requests outlast --duration + --grace (dsperf cut more than completed)\n"
"                          is not measured: the sweep says which --duration or --requests would\n"
"                          measure it, stops there and exits 1\n"
"  --max-error-rate F      a level with server-side failures above it fails the sweep (exit 1,\n"
"                          after every level is written; default 1%)\n"
"  --warmup N              warm-up requests per level, excluded from its statistics\n"
"  --repeats N             run each level N times (seeds seed..seed+N-1); means and 95% t intervals\n"
"analysis:\n"
"  --slo ttft=..,tpot=..,e2el=..   goodput SLOs: max goodput and the SLO boundary load\n"
"  --slo-percentile P      percentile compared with the SLOs for the boundary (default 99)\n"
"  --osd-window T          over-saturation window (default 5s; the detector ticks at T/10)\n"
"  --no-early-stop         measure every level to its end (saturation is still judged)\n"
"output:\n"
"  --out FILE              sweep results (- is standard output); default a new\n"
"                          sweep-<date>-<time>.json (in $DSPERF_RESULTS_DIR or here), never an earlier run's\n"
"  --save-requests PREFIX  per-request JSONL per level: PREFIX.<level>.<repeat>.jsonl\n"
"  --quiet, --no-progress  as in bench\n"
"  --db PATH, --label K=V  record the sweep in the results history (dsperf history --help)\n"
"\n"
"Every other `dsperf bench` option (--url, --model, --api, --dataset, --arrival, --max-concurrency,\n"
"--timeout, --seed, --percentiles, --header, --header-file ...) is accepted and applies to every level.\n"
"Under mpirun or srun --mpi=pmix the sweep runs as one job over many hosts (--gpu-nodes, --rank-timeout).\n"
"\n"
"examples:\n"
"  dsperf sweep --url http://127.0.0.1:8000 --concurrency 1..128x2 --duration 20s --out sweep.json\n"
"  dsperf sweep --url http://h:8000 --rate 2..40/s step 4 --duration 30s --slo ttft=500ms,tpot=50ms\n"
"  dsperf sweep --url http://h:8000 --auto --duration 30s --repeats 3\n"
"  dsperf sweep --url http://h:8000 --input-len 1k..128k x2 --concurrency 8 --requests 32 \\\n"
"               --tokenizer tokenizer.json --server-metrics http://h:8000/metrics --gpu-ids all\n";

/* The outputs and the history, checked before the run (on rank 0 of a job: it writes them); then
 * the summary's stream, now that --out is known (stderr when --out is standard output). */
typedef struct { sweep_opts *so; bench_opts *b; } sweep_cli;
static ds_result check_outputs(void *ctx) {
    sweep_cli *c = ctx;
    sweep_opts *so = c->so;
    int rc = cli_check_output("--out", so->out_path);
    if (rc == EXIT_OK && !so->out_path) rc = cli_check_default_output("--out", "sweep", "json");
    if (rc == EXIT_OK && so->save_prefix && fileio_is_stdout(so->save_prefix)) {
        log_error("--save-requests takes a file prefix (PREFIX.<level>.<repeat>.jsonl), not -; give a prefix");
        rc = EXIT_USAGE;
    }
    if (rc == EXIT_OK) rc = cli_check_output("--save-requests", so->save_prefix);
    if (rc != EXIT_OK) return DS_EINVAL;
    if (history_opts_check(&c->b->hist) != DS_OK) return DS_EINVAL;
    so->summary = cli_summary_stream();
    return DS_OK;
}

int cmd_sweep(int argc, char **argv) {
    sweep_opts so;
    bench_opts b;
    run_job_quiet_followers();   /* a job's followers: rank 0 reports bad options */
    int rc = sweep_opts_parse(&so, &b, argc, argv, "sweep", usage_text);
    if (rc >= 0) return rc;
    sweep_cli c = { &so, &b };
    ds_result r = sweep_run_job(&so, &b, check_outputs, &c);
    sweep_opts_free(&so, &b);
    return ds_exit_code(r);
}
