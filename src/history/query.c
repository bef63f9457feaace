/* query — the history's query text ("model:deepseek* label:release=v0.8.* last:5") compiled to an
 * SQL condition with bound parameters (user text never becomes SQL), and the selections built on
 * it: run ids, a run's labels and configuration, and which runs are comparable. */
#include "history/hist_internal.h"
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PARAMS 64

typedef struct { bool is_int; char *text; int64_t i; } qparam;

struct hist_query {
    char where[4096];
    size_t wlen;
    qparam p[MAX_PARAMS];
    int np;
    int64_t last;         /* 0: every match */
    bool any_config;
    bool other_terms;     /* a term other than run ids (an explicit list of runs is taken as given) */
};

static const char terms_help[] =
    "terms: N, A..B, latest, last:N, model: endpoint: engine: gpu: host: kind: producer: version: (GLOBs), "
    "label:KEY=GLOB, label:KEY, since:DATE|7d|12h, until:DATE, config:HASH, config:any, partial:yes|no";

/* Every bare '?' of sql numbered explicitly from `first` on ("?7"), so that parameters elsewhere
 * in a statement (a column list's ?100) do not shift them. malloc'd. */
static char *renumber(const char *sql, int first) {
    size_t n = strlen(sql), q = 0;
    for (size_t i = 0; i < n; i++) q += sql[i] == '?';
    char *out = malloc(n + q * 4 + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        out[o++] = sql[i];
        if (sql[i] == '?' && !(sql[i + 1] >= '0' && sql[i + 1] <= '9')) o += (size_t)sprintf(out + o, "%d", first++);
    }
    out[o] = 0;
    return out;
}

/* Appends a condition whose '?'s are the last parameters added. */
static int add_cond(hist_query *q, const char *cond, char *err, size_t errlen) {
    int k = 0;
    for (const char *c = cond; *c; c++) k += *c == '?';
    char *num = renumber(cond, q->np - k + 1);
    if (!num) { snprintf(err, errlen, "out of memory"); return -1; }
    size_t n = strlen(num);
    if (q->wlen + n + 8 >= sizeof q->where) { free(num); snprintf(err, errlen, "query too long"); return -1; }
    q->wlen += (size_t)snprintf(q->where + q->wlen, sizeof q->where - q->wlen, "%s(%s)", q->wlen ? " AND " : "", num);
    free(num);
    return 0;
}

static int add_text(hist_query *q, const char *s, size_t len, char *err, size_t errlen) {
    if (q->np == MAX_PARAMS) { snprintf(err, errlen, "query has too many terms"); return -1; }
    q->p[q->np].is_int = false;
    q->p[q->np].text = strndup(s, len);
    if (!q->p[q->np].text) { snprintf(err, errlen, "out of memory"); return -1; }
    q->np++;
    return 0;
}

static int add_int(hist_query *q, int64_t v, char *err, size_t errlen) {
    if (q->np == MAX_PARAMS) { snprintf(err, errlen, "query has too many terms"); return -1; }
    q->p[q->np].is_int = true;
    q->p[q->np].text = NULL;
    q->p[q->np++].i = v;
    return 0;
}

static bool parse_i64(const char *s, size_t len, int64_t *v) {
    if (!len || len > 18) return false;
    int64_t x = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i])) return false;
        x = x * 10 + (s[i] - '0');
    }
    *v = x;
    return true;
}

/* "N" or "A..B" into [lo, hi]. */
static bool parse_ids(const char *s, int64_t *lo, int64_t *hi) {
    const char *dots = strstr(s, "..");
    if (!dots) return parse_i64(s, strlen(s), lo) && (*hi = *lo, true);
    return parse_i64(s, (size_t)(dots - s), lo) && parse_i64(dots + 2, strlen(dots + 2), hi) && *lo <= *hi;
}

/* 2026-01-31[T12:00[:00]] (UTC) or a span back from now: 7d, 12h, 30m. */
static bool parse_when(const char *s, int64_t *t) {
    size_t n = strlen(s);
    int64_t k;
    if (n >= 2 && strchr("dhm", s[n - 1]) && parse_i64(s, n - 1, &k)) {
        int64_t unit = s[n - 1] == 'd' ? 86400 : s[n - 1] == 'h' ? 3600 : 60;
        *t = (int64_t)time(NULL) - k * unit;
        return true;
    }
    const char *fmts[] = {"%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d"};
    for (int i = 0; i < 3; i++) {
        struct tm tm;
        memset(&tm, 0, sizeof tm);
        const char *end = strptime(s, fmts[i], &tm);
        if (end && (!*end || !strcmp(end, "Z"))) { *t = (int64_t)timegm(&tm); return true; }
    }
    return false;
}

