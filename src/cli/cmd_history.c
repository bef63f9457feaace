/* cmd_history — `dsperf history`: the results history (src/history/) from the command line:
 * list, show, trend, best, compare (a CI gate against history), import, export (llm-d BR0.2) and
 * check. The database is --db PATH or $DSPERF_DB. */
#include "cli/cli.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/units.h"
#include "history/history.h"
#include "run/history_opts.h"
#include "results/results.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
"usage: dsperf history [--db PATH] COMMAND [QUERY...] [options]\n"
"\n"
"The results history: every run recorded with --db PATH (bench, sweep, sim, tune, monitor, drift)\n"
"or imported, in one SQLite file (default $DSPERF_DB). Runs are comparable when their configuration\n"
"hash is the same (model, dataset shape, load plan, SLO); queries keep the runs of the most recent\n"
"match's configuration and say what they left out, unless they say config:any.\n"
"\n"
"commands:\n"
"  list [QUERY]              runs, newest last (--limit N, default 50; 0 all; --json; --wide)\n"
"  show RUN [--doc]          one run (an id, latest, or a query matching one run): identity, labels,\n"
"                            configuration, metrics with their bands;\n"
"                            --doc prints the stored document (a results file again)\n"
"  trend METRIC [QUERY]      the metric over comparable runs, each with its 95% band from its own\n"
"                            samples, and the change points, each tested as compare tests two runs\n"
"                            (--rows N printed, default 30; --min-runs N per side, default 2; --window N\n"
"                            runs pooled per side, default 5; --min-effect P%; --json)\n"
"  best METRIC [QUERY]       leaderboard among comparable runs (--top N, default 10; --json)\n"
"  compare [BASE CAND]       the candidate (default latest) against a baseline from history, with\n"
"                            dsperf compare's statistics and gate: --baseline QUERY --candidate QUERY,\n"
"                            --gate RULES, --md, --out FILE, --metrics, --confidence, --resamples,\n"
"                            --seed, --min-effect; several runs on a side are pooled. The baseline is\n"
"                            taken among runs recorded before the candidate with its configuration.\n"
"                            Results runs and sweeps only (a drift run's metrics: trend, best)\n"
"                            --no-baseline-ok: an empty baseline (a pipeline's first run) passes\n"
"  import FILE...            dsperf results/sweep/tune/drift files and vLLM benchmark JSONs (--label k=v)\n"
"  export RUN                llm-d Benchmark Report v0.2 JSON (a sweep: one per level) (-o FILE)\n"
"  check                     PRAGMA integrity_check of the whole database\n"
"\n"
"QUERY terms (all must hold): N, A..B, latest, last:N, model:GLOB, endpoint:GLOB, engine:GLOB,\n"
"  gpu:GLOB, host:GLOB, kind:GLOB, producer:GLOB, version:GLOB, label:KEY=GLOB, label:KEY,\n"
"  since:DATE|7d|12h|30m, until:DATE (UTC, 2026-01-31[T12:00]), config:HASH, config:any, partial:yes|no\n"
"\n"
"Exit codes: 0 ok (compare: gate passed), 1 gate failed or the database is damaged, 2 usage.\n"
"\n"
"examples:\n"
"  dsperf bench --url $URL --concurrency 32 --duration 60s --db perf.db --label release=v0.9.1\n"
"  dsperf history --db perf.db list model:deepseek* label:release=v0.9.*\n"
"  dsperf history --db perf.db trend p99_ttft_ms label:branch=main\n"
"  dsperf history --db perf.db best max_goodput kind:sweep\n"
"  dsperf history --db perf.db trend top1_agreement kind:drift   # a KV-dtype change's accuracy cost\n"
"  dsperf history --db perf.db compare --baseline 'label:branch=main last:5' --candidate latest \\\n"
"                 --gate 'p99_ttft_ms:+10%,output_throughput:-5%,errors:0'\n"
"  dsperf history --db perf.db import old/*.json vllm-results.json --label source=archive\n"
"  dsperf history --db perf.db export 41 -o run41.br.json\n";

