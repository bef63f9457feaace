/* cmd_compare — `dsperf compare BASELINE CANDIDATE [--gate RULES]`: two results files side by side
 * with statistics, and a pass/fail exit code for CI (0 pass, 1 gate failed, 2 usage). */
#include "cli/cli.h"
#include "compare/compare.h"
#include "results/results.h"
#include "common/log.h"
#include "common/units.h"
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RULES 64
#define MAX_METRICS 64

static void usage(FILE *f) {
    fputs("usage: dsperf compare BASELINE.json CANDIDATE.json [--gate RULES] [options]\n\n"
          "Compares two results files (dsperf bench / dsperf sim, schema dsperf.results/1): each metric with\n"
          "its change, a bootstrap confidence interval of the change computed from the runs' samples, the\n"
          "Mann-Whitney p-value of the distribution, and a verdict (better, worse, no significant change).\n"
          "Latency intervals use every request's sample, stored in each results file, so they are sized by\n"
          "each run's true n (older files' 2,000 quantiles are read as standing for all of it); throughput\n"
          "intervals use the per-second output tokens (runs of at least 7 s), and request_throughput's\n"
          "also the output tokens per request, so the two agree when the lengths do.\n"
          "A metric whose meaning depends on a setting the runs differ in is not compared, and a gate rule\n"
          "on its change fails naming the setting: latencies and throughputs on the workload (model, api,\n"
          "dataset, max_tokens, ignore_eos, length unit) and the load (concurrency, rate, arrival, cap),\n"
          "goodput also on the SLO. Error counts and absolute rules (p99_ttft_ms:<=50) always apply.\n"
          "Two sweeps (dsperf sweep, dsperf.sweep/1) compare their headline numbers (knee_load,\n"
          "knee_output_throughput, peak_output_throughput, max_goodput, max_goodput_load, slo_boundary_load)\n"
          "and every load both ran, level by level; a gate rule on another metric holds at every level.\n\n"
          "Gate rules (comma-separated, --gate may repeat); the exit code is 1 when any rule fails:\n"
          "  METRIC:+X%     fails when METRIC rises by more than X% and the rise is beyond noise\n"
          "  METRIC:-X%     fails when METRIC falls by more than X% and the fall is beyond noise\n"
          "  METRIC:+X / METRIC:-X   the same with an absolute change in the metric's unit\n"
          "  METRIC:X, METRIC:<=X    fails when the candidate's METRIC is above X (errors:0)\n"
          "  METRIC:>=X     fails when the candidate's METRIC is below X\n"
          "  METRIC is any number in the results file (p99_ttft_ms, median_itl_ms, output_throughput,\n"
          "  request_goodput, ...), or errors (failed requests) or error_rate (failed / all).\n"
          "  A partial (interrupted) candidate fails the gate.\n\n"
          "Options:\n"
          "  --gate RULES          rules as above\n"
          "  --class NAME          compare one request class of runs made with bench --class (its own\n"
          "                        summary, samples and SLO) instead of the whole runs\n"
          "  --metrics LIST        metrics to show (default: throughputs, goodput, TTFT, TPOT, ITL, E2EL,\n"
          "                        errors); gated metrics are always shown\n"
          "  --confidence F        of the intervals (default 0.95)\n"
          "  --min-effect P%       a change beyond noise but smaller than P% is called negligible\n"
          "                        (default 1%; gate rules keep their own allowances)\n"
          "  --allow-config-change compare metrics even when the runs' settings differ (the difference is\n"
          "                        the point: a new model, another dataset)\n"
          "  --resamples N         bootstrap rounds of the throughput intervals (default 2000)\n"
          "  --seed N              bootstrap seed (default 1: the same files give the same intervals)\n"
          "  --md                  print Markdown (for a pull-request comment) instead of a table\n"
          "  --out FILE            write the comparison (dsperf.compare/1 JSON) atomically\n"
          "  -h, --help\n\n"
          "Examples:\n"
          "  dsperf compare base.json cand.json\n"
          "  dsperf compare base.json cand.json --gate 'p99_ttft_ms:+10%,output_throughput:-5%,errors:0'\n"
          "  dsperf compare base.json cand.json --gate 'p99_tpot_ms:<=50' --md >> $GITHUB_STEP_SUMMARY\n"
          "  dsperf compare nightly-old.json nightly-new.json --gate 'max_goodput:-5%,p99_ttft_ms:+15%'   (sweeps)\n", f);
}

