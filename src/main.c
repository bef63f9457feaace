/* main — dispatches `dsperf <command>` to the command's front-end in src/cli/. */
#include "cli/cli.h"
#include "common/log.h"
#include "common/redact.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>


static const struct { const char *name; cmd_fn fn; const char *what; } commands[] = {
    {"bench", cmd_bench, "load-test one endpoint with one load setting; summary + results JSON"},
    {"sweep", cmd_sweep, "bench over a ladder of loads; find the knee and max goodput"},
    {"serve", cmd_serve, "built-in OpenAI-compatible streaming server: known timing and faults, or the simulated engine"},
    {"sim", cmd_sim, "the simulated DeepSeek engine offline, for capacity planning"},
    {"plan", cmd_plan, "calculators: weights/KV memory, KV capacity, roofline step times, max batch"},
    {"diagnose", cmd_diagnose, "name the bottleneck of a run, with evidence and knobs to turn"},
    {"report", cmd_report, "HTML / Markdown / CSV report from results"},
    {"compare", cmd_compare, "baseline vs candidate with statistics; --gate for CI"},
    {"tune", cmd_tune, "search server settings; Pareto front and recommendation"},
    {"gpu", cmd_gpu, "GPU telemetry (NVML + GPM), dmon-like; Prometheus exporter"},
    {"monitor", cmd_monitor, "continuous probing of a live endpoint + Prometheus exporter"},
    {"tokenize", cmd_tokenize, "encode/count/decode with a tokenizer.json or GGUF vocab"},
    {"env", cmd_env, "check the environment for what skews benchmarks"},
    {"history", cmd_history, "the results history (--db): list, trend, best, compare against history, import, export"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f) {
    fprintf(f, "dsperf %s — load-test, diagnose and tune LLM inference deployments (DeepSeek first)\n\n"
               "usage: dsperf <command> [options]   (dsperf <command> --help for each)\n\ncommands:\n",
            DSPERF_VERSION);
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].what);
    fprintf(f, "\nexit codes: 0 ok, 1 the run failed (or was interrupted: partial results) or a gate failed, 2 usage error\n");
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : EXIT_OK;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("dsperf %s\n", DSPERF_VERSION);
        return EXIT_OK;
    }
    free(redact_command_line(argc, argv));   /* from here on, a credential on the command line is masked wherever it appears */
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    log_error("unknown command '%s'; run 'dsperf --help' for the list", argv[1]);
    return EXIT_USAGE;
}
