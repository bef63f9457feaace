/* sim_sweep — `dsperf sim` over a ladder of lengths or loads (see sim_sweep.h). */
#include "cli/sim_sweep.h"
#include "cli/cli.h"
#include "common/fileio.h"
#include "cli/history_opts.h"
#include "common/log.h"
#include "common/units.h"
#include "results/results.h"
#include "sweep/context.h"
#include "sweep/stability.h"
#include "sweep/sweep.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

json_t **sim_sweep_capture;

/* A value that names more than one level. */
static bool is_ladder(const char *v) { return v && (strchr(v, ',') || strstr(v, "..")); }

bool sim_sweep_wanted(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        cli_word w;
        cli_word_init(&w, argv[i]);
        if (cli_word_is(&w, "--help") || cli_word_is(&w, "-h")) return false;
    }
    for (int i = 1; i < argc; i++) {
        cli_word w;
        cli_word_init(&w, argv[i]);
        if (cli_word_is(&w, "--input-len")) return true;
        if (cli_word_is(&w, "--output-len") || cli_word_is(&w, "--concurrency") || cli_word_is(&w, "--rate")) {
            const char *v = cli_word_value(&w, argc, argv, &i);
            if (is_ladder(v)) return true;
        }
    }
    return false;
}

typedef struct {
    const char *in_len, *out_len, *conc, *rate, *dataset, *out, *save, *score;
    long long seed, repeats;
    bool quiet;
    char **pass;                /* every other word, in order */
    int n_pass;
    char joined[4][256];        /* ladders typed as several words */
    int n_joined;
    history_opts hist;          /* --db/--label: the sweep is recorded once, not each level */
} sim_sweep_opts;

static int parse(int argc, char **argv, sim_sweep_opts *o) {
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->repeats = 1;
    history_opts_init(&o->hist);
    o->pass = calloc((size_t)argc + 1, sizeof *o->pass);
    if (!o->pass) return EXIT_RUN_FAILED;
    for (int i = 1; i < argc; i++) {
        cli_word w;
        cli_word_init(&w, argv[i]);
        const char **slot = cli_word_is(&w, "--input-len") ? &o->in_len : cli_word_is(&w, "--output-len") ? &o->out_len
                          : cli_word_is(&w, "--concurrency") ? &o->conc : cli_word_is(&w, "--rate") ? &o->rate
                          : cli_word_is(&w, "--dataset") ? &o->dataset : cli_word_is(&w, "--out") ? &o->out
                          : cli_word_is(&w, "--save-requests") ? &o->save : cli_word_is(&w, "--stability-score") ? &o->score
                          : NULL;
        bool seed = cli_word_is(&w, "--seed"), reps = cli_word_is(&w, "--repeats");
        if (cli_word_is(&w, "--quiet")) { o->quiet = true; continue; }
        if (cli_word_is(&w, "--db") || cli_word_is(&w, "--label")) {
            const char *v = cli_word_value(&w, argc, argv, &i);
            if (!v) { log_error("sim: %.*s needs a value; see dsperf sim --help", (int)w.name_len, w.arg); return EXIT_USAGE; }
            if (history_opts_apply(&o->hist, cli_word_is(&w, "--db") ? "db" : "label", v) != 0) return EXIT_USAGE;
            continue;
        }
        if (!slot && !seed && !reps) { o->pass[o->n_pass++] = argv[i]; continue; }
        const char *v = cli_word_value(&w, argc, argv, &i);
        if (!v) { log_error("sim: %.*s needs a value; see dsperf sim --help", (int)w.name_len, w.arg); return EXIT_USAGE; }
        /* "1k..64k x2" or "1..40/s step 4" typed without quotes: the rest of the ladder follows */
        if (slot && slot != &o->dataset && slot != &o->out && slot != &o->save && slot != &o->score && i + 1 < argc) {
            int more = argv[i + 1][0] == 'x' && strspn(argv[i + 1] + 1, "0123456789.") == strlen(argv[i + 1] + 1) && argv[i + 1][1]
                     ? 1 : !strcmp(argv[i + 1], "step") && i + 2 < argc ? 2 : 0;
            if (more && o->n_joined < 4) {
                char *j = o->joined[o->n_joined++];
                snprintf(j, 256, "%s %s%s%s", v, argv[i + 1], more == 2 ? " " : "", more == 2 ? argv[i + 2] : "");
                v = j;
                i += more;
            }
        }
        if (slot) *slot = v;
        else if (units_parse_int(v, seed ? 0 : 1, seed ? INT64_MAX : 1000, seed ? &o->seed : &o->repeats) < 0) {
            log_error("sim: bad value '%s' for %s", v, seed ? "--seed" : "--repeats");
            return EXIT_USAGE;
        }
    }
    return -1;
}

