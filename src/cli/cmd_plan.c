/* cmd_plan — `dsperf plan`: capacity calculators for a model on a GPU type (memory, KV capacity,
 * roofline step times, batch recommendations, MoE all-to-all), as a table or JSON. */
#include "cli/cli.h"
#include "plan/plan_trace.h"
#include "common/log.h"
#include "common/units.h"
#include "model/model.h"
#include "plan/plan.h"
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
    fprintf(f,
        "usage: dsperf plan [options]\n"
        "Capacity calculators for a DeepSeek model on a GPU type: weights and KV memory per GPU, KV\n"
        "capacity, roofline step times (prefill, decode), decode ceilings, recommended max_num_seqs,\n"
        "adaptive-batch rule for an arrival rate, MoE all-to-all volume.\n\n"
        "  --list                     show the model and GPU catalogs\n"
        "  --json                     JSON instead of the table\n"
        "  --prompt N                 prefill length / prompt tokens (1024)\n"
        "  --output N                 output tokens (128)\n"
        "  --batch B                  decode batch for the step time (64)\n"
        "  --context C                mean decode context (prompt + output/2)\n"
        "  --context-len L            sequence length for \"sequences that fit\" (prompt + output)\n"
        "  --tpot-target DUR          TPOT target for the recommended max_num_seqs (50ms)\n"
        "  --rate R/s                 arrival rate for the adaptive-batch rule\n"
        "  --p99-target DUR           P99 TPOT target for that rule (= --tpot-target)\n"
        "  --trace FILE               a Mooncake trace: the KV an LRU prefix cache needs for --hit-rate on it,\n"
        "                             against this deployment's KV (--block-size N: tokens per hash id, 512)\n"
        "  --hit-rate H               prefix-cache hit rate to size for (0.4 or 40%%; default the trace's bound)\n"
        "Target (shared with dsperf sim):\n%s\n"
        "What is modelled, and how well (dsperf sim --validate data/published.json; src/engine/README-sim.md):\n"
        "  engines   vllm-v0, vllm-v1, sglang-2024, sglang-v0.4, sglang, trtllm, lmdeploy, llamacpp, deepseek:\n"
        "            CUDA graphs or eager launches, kernels per layer, scheduler cost and overlap, MLA or expanded\n"
        "            K/V, prefill-first or mixed steps, admission reserve, MoE and MLA kernel families\n"
        "  GPUs      A100 40/80, H100, H800, H200, H20, B200, GB200 (NVL72), L40S, MI300X, RTX 3090/4080/4090/5090\n"
        "  features  TP, EP, DP attention, DeepEP (published latency tables), two-batch overlap, EPLB, MTP, PD\n"
        "            disaggregation (dsperf sim), prefix caching (dsperf sim), fp8 / NVFP4 / GGUF q4 weights, fp8 KV\n"
        "  accuracy  71 published deployments (data/published.json), each predicted by a fit without its\n"
        "            group (`dsperf sim --validate`), one value per row: TPOT median 10.3%%, per-GPU output\n"
        "            throughput 11.1%%, TTFT 31%%; the 80%% intervals held 81%% of the published values\n"
        "            (src/engine/README-sim.md, Accuracy). The plan's step times are the simulator's, so they\n"
        "            carry the same error\n\n"
        "examples:\n"
        "  dsperf plan --list\n"
        "  dsperf plan --model deepseek-v3 --gpu h200 --tp 8 --kv-dtype fp8\n"
        "  dsperf plan --model deepseek-v2-lite --gpu h100 --batch 128 --rate 20/s --p99-target 40ms --json\n",
        sim_params_help());
}

enum { OPT_LIST = 1000, OPT_JSON, OPT_PROMPT, OPT_OUTPUT, OPT_BATCH, OPT_CONTEXT, OPT_CONTEXT_LEN, OPT_TPOT,
       OPT_RATE, OPT_P99, OPT_HELP, OPT_TRACE, OPT_HIT_RATE, OPT_TRACE_BLOCK, OPT_SIM = 2000 };