enum { O_GATE = 1000, O_METRICS, O_CONF, O_RESAMPLES, O_SEED, O_MD, O_OUT, O_MIN_EFFECT, O_CLASS, O_HELP, O_ALLOW };

static const struct option long_opts[] = {
    {"gate", required_argument, 0, O_GATE},
    {"metrics", required_argument, 0, O_METRICS},
    {"confidence", required_argument, 0, O_CONF},
    {"resamples", required_argument, 0, O_RESAMPLES},
    {"seed", required_argument, 0, O_SEED},
    {"md", no_argument, 0, O_MD},
    {"min-effect", required_argument, 0, O_MIN_EFFECT},
    {"class", required_argument, 0, O_CLASS},
    {"out", required_argument, 0, O_OUT},
    {"allow-config-change", no_argument, 0, O_ALLOW},
    {"help", no_argument, 0, O_HELP},
    {0, 0, 0, 0},
};

/* Splits a comma-separated list in place. Returns the count, or -1 when there are too many. */
static int split_list(char *s, const char **out, int max) {
    int n = 0;
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
        while (*tok == ' ') tok++;
        if (!*tok) continue;
        if (n == max) return -1;
        out[n++] = tok;
    }
    return n;
}

/* A new reference to the summary of request class `name` in a results document, or NULL. */
static json_t *class_summary(const json_t *doc, const char *name) {
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(doc, "classes"), i, c) {
        const char *n = json_string_value(json_object_get(c, "class"));
        if (n && !strcmp(n, name)) return json_deep_copy(c);
    }
    return NULL;
}

