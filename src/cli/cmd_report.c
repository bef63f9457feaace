/* cmd_report — `dsperf report`: turns a saved results or sweep file into a self-contained HTML
 * page (and optionally Markdown and CSV). Every output is built in memory and written atomically,
 * so a failed run never leaves half a report behind. */
#include "cli/cli.h"
#include "metrics/metric_table.h"
#include "sweep/context.h"
#include "sweep/stability.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/units.h"
#include "report/report.h"
#include "history/history.h"
#include "run/history_opts.h"
#include "common/redact.h"
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
    fputs("usage: dsperf report IN.json [-o report.html] [--md FILE] [--csv FILE] [--save-requests FILE.jsonl] [--title T]\n"
          "       dsperf report --db PATH [--query Q] [--metric M]... [-o trend.html] [--md FILE] [--csv FILE]\n"
          "Builds a report from a results file (dsperf bench / dsperf sim, schema dsperf.results/1) or a sweep\n"
          "file (dsperf sweep, schema dsperf.sweep/1): one self-contained HTML page with inline SVG charts\n"
          "(no network, no scripts; light/dark; prints to PDF): verdict, findings from the diagnosis,\n"
          "saturation curve with the knee, latency vs throughput, per-load table, percentile plots,\n"
          "time-aligned run view with telemetry, errors, and the command to reproduce. A tune file (dsperf tune,\n"
          "schema dsperf.tune/1) gets the recommendation, the Pareto chart and the configurations table\n"
          "(Markdown and CSV too: one CSV row per configuration and load). A drift file (dsperf drift, schema\n"
          "dsperf.drift/1) gets top-1 agreement, delta PPL and KL against context length with the noise floor,\n"
          "the per-context table and the gate (CSV: one row per context).\n\n"
          "Options:\n"
          "  -o, --out FILE       HTML report (default report.html when no other output is asked for)\n"
          "  --md FILE            Markdown summary (verdict, findings, table, errors); '-' for stdout\n"
          "  --csv FILE           CSV, one row per load level (one row for a single run); '-' for stdout\n"
          "  --save-requests FILE per-request JSONL of the same run (what bench or sim wrote with --save-requests):\n"
          "                       exact percentile curves, a TTFT-over-time scatter, a request Gantt and the\n"
          "                       first error message per class; without it the curves are drawn from the\n"
          "                       percentiles stored in the results (single-run documents only)\n"
          "  --title T            page title (default: from the document)\n"
          "  --diagnosis FILE     findings from `dsperf diagnose --json` instead of diagnosing here\n"
          "  --model M, --gpu G, --tp N, --kv-dtype D\n"
          "                       the deployment, for the diagnosis's roofline when the file does not say\n"
          "                       (as in dsperf diagnose)\n"
          "  --db PATH            instead of a file: the results history's trend page (dsperf history): each\n"
          "                       metric over the comparable runs with their noise bands and change points\n"
          "  --query Q            which runs (dsperf history's query terms, e.g. 'label:branch=main since:30d')\n"
          "  --metric M           a metric to draw (repeatable; default p99_ttft_ms, p99_tpot_ms,\n"
          "                       output_throughput, or for sweeps knee_load, max_goodput, peak_output_throughput,\n"
          "                       or for drift runs top1_agreement, delta_ppl, kl)\n"
          "  -h, --help\n\n"
          "Examples:\n"
          "  dsperf sim --concurrency 32 --out run.json --save-requests run.jsonl\n"
          "  dsperf report run.json -o run.html --save-requests run.jsonl\n"
          "  dsperf report sweep.json -o sweep.html --md sweep.md --csv sweep.csv --gpu h200\n"
          "  dsperf report tune.json -o tune.html\n"
          "  dsperf report drift.json -o drift.html --csv drift.csv\n"
          "  dsperf report --db perf.db --query 'label:branch=main' --metric p99_ttft_ms -o trend.html\n", f);
}

typedef int (*writer_fn)(FILE *f, const json_t *doc, const report_opts *o, char *err, size_t errlen);

static int csv_writer(FILE *f, const json_t *doc, const report_opts *o, char *err, size_t errlen) {
    (void)o;
    return report_write_csv(f, doc, err, errlen);
}

/* Builds one output in memory, then writes it atomically (or to stdout for "-"). */
static int emit(const char *path, writer_fn w, const json_t *doc, const report_opts *o) {
    char *buf = NULL;
    size_t len = 0;
    char err[512] = "";
    FILE *mem = open_memstream(&buf, &len);
    if (!mem) { log_error("report: out of memory"); return EXIT_RUN_FAILED; }
    int rc = w(mem, doc, o, err, sizeof err);
    if (fclose(mem) != 0 && rc == 0) { rc = -1; snprintf(err, sizeof err, "out of memory"); }
    if (rc != 0) {
        log_error("report: %s", err);
        free(buf);
        return EXIT_RUN_FAILED;
    }
    rc = fileio_write_atomic(path, buf, len);    /* "-" is standard output */
    int e = errno;
    free(buf);
    if (rc != 0) {
        log_error("report: cannot write %s: %s", fileio_display(path), strerror(e));
        return EXIT_RUN_FAILED;
    }
    if (strcmp(path, "-") != 0) log_info("report written to %s", path);
    return EXIT_OK;
}