/* field:GLOB terms and the columns they test */
static const struct { const char *term, *column; } glob_terms[] = {
    {"model", "r.model"}, {"endpoint", "r.endpoint"}, {"engine", "r.engine"}, {"gpu", "r.gpu_type"},
    {"host", "r.host"}, {"kind", "r.kind"}, {"producer", "r.producer"}, {"version", "r.tool_version"},
};

static int parse_term(hist_query *q, const char *t, char *err, size_t errlen) {
    int64_t lo, hi;
    const char *colon = strchr(t, ':');
    const char *v = colon ? colon + 1 : NULL;
    size_t klen = colon ? (size_t)(colon - t) : strlen(t);
#define KEY(s) (klen == strlen(s) && !strncmp(t, s, klen))
    if (!colon && !strcmp(t, "latest")) { q->last = 1; q->other_terms = true; return 0; }
    if (!colon || KEY("id")) {
        if (!parse_ids(v ? v : t, &lo, &hi)) {
            snprintf(err, errlen, "bad query term '%s' (%s)", t, terms_help);
            return -1;
        }
        if (add_int(q, lo, err, errlen) < 0 || add_int(q, hi, err, errlen) < 0) return -1;
        return add_cond(q, "r.id BETWEEN ? AND ?", err, errlen);
    }
    if (!*v) { snprintf(err, errlen, "query term '%s' needs a value (%s)", t, terms_help); return -1; }
    q->other_terms = true;
    for (size_t i = 0; i < sizeof glob_terms / sizeof glob_terms[0]; i++) {
        if (!KEY(glob_terms[i].term)) continue;
        char cond[96];
        snprintf(cond, sizeof cond, "%s GLOB ?", glob_terms[i].column);
        if (add_text(q, v, strlen(v), err, errlen) < 0) return -1;
        return add_cond(q, cond, err, errlen);
    }
    if (KEY("last")) {
        if (!parse_i64(v, strlen(v), &q->last) || q->last < 1) { snprintf(err, errlen, "bad query term '%s': last:N wants N >= 1", t); return -1; }
        return 0;
    }
    if (KEY("label")) {
        const char *eq = strchr(v, '=');
        if (add_text(q, v, eq ? (size_t)(eq - v) : strlen(v), err, errlen) < 0) return -1;
        if (!eq) return add_cond(q, "EXISTS (SELECT 1 FROM run_label l WHERE l.run_id = r.id AND l.key = ?)", err, errlen);
        if (add_text(q, eq + 1, strlen(eq + 1), err, errlen) < 0) return -1;
        return add_cond(q, "EXISTS (SELECT 1 FROM run_label l WHERE l.run_id = r.id AND l.key = ? AND l.value GLOB ?)", err, errlen);
    }
    if (KEY("since") || KEY("until")) {
        if (!parse_when(v, &lo)) {
            snprintf(err, errlen, "bad query term '%s': a date such as 2026-01-31, 2026-01-31T12:00 (UTC), or 7d / 12h / 30m ago", t);
            return -1;
        }
        if (add_int(q, lo, err, errlen) < 0) return -1;
        return add_cond(q, KEY("since") ? "r.run_time >= ?" : "r.run_time <= ?", err, errlen);
    }
    if (KEY("config")) {
        if (!strcmp(v, "any")) { q->any_config = true; return 0; }
        for (const char *c = v; *c; c++)
            if (!isxdigit((unsigned char)*c)) { snprintf(err, errlen, "bad query term '%s': config:HASH (hex digits) or config:any", t); return -1; }
        char pat[40];
        snprintf(pat, sizeof pat, "%.16s*", v);
        if (add_text(q, pat, strlen(pat), err, errlen) < 0) return -1;
        return add_cond(q, "r.config_hash GLOB ?", err, errlen);
    }
    if (KEY("partial")) {
        if (strcmp(v, "yes") && strcmp(v, "no")) { snprintf(err, errlen, "bad query term '%s': partial:yes or partial:no", t); return -1; }
        return add_cond(q, !strcmp(v, "yes") ? "r.partial = 1" : "r.partial = 0", err, errlen);
    }
#undef KEY
    snprintf(err, errlen, "unknown query term '%s' (%s)", t, terms_help);
    return -1;
}

