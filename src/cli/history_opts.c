/* history_opts — --db / --label for the commands that write results (see history_opts.h). */
#include "cli/history_opts.h"
#include "common/log.h"
#include <stdlib.h>
#include <string.h>

void history_opts_init(history_opts *o) {
    memset(o, 0, sizeof *o);
    const char *env = getenv("DSPERF_DB");
    o->db = env && *env ? env : NULL;
}

int history_opts_apply(history_opts *o, const char *name, const char *value) {
    char err[512];
    if (!strcmp(name, "db")) {
        if (!value || !*value) { log_error("--db wants the path of the history database"); return EXIT_USAGE; }
        o->db = value;
        return 0;
    }
    if (strcmp(name, "label")) return 1;
    if (history_check_label(value, err, sizeof err) < 0) { log_error("%s", err); return EXIT_USAGE; }
    if (o->n_labels == HISTORY_MAX_LABELS) { log_error("at most %d --label options", HISTORY_MAX_LABELS); return EXIT_USAGE; }
    o->labels[o->n_labels++] = value;
    return 0;
}

int history_opts_check(const history_opts *o) {
    char err[1024];
    if (o->n_labels && !o->db) {
        log_error("--label names a run in the history: give --db PATH (or DSPERF_DB) too");
        return EXIT_USAGE;
    }
    if (!o->db) return EXIT_OK;
    if (history_prepare(o->db, err, sizeof err) < 0) { log_error("--db: %s", err); return EXIT_USAGE; }
    return EXIT_OK;
}

int history_opts_record(const history_opts *o, const json_t *doc, const char *const *extra, int n_extra) {
    if (!o->db) return EXIT_OK;
    const char *labels[2 * HISTORY_MAX_LABELS];
    int n = 0;
    for (int i = 0; i < o->n_labels; i++) labels[n++] = o->labels[i];
    for (int i = 0; i < n_extra && n < 2 * HISTORY_MAX_LABELS; i++) labels[n++] = extra[i];
    history_record_opts ro = { .labels = labels, .n_labels = n };
    char err[1024];
    int64_t id;
    if (history_record_to(o->db, doc, &ro, &id, err, sizeof err) < 0) {
        log_error("the run was not recorded in the history: %s", err);
        return EXIT_RUN_FAILED;
    }
    log_info("recorded in %s as run %lld", o->db, (long long)id);
    return EXIT_OK;
}
