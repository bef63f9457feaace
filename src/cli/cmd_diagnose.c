/* cmd_diagnose — `dsperf diagnose FILE`: ranked findings with evidence for a saved results or
 * sweep file, as text or JSON. */
#include "cli/cli.h"
#include "diagnose/diagnose.h"
#include "drift/drift.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/units.h"
#include "model/model.h"
#include "results/results.h"
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
"usage: dsperf diagnose FILE [--model M | --model-config F] [--gpu G --gpus N --tp N] [--weight-dtype D\n"
"                            --kv-dtype D] [--drift FILE] [--json] [--save]\n"
"\n"
"Names the bottleneck of a run from its results (bench, sim) or sweep file, with evidence from\n"
"the file (summary, timeline, client cost, sim engine series, telemetry), a confidence, and the\n"
"settings to change (current value -> suggested). Findings are ranked by what they cost: the\n"
"share of throughput or goodput lost against the roofline, the best level or the plan. Also the\n"
"roofline efficiency: achieved decode tokens/s vs the HBM-bandwidth bound for the deployment,\n"
"batch and context. A rate beyond that bound is physically impossible: it is reported under\n"
"Configuration, naming the assumption to correct, never as a bottleneck.\n"
"\n"
"The deployment (architecture, dtypes, GPU type and count, tp) comes from what the run recorded\n"
"(llama.cpp /props and /v1/models, the served GGUF, the served model id), the sim config and\n"
"NVML telemetry; the \"Deployment\" lines say where each part came from. Flags override:\n"
"  --model NAME        catalog model (deepseek-v3, deepseek-v2, deepseek-v2-lite, ...; HF ids work)\n"
"  --model-config F    the served model's config.json or GGUF file (any architecture)\n"
"  --gpu NAME          catalog GPU (h200, h100, a100-80g, ...)\n"
"  --gpus N            GPUs serving the model\n"
"  --tp N              tensor-parallel size\n"
"  --weight-dtype D    bf16, fp16, fp8, int8, int4 (default: the release's dtype)\n"
"  --kv-dtype D        bf16, fp16, fp8, int8 (default: 16-bit)\n"
"other options:\n"
"  --drift FILE        a dsperf drift result (baseline: the current KV-cache dtype, candidate: the one\n"
"                      advised): a kv_cache_dtype knob then shows what it costs in accuracy by\n"
"                      context; without it the knob says it is untested for accuracy\n"
"  --json              print the diagnosis as JSON\n"
"  --save              also store it in FILE (\"findings\", \"configuration\", \"roofline\",\n"
"                      \"deployment\", \"checked\", written atomically) so `dsperf report` shows it\n"
"\n"
"examples:\n"
"  dsperf diagnose results.json\n"
"  dsperf diagnose sweep.json --json > diagnosis.json\n"
"  dsperf diagnose results.json --model deepseek-v3 --gpu h200 --tp 8 --kv-dtype fp8\n"
"  dsperf diagnose sweep.json --model-config /models/medium.gguf --save && dsperf report sweep.json -o report.html\n";