#define MAX_ARGS 256
#define MAX_RULES 64

typedef struct {
    const char *db, *out, *baseline, *candidate, *format, *metrics_spec;
    const char *pos[MAX_ARGS];
    int n_pos;
    const char *labels[HISTORY_MAX_LABELS];
    int n_labels;
    long long limit, last, top, min_runs, window;
    bool json, wide, doc, md, no_baseline_ok;
    compare_opts co;
    gate_rule rules[MAX_RULES];
    int n_rules;
    double min_effect;
} hargs;

static int usage_error(const char *fmt, const char *a) {
    char msg[512];
    snprintf(msg, sizeof msg, fmt, a);
    log_error("%s (see dsperf history --help)", msg);
    return EXIT_USAGE;
}

static int parse(hargs *a, int argc, char **argv) {
    memset(a, 0, sizeof *a);
    a->db = getenv("DSPERF_DB");
    a->limit = 50;
    a->last = 30;
    a->top = 10;
    a->min_runs = 2;
    a->window = 5;
    a->min_effect = 1.0;
    compare_default_opts(&a->co);
    char err[512];
    for (int i = 1; i < argc; i++) {
        cli_word w;
        cli_word_init(&w, argv[i]);
        const char *v = NULL;
#define IS(n) cli_word_is(&w, n)
#define VAL() ((v = cli_word_value(&w, argc, argv, &i)) ? v : (usage_error("%s needs a value", argv[i]), (const char *)NULL))
        long long n;
        if (IS("--help") || IS("-h")) { fputs(usage_text, stdout); return EXIT_OK; }
        else if (IS("--db")) { if (!VAL()) return EXIT_USAGE; a->db = v; }
        else if (IS("--json")) a->json = true;
        else if (IS("--wide")) a->wide = true;
        else if (IS("--doc")) a->doc = true;
        else if (IS("--md")) a->md = true;
        else if (IS("--no-baseline-ok")) a->no_baseline_ok = true;
        else if (IS("--out") || IS("-o")) { if (!VAL()) return EXIT_USAGE; a->out = v; }
        else if (IS("--baseline")) { if (!VAL()) return EXIT_USAGE; a->baseline = v; }
        else if (IS("--candidate")) { if (!VAL()) return EXIT_USAGE; a->candidate = v; }
        else if (IS("--format")) { if (!VAL()) return EXIT_USAGE; a->format = v; }
        else if (IS("--metrics")) { if (!VAL()) return EXIT_USAGE; a->metrics_spec = v; }
        else if (IS("--label")) {
            if (!VAL()) return EXIT_USAGE;
            if (history_check_label(v, err, sizeof err) < 0) { log_error("%s", err); return EXIT_USAGE; }
            if (a->n_labels == HISTORY_MAX_LABELS) return usage_error("at most %s labels", "32");
            a->labels[a->n_labels++] = v;
        } else if (IS("--gate")) {
            if (!VAL()) return EXIT_USAGE;
            if (compare_parse_rules(v, a->rules, MAX_RULES, &a->n_rules, err, sizeof err) < 0) { log_error("%s", err); return EXIT_USAGE; }
        } else if (IS("--limit") || IS("--rows") || IS("--top") || IS("--min-runs") || IS("--window") || IS("--resamples") || IS("--seed")) {
            const char *name = argv[i];
            bool lim = IS("--limit"), last = IS("--rows"), top = IS("--top"), mr = IS("--min-runs"), win = IS("--window"), rs = IS("--resamples");
            if (!VAL()) return EXIT_USAGE;
            long long lo = rs ? 100 : (mr || win) ? 1 : 0, hi = rs ? 1000000 : INT64_MAX;
            if (units_parse_int(v, lo, hi, &n) < 0) { log_error("bad value '%s' for %s: an integer >= %lld", v, name, lo); return EXIT_USAGE; }
            if (lim) a->limit = n; else if (last) a->last = n; else if (top) a->top = n;
            else if (mr) a->min_runs = n; else if (win) a->window = n; else if (rs) a->co.resamples = (int)n;
            else a->co.seed = (uint64_t)n;
        } else if (IS("--confidence")) {
            if (!VAL()) return EXIT_USAGE;
            if (units_parse_double(v, &a->co.confidence) < 0 || a->co.confidence < 0.5 || a->co.confidence >= 1)
                return usage_error("--confidence wants a fraction in [0.5, 1), like 0.95; got '%s'", v);
        } else if (IS("--min-effect")) {
            if (!VAL()) return EXIT_USAGE;
            char buf[32];
            snprintf(buf, sizeof buf, "%s", v);
            size_t l = strlen(buf);
            if (l && buf[l - 1] == '%') buf[l - 1] = 0;
            if (units_parse_double(buf, &a->min_effect) < 0 || a->min_effect < 0 || a->min_effect > 100)
                return usage_error("--min-effect wants a percentage like 1%%, got '%s'", v);
            a->co.min_effect_pct = a->min_effect;
        } else if (argv[i][0] == '-' && argv[i][1] && !(argv[i][1] >= '0' && argv[i][1] <= '9')) {
            return usage_error("unknown option '%s'", argv[i]);
        } else {
            if (a->n_pos == MAX_ARGS) return usage_error("too many arguments (at most %s)", "256");
            a->pos[a->n_pos++] = argv[i];
        }
#undef IS
#undef VAL
    }
    if (!a->n_pos) { log_error("history wants a command: list, show, trend, best, compare, import, export or check (see dsperf history --help)"); return EXIT_USAGE; }
    if (!a->db || !*a->db) { log_error("history wants a database: --db PATH or DSPERF_DB=PATH (the file runs were recorded to with --db)"); return EXIT_USAGE; }
    return -1;
}