/* The ladder and what each level varies. */
typedef struct {
    const char *axis;           /* input_len, output_len, concurrency, rate */
    double levels[SWEEP_MAX_LEVELS];
    size_t n;
    long other;                 /* length axes: the other length (0: the dataset's) */
    stab_score score;
} plan;

static int plan_of(const sim_sweep_opts *o, plan *p) {
    char err[256];
    memset(p, 0, sizeof *p);
    if (o->score && stability_parse_score(o->score, &p->score) < 0) {
        log_error("sim: bad value '%s' for --stability-score: itl-cv, tpot-tail or throughput-cv", o->score);
        return EXIT_USAGE;
    }
    bool out_ladder = is_ladder(o->out_len);
    if (o->in_len || out_ladder) {
        if (o->in_len && out_ladder) { log_error("sim: sweep one length at a time: --input-len or an --output-len ladder"); return EXIT_USAGE; }
        if (!!o->conc + !!o->rate != 1 || is_ladder(o->conc) || is_ladder(o->rate)) {
            log_error("sim: a sweep along context length holds the load fixed: give one --concurrency N or --rate R/s");
            return EXIT_USAGE;
        }
        p->axis = o->in_len ? "input_len" : "output_len";
        if (sweep_parse_length_ladder(o->in_len ? o->in_len : o->out_len, p->levels, SWEEP_MAX_LEVELS, &p->n, err, sizeof err) < 0) {
            log_error("sim: bad ladder for --%s: %s (e.g. 1k..128k x2)", o->in_len ? "input-len" : "output-len", err);
            return EXIT_USAGE;
        }
        double other[SWEEP_MAX_LEVELS];
        size_t no = 0;
        if (o->in_len && o->out_len && (sweep_parse_length_ladder(o->out_len, other, SWEEP_MAX_LEVELS, &no, err, sizeof err) < 0 || no != 1)) {
            log_error("sim: bad value '%s' for --output-len: one length", o->out_len);
            return EXIT_USAGE;
        }
        p->other = no ? (long)other[0] : 0;
        char spec[256];
        if (sweep_length_dataset(o->dataset, o->in_len != NULL, (long)p->levels[0], p->other, spec, sizeof spec, err, sizeof err) < 0) {
            log_error("sim: %s", err);
            return EXIT_USAGE;
        }
        if (!p->other) {
            const char *k = strstr(spec, o->in_len ? "out=" : "in=");
            p->other = k ? strtol(k + (o->in_len ? 4 : 3), NULL, 10) : 0;
        }
        return -1;
    }
    if (is_ladder(o->conc) && is_ladder(o->rate)) { log_error("sim: give one ladder: --concurrency or --rate"); return EXIT_USAGE; }
    p->axis = is_ladder(o->conc) ? "concurrency" : "rate";
    const char *spec = is_ladder(o->conc) ? o->conc : o->rate;
    if (sweep_parse_ladder(spec, !is_ladder(o->conc), p->levels, SWEEP_MAX_LEVELS, &p->n, err, sizeof err) < 0) {
        log_error("sim: bad ladder for --%s: %s", p->axis, err);
        return EXIT_USAGE;
    }
    return -1;
}