enum { OPT_MD = 256, OPT_CSV, OPT_REQUESTS, OPT_TITLE, OPT_DIAG, OPT_MODEL, OPT_GPU, OPT_TP, OPT_KV, OPT_DB, OPT_QUERY, OPT_METRIC };

#define MAX_TREND_METRICS 16

static int trend_html(FILE *f, const json_t *doc, const report_opts *o, char *err, size_t errlen) { return report_trend_html(f, doc, o, err, errlen); }
static int trend_md(FILE *f, const json_t *doc, const report_opts *o, char *err, size_t errlen) { (void)o; return report_trend_markdown(f, doc, err, errlen); }
static int trend_csv(FILE *f, const json_t *doc, const report_opts *o, char *err, size_t errlen) { (void)o; return report_trend_csv(f, doc, err, errlen); }

/* `dsperf report --db PATH [--query Q] [--metric M]...`: the history's trend page. Without
 * --metric: p99 TTFT, p99 TPOT and output throughput, or for sweeps the knee, max goodput and
 * peak throughput (whichever the runs have). */
static int report_history(const char *db, const char *query, const char *const *metrics, int n_metrics, const char *out,
                          const char *md, const char *csv, report_opts *ro) {
    char err[1024];
    history *h;
    history_opts_register_kinds();   /* which way is better for every kind's metrics */
    if (history_open(db, HISTORY_READ, &h, err, sizeof err) < 0) { log_error("report: %s", err); return EXIT_USAGE; }
    static const char *const defaults[3][3] = {
        {METRIC(p99_ttft_ms), METRIC(p99_tpot_ms), METRIC(output_throughput)}, {METRIC(knee_load), METRIC(max_goodput), METRIC(peak_output_throughput)},
        {"top1_agreement", "delta_ppl", "kl"},
    };
    json_t *trends = json_array();
    char first_err[1024] = "";
    for (int pass = 0; pass < (n_metrics ? 1 : 3) && !json_array_size(trends); pass++) {
        const char *const *list = n_metrics ? metrics : defaults[pass];
        int n = n_metrics ? n_metrics : 3;
        for (int i = 0; i < n; i++) {
            history_trend_opts to;
            history_trend_default_opts(&to);
            to.query = query;
            to.show_last = 0;   /* the page draws every run */
            json_t *t = history_trend(h, list[i], &to, err, sizeof err);
            if (t) json_array_append_new(trends, t);
            else if (!first_err[0]) snprintf(first_err, sizeof first_err, "%s", err);
            else if (n_metrics) log_warn("report: %s", err);
        }
    }
    history_close(h);
    int rc = EXIT_OK;
    if (!json_array_size(trends)) { log_error("report: %s", first_err); rc = EXIT_USAGE; }
    ro->source_name = db;
    if (rc == EXIT_OK && out) rc = emit(out, trend_html, trends, ro);
    if (rc == EXIT_OK && md) rc = emit(md, trend_md, trends, ro);
    if (rc == EXIT_OK && csv) rc = emit(csv, trend_csv, trends, ro);
    json_decref(trends);
    return rc;
}

/* A saved diagnosis: an object with a "findings" array. NULL with err. */
static json_t *load_diagnosis(const char *path, char *err, size_t errlen) {
    json_error_t je;
    json_t *d = json_load_file(path, 0, &je);
    if (!d) {
        snprintf(err, errlen, "%s: %s (line %d)", path, je.text, je.line);
        return NULL;
    }
    if (!json_is_array(json_object_get(d, "findings"))) {
        snprintf(err, errlen, "%s: not a diagnosis (no \"findings\" array; make it with dsperf diagnose --json)", path);
        json_decref(d);
        return NULL;
    }
    return d;
}