/* Positional words from `from` on, joined with spaces (a query written as several arguments). */
static char *join_from(const hargs *a, int from) {
    size_t len = 1;
    for (int i = from; i < a->n_pos; i++) len += strlen(a->pos[i]) + 1;
    char *s = calloc(1, len);
    for (int i = from; s && i < a->n_pos; i++) {
        if (i > from) strcat(s, " ");
        strcat(s, a->pos[i]);
    }
    return s;
}

static int parse_run_id(const char *s, int64_t *id) {
    long long v;
    if (units_parse_int(s, 1, INT64_MAX, &v) < 0) return -1;
    *id = v;
    return 0;
}

/* One run for show/export: an id, or a query that matches exactly one run ("latest", "last:1",
 * "label:tag=v1.2"). 0, or -1 after one line saying what matched. */
static int one_run(history *h, const char *cmd, const char *word, int64_t *id) {
    if (parse_run_id(word, id) == 0) return 0;
    history_ids ids = {0};
    char err[512];
    if (history_select(h, word, &ids, err, sizeof err) < 0) {
        log_error("history %s %s: %s (give a run id, or a query matching one run such as latest)", cmd, word, err);
        return -1;
    }
    int rc = 0;
    if (ids.n == 1) *id = ids.ids[0];
    else {
        log_error("history %s %s: the query matches %zu runs; give a run id or a query matching one (latest, last:1)", cmd,
                  word, ids.n);
        rc = -1;
    }
    history_ids_free(&ids);
    return rc;
}

/* Writes a JSON document to path ('-' or NULL: stdout) atomically. */
static int emit_json(const char *path, const json_t *doc) {
    char err[512];
    if (!path || !strcmp(path, "-")) {
        json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
        fputc('\n', stdout);
        return EXIT_OK;
    }
    if (results_write_json(path, doc, err, sizeof err) < 0) { log_error("%s", err); return EXIT_RUN_FAILED; }
    log_info("written to %s", path);
    return EXIT_OK;
}

