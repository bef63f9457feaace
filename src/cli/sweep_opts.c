/* sweep_opts — `dsperf sweep`'s command line (and tune's sweep options) into the run layer's
 * sweep_opts and bench_opts (run/sweep.h): sweep's own options, the rest handed to bench's parser. */
#include "cli/sweep_opts.h"
#include "cli/cli.h"
#include "sweep/context.h"
#include "sweep/stability.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/units.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --input-len / --output-len: which length is swept, the other one's value, and the one fixed
 * load. Returns -1 to go on, or EXIT_USAGE after its one line. */
static int length_mode(sweep_opts *so, int modes, const char *cmd) {
    double lv[SWEEP_MAX_LEVELS];
    size_t n_in = 0, n_out = 0;
    char err[256];
    if (so->in_ladder && sweep_parse_length_ladder(so->in_ladder, lv, SWEEP_MAX_LEVELS, &n_in, err, sizeof err) < 0) {
        log_error("bad ladder for --input-len: %s (e.g. 1k..128k x2)", err);
        return EXIT_USAGE;
    }
    double in1 = n_in ? lv[0] : 0;
    if (so->outlen_ladder && sweep_parse_length_ladder(so->outlen_ladder, lv, SWEEP_MAX_LEVELS, &n_out, err, sizeof err) < 0) {
        log_error("bad ladder for --output-len: %s (e.g. 128..4k x2)", err);
        return EXIT_USAGE;
    }
    double out1 = n_out ? lv[0] : 0;
    if (n_in > 1 && n_out > 1) {
        log_error("sweep one length at a time: a ladder for --input-len or for --output-len, the other one value");
        return EXIT_USAGE;
    }
    if (so->outlen_ladder && !so->in_ladder && n_out == 1) {
        log_error("--output-len with one value goes with an --input-len ladder; for a load sweep set out= in "
                  "--dataset random:in=N,out=M");
        return EXIT_USAGE;
    }
    if (so->autom || modes != 1) {
        log_error("a sweep along %s holds the load fixed: give one --concurrency N or --rate R/s (not --auto); see dsperf "
                  "%s --help", so->in_ladder && n_in >= n_out ? "prompt length" : "output length", cmd);
        return EXIT_USAGE;
    }
    size_t nl;
    if (sweep_parse_ladder(so->conc_ladder ? so->conc_ladder : so->rate_ladder, so->rate_ladder != NULL, lv,
                           SWEEP_MAX_LEVELS, &nl, err, sizeof err) < 0 || nl != 1) {
        log_error("a sweep along context length takes one load: --%s %s is %s", so->conc_ladder ? "concurrency" : "rate",
                  so->conc_ladder ? so->conc_ladder : so->rate_ladder, nl > 1 ? "a ladder" : err);
        return EXIT_USAGE;
    }
    bool input = so->in_ladder && (n_in > 1 || !so->outlen_ladder || n_out == 1);
    so->length_axis = input ? "input_len" : "output_len";
    so->other_len = (long)(input ? out1 : in1);
    if (sweep_parse_length_ladder(input ? so->in_ladder : so->outlen_ladder, so->ladder, SWEEP_MAX_LEVELS, &so->n_levels,
                                  err, sizeof err) < 0)
        return EXIT_USAGE;
    return -1;
}

/* Splits argv into sweep's own options and the rest, which go to bench_opts_parse with a
 * placeholder load. Returns -1 to go on, or an exit code. */
