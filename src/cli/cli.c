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