int cmd_diagnose(int argc, char **argv) {
    static const struct option opts[] = {
        {"model", 1, 0, 'm'}, {"gpu", 1, 0, 'g'}, {"tp", 1, 0, 't'}, {"kv-dtype", 1, 0, 'k'},
        {"model-config", 1, 0, 'c'}, {"gpus", 1, 0, 'n'}, {"weight-dtype", 1, 0, 'w'},
        {"json", 0, 0, 'j'}, {"save", 0, 0, 's'}, {"help", 0, 0, 'h'}, {"drift", 1, 0, 'd'}, {0, 0, 0, 0},
    };
    diagnose_opts o;
    diagnose_default_opts(&o);
    bool as_json = false, save = false;
    const char *drift_path = NULL;
    long long v;
    int c;
    optind = 1;
    opterr = 0;
    cli_option_table("diagnose", opts);   /* DSPERF_OPTION_TABLE: the table, for completion */
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'm':
            if (!model_find(optarg)) { log_error("unknown model '%s' for --model; see dsperf plan --list", optarg); return EXIT_USAGE; }
            o.model = optarg;
            break;
        case 'g':
            if (!hw_find(optarg)) { log_error("unknown GPU '%s' for --gpu; see dsperf plan --list", optarg); return EXIT_USAGE; }
            o.gpu = optarg;
            break;
        case 't':
            if (units_parse_int(optarg, 1, 1024, &v) < 0) { log_error("bad value '%s' for --tp: an integer >= 1", optarg); return EXIT_USAGE; }
            o.tp = (int)v;
            break;
        case 'c': o.model_config = optarg; break;
        case 'n':
            if (units_parse_int(optarg, 1, 4096, &v) < 0) { log_error("bad value '%s' for --gpus: an integer >= 1", optarg); return EXIT_USAGE; }
            o.n_gpus = (int)v;
            break;
        case 'w': {
            model_dtype d;
            if (model_dtype_parse(optarg, DT_BF16, &d) < 0) { log_error("bad value '%s' for --weight-dtype: bf16, fp16, fp8, int8 or int4", optarg); return EXIT_USAGE; }
            o.weight_dtype = optarg;
            break;
        }
        case 'k': {
            model_dtype d;
            if (model_dtype_parse(optarg, DT_BF16, &d) < 0) { log_error("bad value '%s' for --kv-dtype: bf16, fp16, fp8 or int8", optarg); return EXIT_USAGE; }
            o.kv_dtype = optarg;
            break;
        }
        case 'j': as_json = true; break;
        case 'd': drift_path = optarg; break;
        case 's': save = true; break;
        case 'h': fputs(usage_text, stdout); return EXIT_OK;
        default:
            return cli_bad_option("diagnose", opts, argc, argv, optind, optopt);
        }
    }
    if (optind != argc - 1) {
        log_error(optind >= argc ? "give one results or sweep file: dsperf diagnose results.json"
                                 : "one file at a time (got '%s' too)", optind < argc - 1 ? argv[optind + 1] : "");
        return EXIT_USAGE;
    }
    const char *path = argv[optind];
    char err[512];
    static const char *const schemas[] = { "dsperf.results/", "dsperf.sweep/", NULL };
    json_t *doc = results_load_doc(path, schemas, "results or sweep", err, sizeof err);
    if (!doc) {
        log_error("%s", err);
        return EXIT_USAGE;
    }
    json_t *drift = NULL;
    if (drift_path && !(drift = drift_load(drift_path, err, sizeof err))) {
        json_decref(doc);
        log_error("--drift: %s", err);
        return EXIT_USAGE;
    }
    json_t *dg = diagnose_run(doc, &o, err, sizeof err);
    if (!dg) {
        json_decref(doc);
        json_decref(drift);
        log_error("%s: %s", path, err);
        return EXIT_USAGE;
    }
    drift_annotate_findings(dg, drift);   /* a KV-dtype knob says what it costs in accuracy, or that it is untested */
    json_decref(drift);
    int rc = EXIT_OK;
    if (save) {
        static const char *const keys[] = { "findings", "configuration", "roofline", "deployment", "checked" };
        for (int i = 0; i < 5; i++) json_object_set(doc, keys[i], json_object_get(dg, keys[i]));
        /* the diagnosis's warnings and time accounting, under names that leave bench's own "warnings" be */
        if (json_object_get(dg, "warnings")) json_object_set(doc, "diagnosis_warnings", json_object_get(dg, "warnings"));
        if (json_object_get(dg, "time")) json_object_set(doc, "diagnosis_time", json_object_get(dg, "time"));
        if (results_write_json(path, doc, err, sizeof err) < 0) {
            log_error("%s", err);
            rc = EXIT_RUN_FAILED;
        }
    }
    json_decref(doc);
    if (as_json) {
        char *s = json_dumps(dg, JSON_INDENT(1) | JSON_REAL_PRECISION(8));
        if (s) puts(s);
        free(s);
    } else {
        diagnose_print(stdout, dg);
    }
    json_decref(dg);
    return rc;
}
