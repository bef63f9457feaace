/* cli — helpers shared by the command front-ends. */
#include "cli/cli.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/redact.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <getopt.h>

/* Quoted the way a POSIX shell needs it, so the line can be pasted back; credentials become
 * ${NAME:?...} parameters (common/redact.h). */
char *cli_join_argv(int argc, char **argv) { return redact_command_line(argc, argv); }

char *cli_command_line(int argc, char **argv) {
    char *args = cli_join_argv(argc, argv), *line = NULL;
    if (args && asprintf(&line, "dsperf %s", args) < 0) line = NULL;
    free(args);
    return line;
}

struct option *cli_options_with_keys(const struct option *own, size_t n_own, const char *const *keys, int first_val) {
    size_t n_keys = 0;
    while (keys && keys[n_keys]) n_keys++;
    struct option *opts = calloc(n_own + n_keys + 1, sizeof *opts);
    if (!opts) return NULL;
    memcpy(opts, own, n_own * sizeof *own);
    for (size_t i = 0; i < n_keys; i++) opts[n_own + i] = (struct option){ keys[i], required_argument, 0, first_val + (int)i };
    return opts;
}

void cli_word_init(cli_word *w, const char *a) {
    w->arg = a;
    w->eq = strchr(a, '=');
    w->name_len = w->eq && !strncmp(a, "--", 2) ? (size_t)(w->eq - a) : strlen(a);
    if (w->name_len == strlen(a)) w->eq = NULL;    /* "=" only splits a long option */
}

bool cli_word_is(const cli_word *w, const char *name) {
    return strlen(name) == w->name_len && !strncmp(w->arg, name, w->name_len);
}

const char *cli_word_value(const cli_word *w, int argc, char **argv, int *i) {
    if (w->eq) return w->eq + 1;
    return *i + 1 < argc ? argv[++*i] : NULL;
}

/* The flag that took standard output ("-"), if one did: the terminal summary moves to stderr, and
 * a second flag asking for it is a usage error (two documents on one stream cannot be read back). */
static const char *g_stdout_flag;

FILE *cli_summary_stream(void) { return g_stdout_flag ? stderr : stdout; }

int cli_check_output(const char *flag, const char *path) {
    if (path && fileio_is_stdout(path)) {
        if (g_stdout_flag && strcmp(g_stdout_flag, flag)) {
            log_error("%s - and %s - both ask for standard output; give one of them a file name", g_stdout_flag, flag);
            return EXIT_USAGE;
        }
        g_stdout_flag = flag;
        return 0;
    }
    if (!path || fileio_check_writable(path) == 0) return 0;
    log_error("cannot write %s %s: %s (checked before the run, so nothing is measured and lost; give a path in a "
              "writable folder)", flag, path, strerror(errno));
    return EXIT_USAGE;
}

const char *cli_default_output(const char *flag, const char *stem, const char *ext, char *buf, size_t cap) {
    if (fileio_unique_path(stem, ext, buf, cap) != 0) {
        log_error("cannot create a file for %s's default (%s-<date>.%s): %s (give %s FILE in a writable folder, or set "
                  "DSPERF_RESULTS_DIR)", flag, stem, ext, strerror(errno), flag);
        return NULL;
    }
    /* said even under --quiet: a file the user did not name must not be one they cannot find */
    fprintf(stderr, "dsperf: no %s given: results go to %s, a new file (%s FILE names one)\n", flag, buf, flag);
    return buf;
}

int cli_check_default_output(const char *flag, const char *stem, const char *ext) {
    const char *dir = getenv("DSPERF_RESULTS_DIR");
    char probe[4096];
    snprintf(probe, sizeof probe, "%s%s%s.%s", dir && *dir ? dir : "", dir && *dir ? "/" : "", stem, ext);
    if (fileio_check_writable(probe) == 0) return 0;
    log_error("cannot write %s's default (%s-<date>.%s) in %s: %s (give %s FILE in a writable folder, or set "
              "DSPERF_RESULTS_DIR)", flag, stem, ext, dir && *dir ? dir : "this folder", strerror(errno), flag);
    return EXIT_USAGE;
}

/* Edit distance (insert, delete, substitute, swap of neighbours), capped: names are short. */
static size_t edit_distance(const char *a, size_t na, const char *b, size_t nb) {
    if (na > 63 || nb > 63) return 99;
    size_t d[64][64];
    for (size_t i = 0; i <= na; i++) d[i][0] = i;
    for (size_t j = 0; j <= nb; j++) d[0][j] = j;
    for (size_t i = 1; i <= na; i++)
        for (size_t j = 1; j <= nb; j++) {
            size_t sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]), del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
            size_t m = sub < del ? sub : del;
            if (ins < m) m = ins;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < m) m = d[i - 2][j - 2] + 1;
            d[i][j] = m;
        }
    return d[na][nb];
}

const char *cli_nearest_option(const struct option *opts, const char *name, size_t len) {
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (const struct option *o = opts; o && o->name; o++) {
        size_t ol = strlen(o->name), d = edit_distance(name, len, o->name, ol);
        /* a word of the name left out or added: "--save" for "--save-requests" */
        if (len >= 3 && ol > len && !strncmp(o->name, name, len)) d = d < 2 ? d : 2;
        if (d < best_d) { best_d = d; best = o->name; }
    }
    size_t limit = len <= 4 ? 1 : len <= 8 ? 2 : 3;
    return best && best_d <= limit ? best : NULL;
}

void cli_option_table(const char *cmd, const struct option *opts) {
    const char *want = getenv("DSPERF_OPTION_TABLE");
    if (!want || strcmp(want, cmd)) return;
    printf("# option table of dsperf %s\n", cmd);   /* tells the table from a help text */
    for (const struct option *o = opts; o && o->name; o++) printf("--%s\n", o->name);
    fflush(stdout);
    exit(0);
}

int cli_bad_option_text(const char *cmd, const struct option *opts, int argc, char **argv, int ind, int opt, char *err,
                        size_t errlen) {
    const char *word = ind > 0 && ind <= argc ? argv[ind - 1] : "?";
    if (strncmp(word, "--", 2) != 0) {
        if (opt > 0 && opt < 256) snprintf(err, errlen, "unknown option '-%c', or it needs a value (see dsperf %s --help)", opt, cmd);
        else snprintf(err, errlen, "unknown option '%s' (see dsperf %s --help)", word, cmd);
        return EXIT_USAGE;
    }
    const char *name = word + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    for (const struct option *o = opts; o && o->name; o++)
        if (strlen(o->name) == len && !strncmp(o->name, name, len)) {
            if (o->has_arg == required_argument) snprintf(err, errlen, "option --%s needs a value (see dsperf %s --help)", o->name, cmd);
            else snprintf(err, errlen, "option --%s takes no value (see dsperf %s --help)", o->name, cmd);
            return EXIT_USAGE;
        }
    const char *near = cli_nearest_option(opts, name, len);
    if (near) snprintf(err, errlen, "unknown option '--%.*s'; did you mean --%s? (see dsperf %s --help)", (int)len, name, near, cmd);
    else snprintf(err, errlen, "unknown option '--%.*s' (see dsperf %s --help)", (int)len, name, cmd);
    return EXIT_USAGE;
}

int cli_bad_option(const char *cmd, const struct option *opts, int argc, char **argv, int ind, int opt) {
    char err[512];
    int rc = cli_bad_option_text(cmd, opts, argc, argv, ind, opt, err, sizeof err);
    log_error("%s", err);
    return rc;
}