static int parse_own(int argc, char **argv, sweep_opts *so, const char *cmd, const char *help_text) {
    memset(so, 0, sizeof *so);
    so->out_path = NULL;    /* a new sweep-<date>-<time>.json at the first save (save()) */
    so->early_stop = true;
    so->auto_levels = 6;
    so->auto_max_conc = 128;
    so->repeats = 1;
    so->slo_pct = 99;
    so->osd_window_ns = 5 * NS_PER_S;
    so->print_table = true;
    so->summary = cli_summary_stream();
    so->name_default_out = cli_default_output;
    char **v = calloc((size_t)argc + 4, sizeof *v);
    int n = 0;
    v[n++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        cli_word w;
        cli_word_init(&w, a);
        size_t nlen = w.name_len;
#define IS(name) cli_word_is(&w, name)
#define VAL() cli_word_value(&w, argc, argv, &i)
        const char *val;
        long long ll;
        if ((IS("--help") || IS("-h")) && help_text) { fputs(help_text, stdout); free(v); return EXIT_OK; }
        else if (IS("--concurrency") || IS("--rate")) {
            bool is_rate = IS("--rate");
            if (!(val = VAL())) goto missing;
            /* "--rate 1..40/s step 4" typed without quotes: the step comes as two more words */
            if (i + 2 < argc && !strcmp(argv[i + 1], "step")) {
                snprintf(so->ladder_buf, sizeof so->ladder_buf, "%s step %s", val, argv[i + 2]);
                val = so->ladder_buf;
                i += 2;
            }
            if (is_rate) so->rate_ladder = val;
            else so->conc_ladder = val;
        }
        else if (IS("--input-len") || IS("--output-len")) {
            bool in = IS("--input-len");
            if (!(val = VAL())) goto missing;
            /* "1k..64k x2" typed without quotes: the factor comes as the next word */
            const char *nx = i + 1 < argc ? argv[i + 1] : "";
            if (nx[0] == 'x' && nx[1] && strspn(nx + 1, "0123456789.") == strlen(nx + 1)) {
                char *buf = in ? so->in_buf : so->out_buf;
                snprintf(buf, sizeof so->in_buf, "%s %s", val, nx);
                val = buf;
                i++;
            }
            if (in) so->in_ladder = val;
            else so->outlen_ladder = val;
        }
        else if (IS("--stability-score")) {
            if (!(val = VAL())) goto missing;
            if (stability_parse_score(val, &so->stab) < 0) {
                log_error("bad value '%s' for --stability-score: itl-cv, tpot-tail or throughput-cv", val);
                free(v);
                return EXIT_USAGE;
            }
        }
        else if (IS("--auto")) so->autom = true;
        else if (IS("--no-early-stop")) so->early_stop = false;
        else if (IS("--out")) { if (!(so->out_path = VAL())) goto missing; }
        else if (IS("--save-requests")) { if (!(so->save_prefix = VAL())) goto missing; }
        else if (IS("--auto-levels") || IS("--auto-max-concurrency") || IS("--repeats")) {
            const char *name = a;
            if (!(val = VAL())) goto missing;
            if (units_parse_int(val, 1, IS("--auto-levels") ? 64 : 100000, &ll) < 0) {
                log_error("bad value '%s' for %.*s: an integer >= 1", val, (int)nlen, name);
                free(v);
                return EXIT_USAGE;
            }
            if (IS("--auto-levels")) so->auto_levels = (int)ll;
            else if (IS("--repeats")) so->repeats = (int)ll;
            else so->auto_max_conc = (int)ll;
        } else if (IS("--slo-percentile")) {
            if (!(val = VAL())) goto missing;
            if (units_parse_double(val, &so->slo_pct) < 0 || !(so->slo_pct > 0 && so->slo_pct <= 100)) {
                log_error("bad value '%s' for --slo-percentile: a percentile in (0, 100]", val);
                free(v);
                return EXIT_USAGE;
            }
        } else if (IS("--osd-window")) {
            if (!(val = VAL())) goto missing;
            if (units_parse_duration_ns(val, &so->osd_window_ns) < 0 || so->osd_window_ns < 100 * NS_PER_MS) {
                log_error("bad value '%s' for --osd-window: a duration >= 100ms such as 5s", val);
                free(v);
                return EXIT_USAGE;
            }
        } else v[n++] = argv[i];
        continue;
    missing:
        log_error("%.*s needs a value; see dsperf %s --help", (int)nlen, a, cmd);
        free(v);
        return EXIT_USAGE;
#undef IS
#undef VAL
    }
    int modes = !!so->conc_ladder + !!so->rate_ladder + so->autom;
    if (so->in_ladder || so->outlen_ladder) {
        int rc = length_mode(so, modes, cmd);
        if (rc >= 0) { free(v); return rc; }
        /* the load is fixed: bench takes it as given */
        v[n++] = so->rate_ladder ? "--rate" : "--concurrency";
        v[n++] = (char *)(so->rate_ladder ? so->rate_ladder : so->conc_ladder);
        so->bargv = v;
        so->bargc = n;
        return -1;
    }
    if (modes != 1) {
        if (modes) log_error("give one ladder: --concurrency, --rate or --auto");
        else log_error("give a ladder: --concurrency 1..64x2, --rate 1..20/s step 2 or --auto; see dsperf %s --help", cmd);
        free(v);
        return EXIT_USAGE;
    }
    /* a placeholder load so bench's checks (open vs closed loop options) apply */
    v[n++] = so->rate_ladder ? "--rate" : "--concurrency";
    v[n++] = so->rate_ladder ? "1/s" : "1";
    so->bargv = v;
    so->bargc = n;
    return -1;
}

int sweep_opts_parse(sweep_opts *so, bench_opts *b, int argc, char **argv, const char *cmd, const char *help_text) {
    memset(b, 0, sizeof *b);
    int rc = parse_own(argc, argv, so, cmd, help_text);
    if (rc >= 0) return rc;
    char err[1024];
    if (!so->autom && !so->length_axis && sweep_parse_ladder(so->conc_ladder ? so->conc_ladder : so->rate_ladder, so->rate_ladder != NULL,
                                         so->ladder, SWEEP_MAX_LEVELS, &so->n_levels, err, sizeof err) < 0) {
        log_error("bad ladder for --%s: %s", so->conc_ladder ? "concurrency" : "rate", err);
        free(so->bargv);
        so->bargv = NULL;
        return EXIT_USAGE;
    }
    rc = bench_opts_parse(b, so->bargc, so->bargv);
    if (rc >= 0) {
        bench_opts_free(b);
        free(so->bargv);
        so->bargv = NULL;
        return rc;
    }
    if (so->length_axis) {
        /* the first level's dataset, so a non-random --dataset fails before anything runs; the other
         * length comes from the dataset when no flag gave it */
        char spec[256];
        bool input = !strcmp(so->length_axis, "input_len");
        if (sweep_length_dataset(b->dataset_spec, input, (long)so->ladder[0], so->other_len, spec, sizeof spec, err,
                                 sizeof err) < 0 || (b->n_classes && snprintf(err, sizeof err, "--class does not go with a "
                                 "length ladder (every level has its own prompts)") > 0)) {
            log_error("%s", err);
            sweep_opts_free(so, b);
            return EXIT_USAGE;
        }
        if (!so->other_len) {
            const char *k = strstr(spec, input ? "out=" : "in=");
            so->other_len = k ? strtol(k + (input ? 4 : 3), NULL, 10) : 0;
        }
    }
    free(b->command_line);
    b->command_line = cli_command_line(argc, argv);   /* the command's own line, not the rewritten one */
    b->out_path = NULL;
    b->requests_path = NULL;
    return -1;
}

void sweep_opts_free(sweep_opts *so, bench_opts *b) {
    bench_opts_free(b);
    free(so->bargv);
    so->bargv = NULL;
}