/* One level: cmd_sim with the level's words; its results document, or NULL with *rc. */
static json_t *run_level(const sim_sweep_opts *o, const plan *p, double load, int repeat, size_t index, int *rc) {
    char spec[256], loadv[64], seed[32], save[1100], err[256];
    char **v = calloc((size_t)o->n_pass + 16, sizeof *v);
    if (!v) { *rc = EXIT_RUN_FAILED; return NULL; }
    int n = 0;
    v[n++] = "sim";
    for (int i = 0; i < o->n_pass; i++) v[n++] = o->pass[i];
    bool length = sweep_axis_is_length(p->axis);
    if (length) {
        sweep_length_dataset(o->dataset, !strcmp(p->axis, "input_len"), (long)load, p->other, spec, sizeof spec, err, sizeof err);
        v[n++] = "--dataset";
        v[n++] = spec;
        v[n++] = o->conc ? "--concurrency" : "--rate";
        v[n++] = (char *)(o->conc ? o->conc : o->rate);
    } else {
        if (o->dataset) { v[n++] = "--dataset"; v[n++] = (char *)o->dataset; }
        if (o->out_len) { v[n++] = "--output-len"; v[n++] = (char *)o->out_len; }
        snprintf(loadv, sizeof loadv, strcmp(p->axis, "rate") ? "%.0f" : "%.6g/s", load);
        v[n++] = strcmp(p->axis, "rate") ? "--concurrency" : "--rate";
        v[n++] = loadv;
    }
    snprintf(seed, sizeof seed, "%lld", o->seed + repeat);
    v[n++] = "--seed";
    v[n++] = seed;
    v[n++] = "--quiet";
    if (o->save) {
        snprintf(save, sizeof save, "%s.%zu.%d.jsonl", o->save, index, repeat);
        v[n++] = "--save-requests";
        v[n++] = save;
    }
    json_t *doc = NULL;
    sim_sweep_capture = &doc;
    *rc = cmd_sim(n, v);
    sim_sweep_capture = NULL;
    free(v);
    /* a level the run policy failed (server-side errors over --max-error-rate, as the rejections of a
     * prompt past the context) is still the engine's answer at that level: kept, the ladder goes on */
    if (*rc == EXIT_RUN_FAILED && doc && json_is_true(json_object_get(doc, "run_failed"))) return doc;
    if (*rc != EXIT_OK) { json_decref(doc); return NULL; }
    return doc;
}