int cmd_report(int argc, char **argv) {
    static const struct option opts[] = {
        {"out", required_argument, 0, 'o'}, {"md", required_argument, 0, OPT_MD},
        {"csv", required_argument, 0, OPT_CSV}, {"save-requests", required_argument, 0, OPT_REQUESTS},
        {"title", required_argument, 0, OPT_TITLE}, {"diagnosis", required_argument, 0, OPT_DIAG},
        {"model", required_argument, 0, OPT_MODEL}, {"gpu", required_argument, 0, OPT_GPU},
        {"tp", required_argument, 0, OPT_TP}, {"kv-dtype", required_argument, 0, OPT_KV},
        {"db", required_argument, 0, OPT_DB}, {"query", required_argument, 0, OPT_QUERY},
        {"metric", required_argument, 0, OPT_METRIC},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
    };
    const char *db = NULL, *query = "";
    const char *metrics[MAX_TREND_METRICS];
    int n_metrics = 0;
    const char *out = NULL, *md = NULL, *csv = NULL, *requests = NULL, *diag_path = NULL;
    report_deploy deploy = { 0 };
    long long tp;
    report_opts ro;
    report_default_opts(&ro);
    int c, idx;
    optind = 1;
    opterr = 0;
    cli_option_table("report", opts);   /* DSPERF_OPTION_TABLE: the table, for completion */
    while ((c = getopt_long(argc, argv, "o:h", opts, &idx)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case OPT_MD: md = optarg; break;
        case OPT_CSV: csv = optarg; break;
        case OPT_REQUESTS: requests = optarg; break;
        case OPT_TITLE: ro.title = optarg; break;
        case OPT_DIAG: diag_path = optarg; break;
        case OPT_MODEL: deploy.model = optarg; break;
        case OPT_GPU: deploy.gpu = optarg; break;
        case OPT_KV: deploy.kv_dtype = optarg; break;
        case OPT_TP:
            if (units_parse_int(optarg, 1, 1024, &tp) != 0) {
                log_error("report: bad value '%s' for --tp (a GPU count, 1..1024)", optarg);
                return EXIT_USAGE;
            }
            deploy.tp = (int)tp;
            break;
        case OPT_DB: db = optarg; break;
        case OPT_QUERY: query = optarg; break;
        case OPT_METRIC:
            if (n_metrics == MAX_TREND_METRICS) { log_error("report: at most %d --metric", MAX_TREND_METRICS); return EXIT_USAGE; }
            metrics[n_metrics++] = optarg;
            break;
        case 'h': usage(stdout); return EXIT_OK;
        default:
            return cli_bad_option("report", opts, argc, argv, optind, optopt);
        }
    }
    if (db) {
        if (optind != argc) { log_error("report: --db draws the history's trends; give no input file with it"); return EXIT_USAGE; }
        if (!out && !md && !csv) out = "trend.html";
        if (cli_check_output("-o", out) || cli_check_output("--md", md) || cli_check_output("--csv", csv)) return EXIT_USAGE;
        return report_history(db, query, metrics, n_metrics, out, md, csv, &ro);
    }
    if (query[0] || n_metrics) { log_error("report: --query and --metric go with --db (the results history)"); return EXIT_USAGE; }
    if (optind != argc - 1) {
        log_error(optind >= argc ? "report: which file? usage: dsperf report IN.json -o report.html"
                                 : "report: one input file expected; see dsperf report --help");
        return EXIT_USAGE;
    }
    const char *in = argv[optind];
    if (!out && !md && !csv) out = "report.html";
    if (cli_check_output("-o", out) || cli_check_output("--md", md) || cli_check_output("--csv", csv)) return EXIT_USAGE;
    char err[512];
    json_t *doc = report_load(in, err, sizeof err);
    redact_json_tree(doc);   /* a document saved before redaction existed still reports no credential */
    if (!doc) {
        log_error("report: %s", err);
        return EXIT_USAGE;
    }
    report_requests *rq = NULL;
    const char *schema = json_string_value(json_object_get(doc, "schema"));
    if (schema && !strncmp(schema, "dsperf.sweep/", 13)) {
        /* the long-context and stability views are functions of the levels: a file written before
         * them gets them here, and deployment flags add the roofline beside the measurement */
        deploy_flags fl = { .model = deploy.model, .gpu = deploy.gpu, .kv_dtype = deploy.kv_dtype, .tp = deploy.tp };
        bool flags = deploy.model || deploy.gpu || deploy.kv_dtype || deploy.tp;
        if (flags || !json_object_get(doc, "context")) sweep_context_analyse(doc, flags ? &fl : NULL);
        if (!json_object_get(doc, "stability")) {
            stab_score sc = STAB_ITL_CV;
            const char *name = json_string_value(json_object_get(json_object_get(doc, "config"), "stability_score"));
            if (name) stability_parse_score(name, &sc);
            sweep_stability_analyse(doc, sc);
        }
    }
    if (requests && schema && !strncmp(schema, "dsperf.sweep/", 13)) {
        /* a sweep has one request file per level (sweep --save-requests PREFIX): none stands for all */
        log_warn("report: --save-requests is for single-run documents; ignored for the sweep %s", in);
        requests = NULL;
    }
    if (requests) {
        rq = report_requests_load(requests, err, sizeof err);
        if (!rq) {
            log_error("report: %s", err);
            json_decref(doc);
            return EXIT_USAGE;
        }
    }
    json_t *diag = NULL;
    if (diag_path) {
        diag = load_diagnosis(diag_path, err, sizeof err);
        if (!diag) {
            log_error("report: %s", err);
            report_requests_free(rq);
            json_decref(doc);
            return EXIT_USAGE;
        }
    } else {
        diag = report_diagnosis(doc, &deploy);
    }
    ro.requests = rq;
    ro.diagnosis = diag;
    ro.source_name = in;
    int rc = EXIT_OK;
    if (out) rc = emit(out, report_write_html, doc, &ro);
    if (rc == EXIT_OK && md) rc = emit(md, report_write_markdown, doc, &ro);
    if (rc == EXIT_OK && csv) rc = emit(csv, csv_writer, doc, &ro);
    json_decref(diag);
    report_requests_free(rq);
    json_decref(doc);
    return rc;
}
