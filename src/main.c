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
    {"trace", cmd_trace, "what a Mooncake-format trace holds: span, lengths, working set, the hit rate it allows"},
    {"env", cmd_env, "check the environment for what skews benchmarks"},
    {"drift", cmd_drift, "accuracy drift between two deployments: top-1 agreement, logprob deltas, KL, delta PPL by context"},
    {"history", cmd_history, "the results history (--db): list, trend, best, compare against history, import, export"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f) {
    fprintf(f, "dsperf %s — load-test, diagnose and tune LLM inference deployments (DeepSeek first)\n\n"
               "usage: dsperf <command> [options]   (dsperf <command> --help for each)\n\ncommands:\n",
            DSPERF_VERSION);
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].what);
    fputs("\nexit codes (one policy for bench, sweep, sim, monitor, compare and tune):\n"
          "  0  done: the run measured what it planned. Warnings (an overloaded server, a client that fell\n"
          "     behind, requests dsperf cancelled itself) are printed and kept in the results, and do not\n"
          "     fail a run.\n"
          "  1  the run failed, after everything measured is written: interrupted (Ctrl-C/SIGTERM: partial\n"
          "     results), no request completed, server-side failures above --max-error-rate (default 1% of\n"
          "     the requests that ended; requests dsperf cancelled itself do not count), an output could not\n"
          "     be written, a sweep level could not be measured (requests outlast it), a monitor run bounded\n"
          "     by --requests/--duration over --max-error-rate (a signal is a monitor's normal end), tune\n"
          "     measured no configuration — or a compare gate failed (a rule beyond its allowance, or on a\n"
          "     metric the runs' settings make incomparable without --allow-config-change)\n"
          "  2  usage error: nothing ran (a bad flag or file, an endpoint that does not answer at the start)\n", f);
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