int cmd_plan(int argc, char **argv) {
    static const struct option own[] = {
        {"list", no_argument, 0, OPT_LIST}, {"json", no_argument, 0, OPT_JSON},
        {"prompt", required_argument, 0, OPT_PROMPT}, {"input-len", required_argument, 0, OPT_PROMPT},
        {"output", required_argument, 0, OPT_OUTPUT}, {"output-len", required_argument, 0, OPT_OUTPUT},
        {"batch", required_argument, 0, OPT_BATCH}, {"context", required_argument, 0, OPT_CONTEXT},
        {"context-len", required_argument, 0, OPT_CONTEXT_LEN}, {"tpot-target", required_argument, 0, OPT_TPOT},
        {"rate", required_argument, 0, OPT_RATE}, {"p99-target", required_argument, 0, OPT_P99},
        {"help", no_argument, 0, OPT_HELP}, {"trace", required_argument, 0, OPT_TRACE},
        {"hit-rate", required_argument, 0, OPT_HIT_RATE}, {"block-size", required_argument, 0, OPT_TRACE_BLOCK},
    };
    plan_trace_opts pt = { .hit_rate = -1 };
    const char *const *keys = sim_params_keys();
    struct option *opts = cli_options_with_keys(own, sizeof own / sizeof own[0], keys, OPT_SIM);
    if (!opts) return EXIT_RUN_FAILED;
    plan_inputs in;
    plan_default_inputs(&in);
    int list = 0, json = 0, rc = EXIT_OK, c, idx = 0;
    char err[512];
    long long v;
    int64_t ns;
    optind = 1;
    opterr = 0;
    cli_option_table("plan", opts);   /* DSPERF_OPTION_TABLE: the table, for completion */
    while ((c = getopt_long(argc, argv, "", opts, &idx)) != -1) {
        const char *name = c >= OPT_SIM ? keys[c - OPT_SIM] : NULL;
        int bad = 0;
        switch (c) {
        case OPT_LIST: list = 1; break;
        case OPT_JSON: json = 1; break;
        case OPT_HELP: usage(stdout); free(opts); return EXIT_OK;
        case OPT_PROMPT: bad = units_parse_int(optarg, 1, 1 << 24, &v); in.prompt_tokens = (int)v; break;
        case OPT_OUTPUT: bad = units_parse_int(optarg, 1, 1 << 24, &v); in.output_tokens = (int)v; break;
        case OPT_BATCH: bad = units_parse_int(optarg, 1, 1 << 24, &v); in.batch = (int)v; break;
        case OPT_CONTEXT: bad = units_parse_double(optarg, &in.context) || in.context < 0; break;
        case OPT_CONTEXT_LEN: bad = units_parse_int(optarg, 1, 1 << 24, &v); in.context_len = (int)v; break;
        case OPT_TPOT: bad = units_parse_duration_ns(optarg, &ns) || ns <= 0; in.tpot_target_s = ns / 1e9; break;
        case OPT_P99: bad = units_parse_duration_ns(optarg, &ns) || ns <= 0; in.p99_target_s = ns / 1e9; break;
        case OPT_RATE: bad = units_parse_rate_per_s(optarg, &in.rate_per_s); break;
        case OPT_TRACE: pt.path = optarg; break;
        case OPT_TRACE_BLOCK: bad = units_parse_int(optarg, 1, 1 << 20, &v); pt.block_tokens = (int32_t)v; break;
        case OPT_HIT_RATE: {
            size_t n = strlen(optarg);
            bad = units_parse_double(optarg, &pt.hit_rate);
            if (bad && n && optarg[n - 1] == '%') {   /* "40%" */
                char tmp[64];
                snprintf(tmp, sizeof tmp, "%.*s", (int)(n - 1), optarg);
                bad = units_parse_double(tmp, &pt.hit_rate);
                pt.hit_rate /= 100;
            }
            bad = bad || !(pt.hit_rate > 0 && pt.hit_rate <= 1);
            break;
        }
        case '?':
            cli_bad_option("plan", opts, argc, argv, optind, optopt);
            free(opts);
            return EXIT_USAGE;
        default:
            if (name && sim_params_set(&in.target, name, optarg, err, sizeof err) != 0) {
                log_error("plan: %s", err);
                free(opts);
                return EXIT_USAGE;
            }
        }
        if (bad) {
            log_error("plan: bad value '%s' for --%s; see dsperf plan --help", optarg, opts[idx].name);
            free(opts);
            return EXIT_USAGE;
        }
    }
    free(opts);
    if (optind < argc) {
        log_error("plan: unexpected argument '%s'", argv[optind]);
        return EXIT_USAGE;
    }
    if (list) {
        model_print_catalogs(stdout);
        return EXIT_OK;
    }
    plan_result r;
    if (plan_compute(&in, &r, err, sizeof err) < 0) {
        log_error("plan: %s", err);
        return EXIT_USAGE;
    }
    if (pt.hit_rate >= 0 && !pt.path) { log_error("plan: --hit-rate sizes the KV for a trace: add --trace FILE"); return EXIT_USAGE; }
    if (json) {
        json_t *o = plan_to_json(&in, &r);
        if (pt.path && o && plan_trace_report(&pt, &r, NULL, o, err, sizeof err) < 0) {
            log_error("plan: %s", err);
            json_decref(o);
            return EXIT_USAGE;
        }
        char *s = o ? json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) : NULL;
        if (!s) { json_decref(o); log_error("plan: out of memory"); return EXIT_RUN_FAILED; }
        puts(s);
        free(s);
        json_decref(o);
    } else {
        plan_print(stdout, &in, &r);
        if (pt.path && plan_trace_report(&pt, &r, stdout, NULL, err, sizeof err) < 0) { log_error("plan: %s", err); return EXIT_USAGE; }
    }
    return rc;
}