static int do_import(const hargs *a) {
    if (a->n_pos < 2) { log_error("history import wants one or more files (dsperf results/sweep/tune, vLLM benchmark JSON)"); return EXIT_USAGE; }
    char err[1024];
    /* every file is read and checked before the first is recorded: a typo adds nothing */
    json_t **docs = calloc((size_t)a->n_pos, sizeof *docs);
    if (!docs) { log_error("out of memory"); return EXIT_RUN_FAILED; }
    int rc = EXIT_OK;
    for (int i = 1; i < a->n_pos && rc == EXIT_OK; i++)
        if (!(docs[i] = history_import_file(a->pos[i], err, sizeof err))) { log_error("%s", err); rc = EXIT_USAGE; }
    history *h = NULL;
    if (rc == EXIT_OK && history_open(a->db, HISTORY_WRITE, &h, err, sizeof err) < 0) { log_error("%s", err); rc = EXIT_USAGE; }
    for (int i = 1; i < a->n_pos && rc == EXIT_OK; i++) {
        history_record_opts ro = { .labels = a->labels, .n_labels = a->n_labels, .source = a->pos[i] };
        int64_t id;
        bool existed;
        if (history_record(h, docs[i], &ro, &id, &existed, err, sizeof err) < 0) { log_error("%s: %s", a->pos[i], err); rc = EXIT_RUN_FAILED; }
        else printf("%s: %s run %lld\n", a->pos[i], existed ? "already recorded as" : "recorded as", (long long)id);
    }
    for (int i = 0; i < a->n_pos; i++) json_decref(docs[i]);
    free(docs);
    history_close(h);
    return rc;
}

static int do_compare(history *h, hargs *a) {
    history_compare_opts ho = { .baseline = a->baseline, .candidate = a->candidate, .empty_baseline_ok = a->no_baseline_ok };
    if (a->n_pos == 3) {
        if (a->baseline || a->candidate) { log_error("give the runs either as BASE CAND or with --baseline/--candidate, not both"); return EXIT_USAGE; }
        ho.baseline = a->pos[1];
        ho.candidate = a->pos[2];
    } else if (a->n_pos != 1) {
        log_error("history compare takes BASE CAND (run ids or quoted queries) or --baseline QUERY [--candidate QUERY]");
        return EXIT_USAGE;
    }
    if (!ho.baseline) { log_error("history compare needs a baseline: --baseline QUERY (e.g. 'label:branch=main last:5') or BASE CAND"); return EXIT_USAGE; }
    const char *metrics[64];
    char *mbuf = a->metrics_spec ? strdup(a->metrics_spec) : NULL;
    if (mbuf) {
        int n = 0;
        for (char *t = strtok(mbuf, ","); t && n < 64; t = strtok(NULL, ",")) if (*t) metrics[n++] = t;
        a->co.metrics = metrics;
        a->co.n_metrics = n;
    }
    a->co.rules = a->rules;
    a->co.n_rules = a->n_rules;
    char err[1024];
    bool no_base;
    json_t *doc = history_compare(h, &ho, &a->co, &no_base, err, sizeof err);
    free(mbuf);
    if (!doc) {
        if (no_base && a->no_baseline_ok) { printf("%s; passed (--no-baseline-ok)\n", err); return EXIT_OK; }
        log_error("%s", err);
        return EXIT_USAGE;
    }
    const json_t *hist = json_object_get(doc, "history");
    const char *diff = json_string_value(json_object_get(hist, "config_differences"));
    if (diff && !a->md) printf("note: the compared runs' configurations differ in: %s\n", diff);
    compare_print(stdout, doc, a->md);
    int rc = json_is_true(json_object_get(json_object_get(doc, "gate"), "passed")) ? EXIT_OK : EXIT_RUN_FAILED;
    if (a->out && emit_json(a->out, doc) != EXIT_OK) rc = EXIT_RUN_FAILED;
    json_decref(doc);
    return rc;
}

