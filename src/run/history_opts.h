/* history_opts — the options every command that writes results takes to record them in the
 * results history (--db PATH or $DSPERF_DB, --label key=value), the check of the database before
 * a run starts, and the one call that records a document when its results file is written. */
#ifndef DSP_HISTORY_OPTS_H
#define DSP_HISTORY_OPTS_H
#include "history/history.h"
#include "common/result.h"
#include <jansson.h>
#include <stdbool.h>

typedef struct {
    const char *db;                                  /* NULL: no recording */
    const char *labels[HISTORY_MAX_LABELS];
    int n_labels;
} history_opts;

/* Registers the history kinds of documents other modules write (dsperf.drift/1); once per
 * process, also from history_opts_init. */
void history_opts_register_kinds(void);
/* No database unless $DSPERF_DB names one. */
void history_opts_init(history_opts *o);
/* Applies --db / --label by long option name (*taken, unless NULL: it was one of them; when
 * not, DS_OK and nothing applied). DS_OK, or DS_EINVAL after its one-line error (a malformed label). */
ds_result history_opts_apply(history_opts *o, const char *name, const char *value, bool *taken);
/* Before the run: opens the database (creating and migrating it), so a bad --db is a usage error
 * before any load is sent. DS_OK (also without a database) or DS_EINVAL after one line. */
ds_result history_opts_check(const history_opts *o);
/* When the results are written: records doc with the labels (extra: more "key=value" labels,
 * may be NULL). DS_OK, or DS_EIO after one line (the results file is kept). */
ds_result history_opts_record(const history_opts *o, const json_t *doc, const char *const *extra, int n_extra);
#endif