int hist_query_parse(const char *text, hist_query **out, char *err, size_t errlen) {
    hist_query *q = calloc(1, sizeof *q);
    if (!q) { snprintf(err, errlen, "out of memory"); return -1; }
    const char *p = text ? text : "";
    char tok[512];
    while (*p) {
        while (isspace((unsigned char)*p)) p++;
        if (!*p) break;
        size_t n = 0;
        while (p[n] && !isspace((unsigned char)p[n])) n++;
        if (n >= sizeof tok) { snprintf(err, errlen, "query term too long: '%.40s...'", p); hist_query_free(q); return -1; }
        memcpy(tok, p, n);
        tok[n] = 0;
        p += n;
        if (parse_term(q, tok, err, errlen) < 0) { hist_query_free(q); return -1; }
    }
    *out = q;
    return 0;
}

void hist_query_free(hist_query *q) {
    if (!q) return;
    for (int i = 0; i < q->np; i++) free(q->p[i].text);
    free(q);
}

bool hist_query_any_config(const hist_query *q) { return q->any_config; }
int64_t hist_query_last(const hist_query *q) { return q->last; }
bool hist_query_only_ids(const hist_query *q) { return q->np > 0 && !q->other_terms; }

int hist_query_prepare(history *h, const hist_query *q, const char *cols, const char *join, const char *extra, int64_t limit,
                       sqlite3_stmt **st, int *first_free, char *err, size_t errlen) {
    char *ex = extra ? renumber(extra, q->np + 1) : NULL;
    if (!join) join = "";
    size_t cap = strlen(cols) + strlen(join) + q->wlen + (ex ? strlen(ex) : 0) + 200;
    char *sql = malloc(cap);
    if (!sql || (extra && !ex)) { free(sql); free(ex); snprintf(err, errlen, "out of memory"); return -1; }
    const char *w = q->wlen ? q->where : "1";
    int64_t last = q->last;
    if (limit > 0 && (!last || limit < last)) last = limit;
    /* the newest `last`, returned oldest first (the first column is always r.id) */
    if (last)
        snprintf(sql, cap, "SELECT * FROM (SELECT %s FROM run r %s WHERE %s%s%s ORDER BY r.id DESC LIMIT %lld) ORDER BY 1", cols,
                 join, w, ex ? " AND " : "", ex ? ex : "", (long long)last);
    else
        snprintf(sql, cap, "SELECT %s FROM run r %s WHERE %s%s%s ORDER BY r.id", cols, join, w, ex ? " AND " : "", ex ? ex : "");
    free(ex);
    int rc = sqlite3_prepare_v2(h->db, sql, -1, st, NULL);
    free(sql);
    if (rc != SQLITE_OK) return hist_sql_err(h, rc, "cannot query", err, errlen);
    for (int i = 0; i < q->np; i++) {
        if (q->p[i].is_int) sqlite3_bind_int64(*st, i + 1, q->p[i].i);
        else sqlite3_bind_text(*st, i + 1, q->p[i].text, -1, SQLITE_STATIC);
    }
    if (first_free) *first_free = q->np + 1;
    return 0;
}

char *hist_query_ids_sql(const hist_query *q) {
    if (!q->wlen && !q->last) return NULL;
    char *sql = NULL;
    const char *w = q->wlen ? q->where : "1";
    int rc = q->last ? asprintf(&sql, "SELECT r.id FROM run r WHERE %s ORDER BY r.id DESC LIMIT %lld", w, (long long)q->last)
                     : asprintf(&sql, "SELECT r.id FROM run r WHERE %s", w);
    return rc < 0 ? NULL : sql;
}

int hist_prepare_in(history *h, const hist_query *q, const char *head, const char *column, const char *tail, sqlite3_stmt **st,
                    char *err, size_t errlen) {
    char *ids = hist_query_ids_sql(q), *sql = NULL;
    bool where = strstr(head, " WHERE ") != NULL;
    if (asprintf(&sql, "%s%s%s%s%s%s", head, ids ? (where ? " AND " : " WHERE ") : "", ids ? column : "", ids ? " IN (" : "",
                 ids ? ids : "", ids ? ")" : "") < 0 || !sql) { free(ids); snprintf(err, errlen, "out of memory"); return -1; }
    free(ids);
    char *full = NULL;
    if (asprintf(&full, "%s %s", sql, tail ? tail : "") < 0) full = NULL;
    free(sql);
    if (!full) { snprintf(err, errlen, "out of memory"); return -1; }
    int rc = sqlite3_prepare_v2(h->db, full, -1, st, NULL);
    free(full);
    if (rc != SQLITE_OK) return hist_sql_err(h, rc, "cannot query", err, errlen);
    hist_query_bind(*st, q);
    return 0;
}