static json_t *new_doc(int argc, char **argv, const plan *p, const sim_sweep_opts *o) {
    char date[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    char *cmd = cli_command_line(argc, argv);
    json_t *d = json_pack("{s:s,s:s,s:s,s:s,s:s,s:n,s:n,s:s,s:b,s:n,s:[],s:n,s:n,s:n}", "schema", SWEEP_SCHEMA, "tool", "dsperf",
        "version", DSPERF_VERSION, "command_line", cmd ? cmd : "", "date", date, "environment", "config", "axis", p->axis,
        "partial", 0, "partial_reason", "levels", "knee", "max_goodput", "ci");
    (void)o;
    free(cmd);
    return d;
}

/* The sweep's config: the first level's (bench's flat keys and the simulator's), with the ladder. */
static void set_config(json_t *doc, const json_t *res, const plan *p, const sim_sweep_opts *o) {
    json_t *c = json_deep_copy(json_object_get(res, "config"));
    if (!c) return;
    bool length = sweep_axis_is_length(p->axis);
    if (!length) {
        json_object_del(c, "concurrency");
        json_object_del(c, "rate_per_s");
    } else {
        json_object_set_new(c, strcmp(p->axis, "input_len") ? "input_len" : "output_len", json_integer(p->other));
    }
    json_object_set_new(c, "mode", json_string(p->axis));
    json_object_set_new(c, "ladder", json_string(length ? (o->in_len ? o->in_len : o->out_len) : o->conc ? o->conc : o->rate));
    json_object_set_new(c, "repeats", json_integer(o->repeats));
    json_object_set_new(c, "early_stop", json_false());
    json_object_set_new(c, "slo_percentile", json_real(99));
    json_object_set_new(c, "stability_score", json_string(stability_score_name(p->score)));
    json_object_set_new(doc, "config", c);
    json_object_set(doc, "environment", json_object_get(res, "environment"));
}

static json_t *level_json(json_t *res, const plan *p, double load, int repeat, uint64_t seed) {
    json_t *lv = json_pack("{s:f,s:i,s:s,s:I,s:b,s:b,s:b,s:b,s:{s:b,s:s}}", "load", load, "repeat", repeat, "kind", p->axis,
        "seed", (json_int_t)seed, "measured", 1, "saturated", 0, "early_stopped", 0, "interrupted", 0, "over_saturation",
        "judged", 0, "why", "simulated on a virtual clock: every level runs to its end");
    if (!strcmp(p->axis, "input_len") || !strcmp(p->axis, "output_len")) {
        bool in = !strcmp(p->axis, "input_len");
        json_object_set_new(lv, "input_len", json_real(in ? load : (double)p->other));
        json_object_set_new(lv, "output_len", json_real(in ? (double)p->other : load));
    }
    json_object_set_new(lv, "results", res);
    return lv;
}

int sim_sweep_main(int argc, char **argv) {
    sim_sweep_opts o;
    plan p;
    int rc = parse(argc, argv, &o);
    if (rc < 0) rc = plan_of(&o, &p);
    if (rc < 0) rc = cli_check_output("--out", o.out) ? EXIT_USAGE : -1;
    if (rc < 0) rc = history_opts_check(&o.hist) != EXIT_OK ? EXIT_USAGE : -1;
    if (rc >= 0) { free(o.pass); return rc; }
    json_t *doc = new_doc(argc, argv, &p, &o);
    char err[512];
    rc = EXIT_OK;
    bool level_failed = false;
    for (size_t i = 0; i < p.n && rc == EXIT_OK; i++) {
        for (int k = 0; k < (int)o.repeats && rc == EXIT_OK; k++) {
            json_t *res = run_level(&o, &p, p.levels[i], k, i, &rc);
            if (!res) break;
            if (rc == EXIT_RUN_FAILED) { level_failed = true; rc = EXIT_OK; }
            if (!json_array_size(json_object_get(doc, "levels"))) set_config(doc, res, &p, &o);
            json_t *lv = level_json(res, &p, p.levels[i], k, (uint64_t)(o.seed + k));
            json_array_append_new(json_object_get(doc, "levels"), lv);
            if (!o.quiet) {
                sweep_print_level(cli_summary_stream(), lv, p.axis, json_array_size(json_object_get(doc, "levels")) == 1);
                fflush(cli_summary_stream());
            }
            sweep_analyse(doc, 99);
            sweep_context_analyse(doc, NULL);
            sweep_stability_analyse(doc, p.score);
            /* after each level (an interrupted sweep keeps what it measured); standard output once, below */
            if (o.out && !fileio_is_stdout(o.out) && results_write_json(o.out, doc, err, sizeof err) < 0) {
                log_error("sim: %s", err);
                rc = EXIT_RUN_FAILED;
            }
        }
    }
    if (o.out && fileio_is_stdout(o.out) && json_array_size(json_object_get(doc, "levels")) &&
        results_write_json(o.out, doc, err, sizeof err) < 0) {
        log_error("sim: %s", err);
        rc = EXIT_RUN_FAILED;
    }
    if (rc == EXIT_OK && level_failed) {
        log_error("sim: a level failed: server-side failures over --max-error-rate (see each level's run_failed_reason)");
        rc = EXIT_RUN_FAILED;
    } else if (rc != EXIT_OK && json_array_size(json_object_get(doc, "levels"))) {
        json_object_set_new(doc, "partial", json_true());
        json_object_set_new(doc, "partial_reason", json_string("a level failed; the levels before it are kept"));
        if (o.out && !fileio_is_stdout(o.out) && results_write_json(o.out, doc, err, sizeof err) < 0) log_error("sim: %s", err);
    }
    if (json_array_size(json_object_get(doc, "levels")) && history_opts_record(&o.hist, doc, NULL, 0) != EXIT_OK
        && rc == EXIT_OK)
        rc = EXIT_RUN_FAILED;
    if (!o.quiet && json_array_size(json_object_get(doc, "levels"))) {
        FILE *sum = cli_summary_stream();
        fputc('\n', sum);
        sweep_print_table(sum, doc, false, o.repeats > 1);
        sweep_context_print(sum, doc);
        sweep_stability_print(sum, doc);
        if (o.out && !fileio_is_stdout(o.out)) log_info("sweep written to %s", o.out);
    }
    json_decref(doc);
    free(o.pass);
    return rc;
}