int cmd_compare(int argc, char **argv) {
    compare_opts o;
    compare_default_opts(&o);
    gate_rule rules[MAX_RULES];
    int n_rules = 0, rc = EXIT_USAGE;
    const char *metrics[MAX_METRICS];
    char *metrics_buf = NULL;
    const char *out_path = NULL;
    bool md = false;
    const char *class_name = NULL;
    json_t *base = NULL, *cand = NULL, *doc = NULL;
    char err[512];
    long long n;
    int c;
    optind = 1;
    opterr = 0;
    cli_option_table("compare", long_opts);   /* DSPERF_OPTION_TABLE: the table, for completion */
    while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        const char *v = optarg;
        switch (c) {
        case 'h': case O_HELP: usage(stdout); rc = EXIT_OK; goto out;
        case O_GATE:
            if (compare_parse_rules(v, rules, MAX_RULES, &n_rules, err, sizeof err) < 0) { log_error("%s", err); goto out; }
            break;
        case O_METRICS:
            free(metrics_buf);
            metrics_buf = strdup(v);
            o.n_metrics = metrics_buf ? split_list(metrics_buf, metrics, MAX_METRICS) : -1;
            if (o.n_metrics <= 0) { log_error("--metrics wants a comma-separated list of up to %d metric names, got '%s'", MAX_METRICS, v); goto out; }
            o.metrics = metrics;
            break;
        case O_CONF:
            if (units_parse_double(v, &o.confidence) < 0 || o.confidence < 0.5 || o.confidence >= 1) {
                log_error("--confidence wants a fraction in [0.5, 1), like 0.95; got '%s'", v);
                goto out;
            }
            break;
        case O_MIN_EFFECT: {
            char buf[32];
            snprintf(buf, sizeof buf, "%s", v);
            size_t l = strlen(buf);
            if (l && buf[l - 1] == '%') buf[l - 1] = 0;
            if (units_parse_double(buf, &o.min_effect_pct) < 0 || o.min_effect_pct < 0 || o.min_effect_pct > 100) {
                log_error("--min-effect wants a percentage like 1%%, got '%s'", v);
                goto out;
            }
            break;
        }
        case O_RESAMPLES:
            if (units_parse_int(v, 100, 1000000, &n) < 0) { log_error("--resamples wants 100..1000000, got '%s'", v); goto out; }
            o.resamples = (int)n;
            break;
        case O_SEED:
            if (units_parse_int(v, 0, INT64_MAX, &n) < 0) { log_error("--seed wants a non-negative integer, got '%s'", v); goto out; }
            o.seed = (uint64_t)n;
            break;
        case O_MD: md = true; break;
        case O_ALLOW: o.allow_config_change = true; break;
        case O_CLASS: class_name = v; break;
        case O_OUT: out_path = v; break;
        default:
            cli_bad_option("compare", long_opts, argc, argv, optind, optopt);
            goto out;
        }
    }
    if (argc - optind != 2) {
        log_error("compare wants two results files, the baseline then the candidate (dsperf compare base.json cand.json)");
        goto out;
    }
    if (cli_check_output("--out", out_path)) goto out;
    o.baseline_path = argv[optind];
    o.candidate_path = argv[optind + 1];
    o.rules = rules;
    o.n_rules = n_rules;
    static const char *const schemas[] = {"dsperf.results/", "dsperf.sweep/", NULL};
    if (!(base = results_load_doc(o.baseline_path, schemas, "results or sweep", err, sizeof err))) { log_error("baseline: %s", err); goto out; }
    if (!(cand = results_load_doc(o.candidate_path, schemas, "results or sweep", err, sizeof err))) { log_error("candidate: %s", err); goto out; }
    bool sweep_b = !strncmp(json_string_value(json_object_get(base, "schema")), "dsperf.sweep/", 13);
    bool sweep_c = !strncmp(json_string_value(json_object_get(cand, "schema")), "dsperf.sweep/", 13);
    if (sweep_b != sweep_c) {
        log_error("compare a results file with a results file, or a sweep with a sweep (the baseline is a %s, the candidate a %s)",
                  sweep_b ? "sweep" : "results file", sweep_c ? "sweep" : "results file");
        goto out;
    }
    if (class_name) {
        if (sweep_b) { log_error("--class compares results files (bench --class), not sweeps"); goto out; }
        json_t *cb = class_summary(base, class_name), *cc = class_summary(cand, class_name);
        if (!cb || !cc) {
            log_error("%s has no request class '%s' (runs made with bench --class list theirs under \"classes\")",
                      !cb ? "the baseline" : "the candidate", class_name);
            goto out;
        }
        /* the class's summary stands in for the run; whole-run facts stay with the run */
        json_object_set(cb, "config", json_object_get(base, "config"));
        json_object_set(cc, "config", json_object_get(cand, "config"));
        json_object_set(cc, "partial", json_object_get(cand, "partial") ? json_object_get(cand, "partial") : json_false());
        json_decref(base);
        json_decref(cand);
        base = cb;
        cand = cc;
    }
    doc = sweep_b ? compare_sweeps(base, cand, &o, err, sizeof err) : compare_runs(base, cand, &o, err, sizeof err);
    if (!doc) { log_error("%s", err); goto out; }
    compare_print(cli_summary_stream(), doc, md);
    if (out_path && results_write_json(out_path, doc, err, sizeof err) < 0) {
        log_error("%s", err);
        rc = EXIT_RUN_FAILED;
        goto out;
    }
    rc = json_is_true(json_object_get(json_object_get(doc, "gate"), "passed")) ? EXIT_OK : EXIT_RUN_FAILED;
out:
    json_decref(base);
    json_decref(cand);
    json_decref(doc);
    free(metrics_buf);
    return rc;
}