void hist_query_bind(sqlite3_stmt *st, const hist_query *q) {
    for (int i = 0; i < q->np; i++) {
        if (q->p[i].is_int) sqlite3_bind_int64(st, i + 1, q->p[i].i);
        else sqlite3_bind_text(st, i + 1, q->p[i].text, -1, SQLITE_STATIC);
    }
}

/* ---- labels, read in run order alongside another ordered read ---- */

struct hist_label_cursor {
    sqlite3_stmt *st;
    int64_t id;           /* the run the current row is for; INT64_MAX at the end */
};

hist_label_cursor *hist_label_cursor_open(history *h, int64_t from_id) {
    hist_label_cursor *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    if (sqlite3_prepare_v2(h->db, "SELECT run_id, group_concat(key || '=' || value, ', ') FROM run_label WHERE run_id >= ? "
                           "GROUP BY run_id ORDER BY run_id", -1, &c->st, NULL) != SQLITE_OK) { free(c); return NULL; }
    sqlite3_bind_int64(c->st, 1, from_id);
    c->id = sqlite3_step(c->st) == SQLITE_ROW ? sqlite3_column_int64(c->st, 0) : INT64_MAX;
    return c;
}

const char *hist_label_cursor_get(hist_label_cursor *c, int64_t id) {
    if (!c) return NULL;
    while (c->id < id) c->id = sqlite3_step(c->st) == SQLITE_ROW ? sqlite3_column_int64(c->st, 0) : INT64_MAX;
    return c->id == id ? (const char *)sqlite3_column_text(c->st, 1) : NULL;
}

void hist_label_cursor_close(hist_label_cursor *c) {
    if (!c) return;
    sqlite3_finalize(c->st);
    free(c);
}

/* ---- selections ---- */

void history_ids_free(history_ids *s) {
    free(s->ids);
    s->ids = NULL;
    s->n = 0;
}

static int ids_push(history_ids *s, size_t *cap, int64_t id) {
    if (s->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        int64_t *v = realloc(s->ids, nc * sizeof *v);
        if (!v) return -1;
        s->ids = v;
        *cap = nc;
    }
    s->ids[s->n++] = id;
    return 0;
}

/* The ids of a parsed query with an optional extra condition (bound from `args`: int64s). */
static int select_ids(history *h, const hist_query *q, const char *extra, const int64_t *args, int n_args, const char *text_arg,
                      history_ids *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st;
    int first;
    if (hist_query_prepare(h, q, "r.id", NULL, extra, 0, &st, &first, err, errlen) < 0) return -1;
    for (int i = 0; i < n_args; i++) sqlite3_bind_int64(st, first + i, args[i]);
    if (text_arg) sqlite3_bind_text(st, first + n_args, text_arg, -1, SQLITE_STATIC);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (ids_push(out, &cap, sqlite3_column_int64(st, 0)) < 0) { rc = SQLITE_NOMEM; break; }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) { history_ids_free(out); return hist_sql_err(h, rc, "cannot query", err, errlen); }
    return 0;
}

int history_select(history *h, const char *query, history_ids *out, char *err, size_t errlen) {
    hist_query *q;
    memset(out, 0, sizeof *out);
    if (hist_query_parse(query, &q, err, errlen) < 0) return -1;
    int rc = select_ids(h, q, NULL, NULL, 0, NULL, out, err, errlen);
    hist_query_free(q);
    return rc;
}

/* The ids a query matches among runs before `before` (0: any) with configuration hash `config`
 * (NULL: any). */
int hist_select_before(history *h, const hist_query *q, int64_t before, const char *config, history_ids *out, char *err,
                       size_t errlen) {
    int64_t args[1] = { before > 0 ? before : INT64_MAX };
    return select_ids(h, q, config ? "r.id < ? AND r.config_hash = ?" : "r.id < ?", args, 1, config, out, err, errlen);
}

static char *one_text(history *h, const char *sql, int64_t id) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK) return NULL;
    sqlite3_bind_int64(st, 1, id);
    char *out = NULL;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) out = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return out;
}

char *hist_labels_text(history *h, int64_t id) {
    char *s = one_text(h, "SELECT group_concat(key || '=' || value, ', ') FROM "
                          "(SELECT key, value FROM run_label WHERE run_id = ? ORDER BY key)", id);
    return s ? s : strdup("");
}

char *hist_config_of(history *h, int64_t id) {
    return one_text(h, "SELECT json FROM config_def WHERE hash = (SELECT config_hash FROM run WHERE id = ?)", id);
}

char *hist_config_hash_of(history *h, int64_t id) { return one_text(h, "SELECT config_hash FROM run WHERE id = ?", id); }