int cmd_history(int argc, char **argv) {
    history_opts_register_kinds();   /* import and record know every kind */
    hargs a;
    int rc = parse(&a, argc, argv);
    if (rc >= 0) return rc;
    const char *cmd = a.pos[0];
    if (!strcmp(cmd, "import")) return do_import(&a);
    static const char *const known[] = {"list", "show", "trend", "best", "compare", "export", "check", NULL};
    bool ok = false;
    for (const char *const *k = known; *k; k++) ok = ok || !strcmp(*k, cmd);
    if (!ok) return usage_error("unknown history command '%s' (list, show, trend, best, compare, import, export, check)", cmd);
    char err[1024];
    history *h;
    if (history_open(a.db, HISTORY_READ, &h, err, sizeof err) < 0) {
        log_error("%s", err);
        return strstr(err, "damaged") ? EXIT_RUN_FAILED : EXIT_USAGE;
    }
    char *query = NULL;
    rc = EXIT_OK;
    if (!strcmp(cmd, "list")) {
        query = join_from(&a, 1);
        history_list_opts lo = { .limit = a.limit, .json = a.json, .wide = a.wide };
        if (history_list(h, query, &lo, stdout, err, sizeof err) < 0) { log_error("%s", err); rc = EXIT_USAGE; }
    } else if (!strcmp(cmd, "show") || !strcmp(cmd, "export")) {
        int64_t id;
        if (a.n_pos != 2) { log_error("history %s wants one run: an id (dsperf history list shows them) or latest", cmd); rc = EXIT_USAGE; }
        else if (one_run(h, cmd, a.pos[1], &id) < 0) rc = EXIT_USAGE;
        else if (!strcmp(cmd, "show")) {
            if (history_show(h, id, a.doc, stdout, err, sizeof err) < 0) { log_error("%s", err); rc = EXIT_USAGE; }
        } else if (a.format && strcmp(a.format, "br0.2")) {
            log_error("--format %s: the export format is br0.2 (llm-d Benchmark Report v0.2)", a.format);
            rc = EXIT_USAGE;
        } else {
            json_t *br = history_export_br02(h, id, err, sizeof err);
            if (!br) { log_error("%s", err); rc = EXIT_USAGE; }
            else { rc = emit_json(a.out, br); json_decref(br); }
        }
    } else if (!strcmp(cmd, "trend") || !strcmp(cmd, "best")) {
        if (a.n_pos < 2) { log_error("history %s wants a metric (p99_ttft_ms, median_tpot_ms, output_throughput, knee_load, ...)", cmd); rc = EXIT_USAGE; }
        else {
            query = join_from(&a, 2);
            json_t *doc;
            if (!strcmp(cmd, "trend")) {
                history_trend_opts to;
                history_trend_default_opts(&to);
                to.query = query;
                to.min_runs = (int)a.min_runs;
                to.window = (int)a.window;
                to.min_effect_pct = a.min_effect;
                to.resamples = a.co.resamples;
                to.show_last = a.json ? 0 : (int)a.last;
                doc = history_trend(h, a.pos[1], &to, err, sizeof err);
                if (doc && a.json) emit_json(a.out, doc);
                else if (doc) history_trend_print(stdout, doc);
            } else {
                doc = history_best(h, a.pos[1], query, (int)a.top, err, sizeof err);
                if (doc && a.json) emit_json(a.out, doc);
                else if (doc) history_best_print(stdout, doc);
            }
            if (!doc) { log_error("%s", err); rc = EXIT_USAGE; }
            json_decref(doc);
        }
    } else if (!strcmp(cmd, "compare")) {
        rc = do_compare(h, &a);
    } else if (!strcmp(cmd, "check")) {
        char report[1024];
        int c = history_integrity(h, report, sizeof report);
        if (c == 0) printf("%s: ok (history schema %d)\n", a.db, history_schema_version(h));
        else { log_error("%s: %s: %s", a.db, c > 0 ? "damaged (integrity_check)" : "cannot check", report); rc = EXIT_RUN_FAILED; }
    }
    free(query);
    history_close(h);
    return rc;
}
