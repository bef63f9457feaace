/* tune — grid, launch templates and the analysis of a tune document (per-config summaries, the
 * Pareto front, the recommendation, the table). Free of process control and I/O except the
 * printing, so it is tested on numbers. */
#include "tune/tune.h"
#include "metrics/metric_table.h"
#include "drift/drift.h"
#include "sweep/sweep.h"
#include "metrics/summary.h"
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- grid ---- */

void tune_grid_init(tune_grid *g) { memset(g, 0, sizeof *g); }

void tune_grid_free(tune_grid *g) {
    for (size_t i = 0; i < g->n; i++) {
        free(g->axes[i].key);
        for (size_t j = 0; j < g->axes[i].n; j++) free(g->axes[i].values[j]);
    }
    memset(g, 0, sizeof *g);
}

static bool ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static bool ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

static int add_value(tune_axis *a, const char *v, size_t len, char *err, size_t errlen) {
    for (size_t j = 0; j < a->n; j++)
        if (strlen(a->values[j]) == len && !strncmp(a->values[j], v, len)) {
            snprintf(err, errlen, "value '%.*s' given twice for grid key %s", (int)len, v, a->key);
            return -1;
        }
    if (a->n == TUNE_MAX_VALUES) { snprintf(err, errlen, "at most %d values per grid key", TUNE_MAX_VALUES); return -1; }
    a->values[a->n++] = strndup(v, len);
    return 0;
}

int tune_grid_add(tune_grid *g, const char *spec, char *err, size_t errlen) {
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec) { snprintf(err, errlen, "'%s' is not KEY=V1,V2,...", spec); return -1; }
    size_t klen = (size_t)(eq - spec);
    if (!ident_start(spec[0])) goto bad_key;
    for (size_t i = 1; i < klen; i++) if (!ident_char(spec[i])) goto bad_key;
    if (klen == 4 && !strncmp(spec, "port", 4)) {
        snprintf(err, errlen, "'port' is not a grid key: {port} is filled with a free port per configuration");
        return -1;
    }
    for (size_t i = 0; i < g->n; i++)
        if (strlen(g->axes[i].key) == klen && !strncmp(g->axes[i].key, spec, klen)) {
            snprintf(err, errlen, "grid key %.*s given twice; list its values once (KEY=V1,V2)", (int)klen, spec);
            return -1;
        }
    if (g->n == TUNE_MAX_KEYS) { snprintf(err, errlen, "at most %d grid keys", TUNE_MAX_KEYS); return -1; }
    tune_axis a = { .key = strndup(spec, klen) };
    const char *p = eq + 1;
    if (!*p) { snprintf(err, errlen, "grid key %s has no values (KEY=V1,V2,...)", a.key); free(a.key); return -1; }
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (!len) { snprintf(err, errlen, "empty value in '%s'", spec); goto fail; }
        char item[256];
        snprintf(item, sizeof item, "%.*s", (int)len, p);
        if (strstr(item, "..")) {
            /* a numeric range, as a sweep ladder writes it */
            double v[TUNE_MAX_VALUES];
            size_t nv = 0;
            char e2[256];
            if (sweep_parse_ladder(item, false, v, TUNE_MAX_VALUES, &nv, e2, sizeof e2) < 0) {
                snprintf(err, errlen, "grid %s: range '%s': %s", a.key, item, e2);
                goto fail;
            }
            for (size_t j = 0; j < nv; j++) {
                char num[64];
                snprintf(num, sizeof num, "%.15g", v[j]);
                if (add_value(&a, num, strlen(num), err, errlen) < 0) goto fail;
            }
        } else if (add_value(&a, p, len, err, errlen) < 0) goto fail;
        p += len;
        if (*p == ',') p++;
    }
    g->axes[g->n++] = a;
    return 0;
fail:
    free(a.key);
    for (size_t j = 0; j < a.n; j++) free(a.values[j]);
    return -1;
bad_key:
    snprintf(err, errlen, "grid key '%.*s' is not a name (letters, digits, _)", (int)klen, spec);
    return -1;
}

size_t tune_grid_size(const tune_grid *g) {
    size_t n = 1;
    for (size_t i = 0; i < g->n; i++) {
        if (n > TUNE_MAX_CONFIGS) return n;
        n *= g->axes[i].n;
    }
    return n;
}

void tune_grid_point(const tune_grid *g, size_t idx, size_t *choice) {
    for (size_t i = g->n; i-- > 0;) {
        choice[i] = idx % g->axes[i].n;
        idx /= g->axes[i].n;
    }
}

const char *tune_grid_lookup(const tune_grid *g, const size_t *choice, const char *key) {
    for (size_t i = 0; i < g->n; i++)
        if (!strcmp(g->axes[i].key, key)) return g->axes[i].values[choice[i]];
    return NULL;
}

char *tune_grid_label(const tune_grid *g, const size_t *choice) {
    size_t cap = 1;
    for (size_t i = 0; i < g->n; i++) cap += strlen(g->axes[i].key) + strlen(g->axes[i].values[choice[i]]) + 2;
    char *s = malloc(cap);
    if (!s) return NULL;
    s[0] = 0;
    size_t n = 0;
    for (size_t i = 0; i < g->n; i++)
        n += (size_t)snprintf(s + n, cap - n, "%s%s=%s", i ? " " : "", g->axes[i].key, g->axes[i].values[choice[i]]);
    if (!g->n) snprintf(s, cap, "%s", "");
    return s;
}

/* ---- templates ---- */

/* Finds the next placeholder at or after p (its name in *name, *nlen), returns its '{' (NULL when none). "{{"
 * and "${" are skipped (the caller copies them). */
static const char *next_placeholder(const char *start, const char *p, const char **name, size_t *nlen) {
    for (; *p; p++) {
        if (*p != '{') continue;
        if (p[1] == '{') { p++; continue; }
        if (p > start && p[-1] == '$') continue;
        const char *q = p + 1;
        if (!ident_start(*q)) continue;
        while (ident_char(*q)) q++;
        if (*q != '}') continue;
        *name = p + 1;
        *nlen = (size_t)(q - p - 1);
        return p;
    }
    return NULL;
}

static bool known_key(const tune_grid *g, const char *name, size_t nlen) {
    if (nlen == 4 && !strncmp(name, "port", 4)) return true;
    for (size_t i = 0; i < g->n; i++)
        if (strlen(g->axes[i].key) == nlen && !strncmp(g->axes[i].key, name, nlen)) return true;
    return false;
}

static void unknown_key_err(const tune_grid *g, const char *name, size_t nlen, char *err, size_t errlen) {
    char keys[512] = "port";
    size_t n = strlen(keys);
    for (size_t i = 0; i < g->n && n < sizeof keys; i++) n += (size_t)snprintf(keys + n, sizeof keys - n, ", %s", g->axes[i].key);
    snprintf(err, errlen, "unknown placeholder {%.*s}: add --grid %.*s=V1,V2 or remove it (known: %s)", (int)nlen, name,
             (int)nlen, name, keys);
}

int tune_template_check(const char *tmpl, const tune_grid *g, char *err, size_t errlen) {
    const char *name;
    size_t nlen;
    for (const char *p = tmpl; (p = next_placeholder(tmpl, p, &name, &nlen)); p = name + nlen + 1)
        if (!known_key(g, name, nlen)) { unknown_key_err(g, name, nlen, err, errlen); return -1; }
    return 0;
}

char *tune_template_render(const char *tmpl, const tune_grid *g, const size_t *choice, int port, bool strict,
                           char *err, size_t errlen) {
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f) { snprintf(err, errlen, "out of memory"); return NULL; }
    const char *p = tmpl;
    const char *name;
    size_t nlen;
    for (;;) {
        const char *ph = next_placeholder(tmpl, p, &name, &nlen);
        const char *stop = ph ? ph : p + strlen(p);
        /* copy the literal text, turning "{{" into '{' */
        for (const char *q = p; q < stop; q++) {
            fputc(*q, f);
            if (q[0] == '{' && q[1] == '{' && !(q > tmpl && q[-1] == '$')) q++;
        }
        if (!ph) break;
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)nlen, name);
        const char *v = tune_grid_lookup(g, choice, key);
        if (!strcmp(key, "port")) {
            if (port >= 0) fprintf(f, "%d", port);
            else fputs("{port}", f);
        }
        else if (v) fputs(v, f);
        else if (strict) { unknown_key_err(g, name, nlen, err, errlen); fclose(f); free(out); return NULL; }
        else fprintf(f, "{%s}", key);
        p = name + nlen + 1;
    }
    fclose(f);
    return out;
}

/* ---- analysis ---- */

static json_t *jnum(double x) { return isfinite(x) ? json_real(x) : json_null(); }
static double num(const json_t *o, const char *k) {
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

bool tune_objective_valid(const char *o) { return !strcmp(o, "e2el") || !strcmp(o, "ttft") || !strcmp(o, "tpot"); }

/* Mean of key over levels[first .. first+n) (repeats of one load), NAN when none has it. */
static double mean_over(const json_t *levels, size_t first, size_t n, const char *key) {
    double s = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        double v = num(json_object_get(json_array_get(levels, first + i), "results"), key);
        if (isfinite(v)) { s += v; k++; }
    }
    return k ? s / k : NAN;
}

json_t *tune_config_summary(const json_t *doc, double gpus, const char *objective) {
    const json_t *levels = json_object_get(doc, "levels");
    if (!json_array_size(levels)) return NULL;
    double per = gpus > 0 ? gpus : 1;
    const json_t *cfg = json_object_get(doc, "config");
    double pct = num(cfg, "slo_percentile");
    if (!isfinite(pct)) pct = 99;
    char plabel[32], lat_key[64];
    summary_percentile_label(pct, plabel, sizeof plabel);
    snprintf(lat_key, sizeof lat_key, "p%s_%s_ms", plabel, objective);
    /* the SLO the levels' goodput was judged on */
    const json_t *slo = NULL;
    size_t i;
    json_t *lv;
    json_array_foreach(levels, i, lv) if ((slo = json_object_get(json_object_get(lv, "results"), "goodput_slo"))) break;
    bool slo_given = json_is_object(slo) && json_object_size(slo) > 0;
    json_t *points = json_array();
    long best_slo = -1, best_out = -1;
    double best_slo_gp = -1, best_slo_tie = -1, best_out_v = -1;
    size_t first = 0;
    const char *axis = json_string_value(json_object_get(doc, "axis"));
    while (first < json_array_size(levels)) {
        const json_t *l0 = json_array_get(levels, first);
        double load = num(l0, "load");
        const char *kind = json_string_value(json_object_get(l0, "kind"));
        size_t n = 1;
        while (first + n < json_array_size(levels)) {
            const json_t *ln = json_array_get(levels, first + n);
            const char *k2 = json_string_value(json_object_get(ln, "kind"));
            if (num(ln, "load") != load || !kind || !k2 || strcmp(kind, k2)) break;
            n++;
        }
        double completed = mean_over(levels, first, n, "completed");
        double failed = mean_over(levels, first, n, "failed");
        double err_rate = completed + (isfinite(failed) ? failed : 0) > 0 ? (isfinite(failed) ? failed : 0) /
                          (completed + (isfinite(failed) ? failed : 0)) : NAN;
        /* a level whose requests mostly failed (a server that died, or refused) measured nothing
         * worth ranking: its latencies cover the few that got through */
        bool usable = completed > 0 && !(err_rate > TUNE_MAX_ERROR_RATE);
        double out = mean_over(levels, first, n, METRIC(output_throughput));
        double gp = mean_over(levels, first, n, METRIC(request_goodput));
        /* the spread of goodput over repeats: is one configuration's lead beyond noise? */
        double gv[64], gmean = NAN, gsd = NAN, glo = NAN, ghi = NAN;
        size_t gn = 0;
        for (size_t r = 0; r < n && gn < 64; r++) {
            double v = num(json_object_get(json_array_get(levels, first + r), "results"), METRIC(request_goodput));
            if (isfinite(v)) gv[gn++] = v;
        }
        if (gn >= 2) sweep_ci_mean(gv, gn, 0.95, &gmean, &gsd, &glo, &ghi);
        double lat = mean_over(levels, first, n, lat_key);
        bool sat = false;
        for (size_t r = 0; r < n; r++) sat = sat || json_is_true(json_object_get(json_array_get(levels, first + r), "saturated"));
        bool meets = usable;
        json_t *why = json_object();
        if (slo_given) {
            const char *metric;
            json_t *thr;
            json_object_foreach((json_t *)slo, metric, thr) {
                /* "ttft_ms" → p<P>_ttft_ms */
                char fk[64];
                snprintf(fk, sizeof fk, "p%s_%s", plabel, metric);
                double v = mean_over(levels, first, n, fk);
                bool ok = isfinite(v) && v <= json_number_value(thr);
                if (!ok) meets = false;
                json_object_set_new(why, fk, jnum(v));
            }
        }
        json_t *pt = json_object();
        json_object_set_new(pt, "load", jnum(load));
        json_object_set_new(pt, "kind", json_string(kind ? kind : ""));
        json_object_set_new(pt, "repeats", json_integer((json_int_t)n));
        json_object_set_new(pt, "completed", jnum(completed));
        json_object_set_new(pt, METRIC(output_throughput), jnum(out));
        json_object_set_new(pt, "output_throughput_per_gpu", jnum(out / per));
        json_object_set_new(pt, METRIC(request_goodput), jnum(gp));
        json_object_set_new(pt, "request_goodput_per_gpu", jnum(gp / per));
        json_object_set_new(pt, "request_goodput_per_gpu_ci95", gn >= 2 ? json_pack("[o,o]", jnum(glo / per), jnum(ghi / per))
                                                                          : json_null());
        json_object_set_new(pt, "latency_ms", jnum(lat));
        json_object_set_new(pt, "saturated", json_boolean(sat));
        json_object_set_new(pt, "error_rate", jnum(err_rate));
        json_object_set_new(pt, "usable", json_boolean(usable));
        json_object_set_new(pt, "meets_slo", slo_given ? json_boolean(meets) : json_null());
        json_object_set_new(pt, "slo_values", why);
        size_t idx = json_array_size(points);
        json_array_append_new(points, pt);
        if (usable && isfinite(out) && out > best_out_v) { best_out_v = out; best_out = (long)idx; }
        if (slo_given && meets && isfinite(gp) &&
            (gp > best_slo_gp || (gp == best_slo_gp && out > best_slo_tie))) {
            best_slo_gp = gp;
            best_slo_tie = out;
            best_slo = (long)idx;
        }
        first += n;
    }
    json_t *s = json_object();
    json_object_set_new(s, "axis", json_string(axis ? axis : ""));
    json_object_set_new(s, "latency_field", json_string(lat_key));
    json_object_set_new(s, "gpus", gpus > 0 ? json_real(gpus) : json_null());
    json_object_set_new(s, "points", points);
    const json_t *kn = json_object_get(doc, "knee");
    if (json_is_object(kn)) {
        double out = num(kn, METRIC(output_throughput));
        json_t *k = json_object();
        json_object_set_new(k, "load", jnum(num(kn, "load")));
        json_object_set_new(k, METRIC(output_throughput), jnum(out));
        json_object_set_new(k, "output_throughput_per_gpu", jnum(out / per));
        json_object_set_new(k, METRIC(request_throughput), jnum(num(kn, METRIC(request_throughput))));
        json_object_set_new(k, METRIC(p99_ttft_ms), jnum(num(kn, METRIC(p99_ttft_ms))));
        json_object_set_new(k, METRIC(p99_tpot_ms), jnum(num(kn, METRIC(p99_tpot_ms))));
        json_object_set_new(k, METRIC(p99_e2el_ms), jnum(num(kn, METRIC(p99_e2el_ms))));
        json_object_set_new(k, "method", json_deep_copy(json_object_get(kn, "method")));
        json_object_set_new(s, "knee", k);
    } else {
        json_object_set_new(s, "knee", json_null());
    }
    json_object_set_new(s, "knee_note", json_deep_copy(json_object_get(doc, "knee_note")));
    if (best_out >= 0) {
        const json_t *p = json_array_get(points, (size_t)best_out);
        json_object_set_new(s, "max_output_throughput", json_pack("{s:O,s:O,s:O,s:O}", "load", json_object_get(p, "load"),
            METRIC(output_throughput), json_object_get(p, METRIC(output_throughput)), "output_throughput_per_gpu",
            json_object_get(p, "output_throughput_per_gpu"), "latency_ms", json_object_get(p, "latency_ms")));
    } else {
        json_object_set_new(s, "max_output_throughput", json_null());
    }
    const json_t *mg = json_object_get(doc, METRIC(max_goodput));
    json_object_set_new(s, METRIC(max_goodput), json_is_object(mg)
        ? json_pack("{s:O,s:O,s:o,s:O}", "load", json_object_get(mg, "load"), METRIC(request_goodput),
                    json_object_get(mg, METRIC(request_goodput)), "request_goodput_per_gpu",
                    jnum(num(mg, METRIC(request_goodput)) / per), METRIC(slo_boundary_load), json_object_get(mg, METRIC(slo_boundary_load)))
        : json_null());
    json_object_set_new(s, "slo", slo_given ? json_deep_copy(slo) : json_null());
    json_object_set_new(s, "slo_percentile", json_real(pct));
    json_object_set_new(s, "meets_slo", slo_given ? json_boolean(best_slo >= 0) : json_null());
    if (best_slo >= 0) {
        const json_t *p = json_array_get(points, (size_t)best_slo);
        json_object_set_new(s, "goodput_under_slo", json_pack("{s:O,s:O,s:O,s:O,s:O,s:O,s:O}", "load", json_object_get(p, "load"),
            METRIC(request_goodput), json_object_get(p, METRIC(request_goodput)), "request_goodput_per_gpu",
            json_object_get(p, "request_goodput_per_gpu"), "request_goodput_per_gpu_ci95",
            json_object_get(p, "request_goodput_per_gpu_ci95"), METRIC(output_throughput), json_object_get(p, METRIC(output_throughput)),
            "output_throughput_per_gpu", json_object_get(p, "output_throughput_per_gpu"), "latency_ms",
            json_object_get(p, "latency_ms")));
    } else {
        json_object_set_new(s, "goodput_under_slo", json_null());
    }
    return s;
}

size_t tune_pareto(const double *x, const double *y, size_t n, bool *on_front) {
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        on_front[i] = isfinite(x[i]) && isfinite(y[i]);
        for (size_t j = 0; j < n && on_front[i]; j++) {
            if (j == i || !isfinite(x[j]) || !isfinite(y[j])) continue;
            if (x[j] >= x[i] && y[j] <= y[i] && (x[j] > x[i] || y[j] < y[i])) on_front[i] = false;
        }
        if (on_front[i]) count++;
    }
    return count;
}

long tune_recommend(const tune_cand *c, size_t n) {
    long best = -1;
    for (size_t i = 0; i < n; i++) {
        if (!c[i].measured || !c[i].eligible || !isfinite(c[i].score)) continue;
        if (best < 0 || c[i].score > c[best].score ||
            (c[i].score == c[best].score && c[i].tiebreak > c[best].tiebreak)) best = (long)i;
    }
    return best;
}

/* A figure for a sentence: 3 significant digits, whole numbers from 1000 up. */
static const char *human(char *b, size_t n, double v) {
    if (!isfinite(v)) snprintf(b, n, "-");
    else if (fabs(v) >= 1000) snprintf(b, n, "%.0f", v);
    else snprintf(b, n, "%.3g", v);
    return b;
}

/* What the recommendation compares: the score of configuration i and the load and latency at it. */
typedef struct {
    double score, out_per_gpu, latency, load;
} rank_view;

static bool config_view(const json_t *c, bool slo, rank_view *v) {
    const json_t *s = json_object_get(c, "summary");
    if (!json_is_object(s)) return false;
    const json_t *at = slo ? json_object_get(s, "goodput_under_slo") : json_object_get(s, "max_output_throughput");
    if (!json_is_object(at)) return false;
    v->score = slo ? num(at, "request_goodput_per_gpu") : num(at, "output_throughput_per_gpu");
    v->out_per_gpu = num(at, "output_throughput_per_gpu");
    v->latency = num(at, "latency_ms");
    v->load = num(at, "load");
    return true;
}

static const char *cfg_label(const json_t *c) {
    const char *l = json_string_value(json_object_get(c, "label"));
    return l && *l ? l : "(no grid)";
}

int tune_analyse(json_t *doc) {
    json_t *configs = json_object_get(doc, "configs");
    size_t nc = json_array_size(configs);
    const char *objective = json_string_value(json_object_get(doc, "objective"));
    if (!objective) objective = "e2el";
    bool slo = json_object_size(json_object_get(doc, "slo")) > 0;
    /* every measured (config, load) point joins the front */
    size_t np = 0, cap = 16;
    double *x = malloc(cap * sizeof *x), *y = malloc(cap * sizeof *y);
    size_t *pc = malloc(cap * sizeof *pc), *pl = malloc(cap * sizeof *pl);
    tune_cand *cand = calloc(nc ? nc : 1, sizeof *cand);
    if (!x || !y || !pc || !pl || !cand) { free(x); free(y); free(pc); free(pl); free(cand); return -1; }
    const char *lat_field = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(configs, i, c) {
        const json_t *s = json_object_get(c, "summary");
        if (!json_is_object(s)) continue;
        if (!lat_field) lat_field = json_string_value(json_object_get(s, "latency_field"));
        size_t j;
        json_t *p;
        json_array_foreach(json_object_get(s, "points"), j, p) {
            if (!json_is_true(json_object_get(p, "usable"))) continue;
            if (np == cap) {
                cap *= 2;
                x = realloc(x, cap * sizeof *x); y = realloc(y, cap * sizeof *y);
                pc = realloc(pc, cap * sizeof *pc); pl = realloc(pl, cap * sizeof *pl);
            }
            x[np] = num(p, "output_throughput_per_gpu");
            y[np] = num(p, "latency_ms");
            pc[np] = i;
            pl[np++] = j;
        }
        rank_view v;
        cand[i].measured = config_view(c, slo, &v) || (slo && json_is_object(json_object_get(s, "max_output_throughput")));
        cand[i].eligible = config_view(c, slo, &v);
        cand[i].score = cand[i].eligible ? v.score : NAN;
        cand[i].tiebreak = cand[i].eligible ? v.out_per_gpu : NAN;
        json_object_set_new(c, "on_front", json_false());
    }
    bool *front = calloc(np ? np : 1, sizeof *front);
    tune_pareto(x, y, np, front);
    json_t *fp = json_array();
    /* the front in order of throughput, so it reads as a curve */
    size_t *ord = malloc((np ? np : 1) * sizeof *ord), no = 0;
    for (size_t k = 0; k < np; k++) if (front[k]) ord[no++] = k;
    for (size_t a = 1; a < no; a++)
        for (size_t b = a; b > 0 && x[ord[b]] < x[ord[b - 1]]; b--) { size_t t = ord[b]; ord[b] = ord[b - 1]; ord[b - 1] = t; }
    size_t last = (size_t)-1;
    for (size_t k = 0; k < no; k++) {
        size_t q = ord[k];
        json_t *cc = json_array_get(configs, pc[q]);
        json_object_set_new(cc, "on_front", json_true());
        /* configurations that behave alike at a load (below their limits, settings often do not
         * matter) give one front entry, naming the others */
        if (last != (size_t)-1 && fabs(x[q] - x[last]) <= TUNE_ALIKE * fabs(x[last]) &&
            fabs(y[q] - y[last]) <= TUNE_ALIKE * fabs(y[last])) {
            json_t *prev = json_array_get(fp, json_array_size(fp) - 1);
            json_array_append_new(json_object_get(prev, "alike"), json_pack("{s:I,s:s}", "config", (json_int_t)pc[q], "label",
                                                                            cfg_label(cc)));
            continue;
        }
        last = q;
        const json_t *p = json_array_get(json_object_get(json_object_get(cc, "summary"), "points"), pl[q]);
        json_array_append_new(fp, json_pack("{s:I,s:s,s:O,s:f,s:f,s:O,s:[]}", "config", (json_int_t)pc[q], "label", cfg_label(cc),
            "load", json_object_get(p, "load"), "output_throughput_per_gpu", x[q], "latency_ms", y[q], "meets_slo",
            json_object_get(p, "meets_slo"), "alike"));
    }
    free(ord);
    char ydesc[128];
    snprintf(ydesc, sizeof ydesc, "%s (lower is better)", lat_field ? lat_field : "latency");
    json_object_set_new(doc, "pareto", json_pack("{s:s,s:s,s:s,s:o}", "x", "output_throughput_per_gpu (higher is better)",
        "y", ydesc, "method", "every usable (configuration, load) point; kept when no other point has at least its "
        "throughput per GPU and at most its latency, one of them strictly; points within 0.5% on both axes are one "
        "entry (\"alike\" names the others)", "front", fp));
    free(x); free(y); free(pc); free(pl); free(front);

    long best = tune_recommend(cand, nc);
    if (best < 0) {
        json_object_set_new(doc, "recommendation", json_null());
        json_object_set_new(doc, "recommendation_note", json_string(slo ? "no configuration met the SLO at any measured load"
                                                                        : "no configuration was measured"));
        free(cand);
        return 0;
    }
    /* compare with the default (configuration 0) or, when the default wins, the weakest measured */
    long ref = 0;
    if (best == 0 || !cand[0].measured) {
        ref = -1;
        for (size_t k = 0; k < nc; k++) {
            if ((long)k == best || !cand[k].measured) continue;
            double sk = cand[k].eligible ? cand[k].score : 0;
            double sr = ref < 0 ? INFINITY : (cand[ref].eligible ? cand[ref].score : 0);
            if (sk < sr) ref = (long)k;
        }
    }
    const json_t *bc = json_array_get(configs, (size_t)best);
    rank_view bv;
    config_view(bc, slo, &bv);
    const char *unit = slo ? "req/s of goodput per GPU under the SLO" : "output tok/s per GPU";
    const char *axis = json_string_value(json_object_get(json_object_get(bc, "summary"), "axis"));
    bool conc = axis && !strcmp(axis, "concurrency");
    char buys[768], h1[32], h2[32], h3[32];
    int n = slo ? snprintf(buys, sizeof buys, "%s: %s %s at %s %s, %s output tok/s per GPU, %s %.0f ms", cfg_label(bc),
                           human(h1, sizeof h1, bv.score), unit, conc ? "concurrency" : "rate", human(h2, sizeof h2, bv.load),
                           human(h3, sizeof h3, bv.out_per_gpu), lat_field ? lat_field : "latency", bv.latency)
                : snprintf(buys, sizeof buys, "%s: %s %s at %s %s, %s %.0f ms", cfg_label(bc), human(h1, sizeof h1, bv.score),
                           unit, conc ? "concurrency" : "rate", human(h2, sizeof h2, bv.load),
                           lat_field ? lat_field : "latency", bv.latency);
    if (ref >= 0 && n > 0 && (size_t)n < sizeof buys) {
        const json_t *rc = json_array_get(configs, (size_t)ref);
        rank_view rv;
        if (config_view(rc, slo, &rv) && rv.score > 0)
            snprintf(buys + n, sizeof buys - (size_t)n, "; %.2fx the %s %s (%s at %s %s, %.0f ms)", bv.score / rv.score,
                     ref == 0 ? "default" : "weakest", cfg_label(rc), human(h1, sizeof h1, rv.score),
                     conc ? "concurrency" : "rate", human(h2, sizeof h2, rv.load), rv.latency);
        else
            snprintf(buys + n, sizeof buys - (size_t)n, "; the %s %s %s", ref == 0 ? "default" : "weakest", cfg_label(rc),
                     slo ? "met the SLO at no measured load" : "completed no request");
    }
    /* the runner-up, and whether the lead is beyond the repeats' noise */
    long second = -1;
    for (size_t k = 0; k < nc; k++) {
        if ((long)k == best || !cand[k].measured || !cand[k].eligible || !isfinite(cand[k].score)) continue;
        if (second < 0 || cand[k].score > cand[second].score) second = (long)k;
    }
    json_t *ru = json_null();
    if (second >= 0) {
        const json_t *sc = json_array_get(configs, (size_t)second);
        const json_t *bci = json_object_get(json_object_get(json_object_get(bc, "summary"), "goodput_under_slo"),
                                            "request_goodput_per_gpu_ci95");
        const json_t *sci = json_object_get(json_object_get(json_object_get(sc, "summary"), "goodput_under_slo"),
                                            "request_goodput_per_gpu_ci95");
        const char *sep = "single runs: --repeats N tells the lead from noise";
        if (slo && json_array_size(bci) == 2 && json_array_size(sci) == 2) {
            double blo = json_number_value(json_array_get(bci, 0)), shi = json_number_value(json_array_get(sci, 1));
            sep = blo > shi ? "separated: the 95% goodput intervals do not overlap"
                            : "not separated: the 95% goodput intervals overlap";
        } else if (!slo) sep = "ranked on throughput: no interval";
        double lead = cand[second].score > 0 ? bv.score / cand[second].score : NAN;
        /* a lead can be statistically clear and still too small to act on */
        ru = json_pack("{s:I,s:s,s:o,s:o,s:b,s:s}", "config", (json_int_t)second, "label", cfg_label(sc), "score",
                       jnum(cand[second].score), "lead", jnum(lead), "marginal", isfinite(lead) && lead < TUNE_MARGINAL_LEAD,
                       "noise", sep);
    }
    json_t *r = json_object();
    json_object_set_new(r, "config", json_integer(best));
    json_object_set_new(r, "label", json_string(cfg_label(bc)));
    json_object_set_new(r, "settings", json_deep_copy(json_object_get(bc, "settings")));
    json_object_set_new(r, "ranked_by", json_string(slo ? "highest request goodput per GPU at a load where every SLO holds at "
                                                          "the SLO percentile" : "highest output throughput per GPU (no --slo)"));
    json_object_set_new(r, "score", jnum(bv.score));
    json_object_set_new(r, "load", jnum(bv.load));
    json_object_set_new(r, "compared_with", ref >= 0 ? json_integer(ref) : json_null());
    json_object_set_new(r, "buys", json_string(buys));
    json_object_set_new(r, "runner_up", ru);
    /* a simulated tune (--sim-flags): the score is the simulator's, so it carries the simulator's
     * 80% interval (its throughput factor: the score is a goodput or throughput per GPU) */
    double fx = json_number_value(json_object_get(json_object_get(doc, "sim_interval"), "throughput_factor"));
    if (fx > 1 && isfinite(bv.score))
        json_object_set_new(r, "score_interval_80", json_pack("[f,f]", bv.score / fx, bv.score * fx));
    json_object_set_new(doc, "recommendation", r);
    json_object_set_new(doc, "recommendation_note", json_null());
    drift_annotate_tune(doc, json_object_get(doc, "drift"));   /* a KV-dtype change: its accuracy cost, or "untested" */
    free(cand);
    return 0;
}

/* ---- printing ---- */

static void fmt(char *b, size_t n, double v, const char *f) {
    if (isfinite(v)) snprintf(b, n, f, v);
    else snprintf(b, n, "-");
}

void tune_print(FILE *f, const json_t *doc) {
    const json_t *configs = json_object_get(doc, "configs");
    const json_t *rec = json_object_get(doc, "recommendation");
    long best = json_is_object(rec) ? (long)json_integer_value(json_object_get(rec, "config")) : -1;
    bool slo = json_object_size(json_object_get(doc, "slo")) > 0;
    const char *obj = json_string_value(json_object_get(doc, "objective"));
    double pct = num(doc, "slo_percentile");
    char plabel[32], lathead[48];
    summary_percentile_label(isfinite(pct) ? pct : 99, plabel, sizeof plabel);
    snprintf(lathead, sizeof lathead, "p%s %s", plabel, obj ? obj : "e2el");
    fprintf(f, "%-2s %-3s %-22s %-11s %13s %16s %15s %9s\n", "", "#", "settings", "status", slo ? "goodput/GPU" : "max tok/s/GPU",
            "knee tok/s/GPU", "knee TTFT/TPOT", lathead);
    size_t i;
    const json_t *c;
    bool gpus_unknown = false;
    json_array_foreach(configs, i, c) {
        const json_t *s = json_object_get(c, "summary");
        const char *st = json_string_value(json_object_get(c, "status"));
        if (json_is_object(s) && !json_is_number(json_object_get(c, "gpus"))) gpus_unknown = true;
        char a[32] = "-", k[32] = "-", tt[40] = "-", l[32] = "-";
        if (json_is_object(s)) {
            const json_t *g = slo ? json_object_get(s, "goodput_under_slo") : json_object_get(s, "max_output_throughput");
            if (json_is_object(g)) {
                char v[16];
                fmt(v, sizeof v, num(g, slo ? "request_goodput_per_gpu" : "output_throughput_per_gpu"), "%.3g");
                snprintf(a, sizeof a, "%s@%.4g", v, num(g, "load"));
                fmt(l, sizeof l, num(g, "latency_ms"), "%.0f");
            } else if (slo) snprintf(a, sizeof a, "no SLO load");
            const json_t *kn = json_object_get(s, "knee");
            if (json_is_object(kn)) {
                char v[16];
                fmt(v, sizeof v, num(kn, "output_throughput_per_gpu"), "%.4g");
                snprintf(k, sizeof k, "%s@%.4g", v, num(kn, "load"));
                char t1[16], t2[16];
                fmt(t1, sizeof t1, num(kn, METRIC(p99_ttft_ms)), "%.0f");
                fmt(t2, sizeof t2, num(kn, METRIC(p99_tpot_ms)), "%.1f");
                snprintf(tt, sizeof tt, "%s/%s", t1, t2);
            }
        }
        char mark[8] = "";
        snprintf(mark, sizeof mark, "%s%s", (long)i == best ? "*" : "", json_is_true(json_object_get(c, "on_front")) ? "P" : "");
        fprintf(f, "%-2s %-3zu %-22.22s %-11.11s %13s %16s %15s %9s\n", mark, i, cfg_label(c), st ? st : "?", a, k, tt, l);
    }
    fprintf(f, "(value@load; * recommended, P on the Pareto front; knee p99 TTFT/TPOT and %s in ms, the latter\n"
               " at the %s column's load; per GPU%s)\n", lathead, slo ? "goodput" : "max throughput",
            gpus_unknown ? " = per configuration: GPUs unknown (--gpus)" : "");
    const json_t *front = json_object_get(json_object_get(doc, "pareto"), "front");
    if (json_array_size(front)) {
        fprintf(f, "Pareto front (output tok/s per GPU vs %s):\n", json_string_value(json_object_get(json_object_get(doc, "pareto"), "y")));
        const json_t *p;
        json_array_foreach(front, i, p)
        {
            char lab[64];
            size_t alike = json_array_size(json_object_get(p, "alike"));
            if (alike) snprintf(lab, sizeof lab, "%.18s (+%zu alike)", json_string_value(json_object_get(p, "label")), alike);
            else snprintf(lab, sizeof lab, "%s", json_string_value(json_object_get(p, "label")));
            fprintf(f, "  %-30.30s load %-8.4g %10.1f tok/s/GPU %8.0f ms%s\n", lab, num(p, "load"),
                    num(p, "output_throughput_per_gpu"), num(p, "latency_ms"),
                    json_is_false(json_object_get(p, "meets_slo")) ? "  (misses the SLO)" : "");
        }
    }
    if (json_is_object(rec)) {
        fprintf(f, "Recommendation: %s\n", json_string_value(json_object_get(rec, "buys")));
        const json_t *iv = json_object_get(rec, "score_interval_80"), *si = json_object_get(doc, "sim_interval");
        if (json_array_size(iv) == 2) {
            char sc[32], lo[32], hi[32];
            fprintf(f, "  simulated: its score %s is %s-%s at 80%% (the simulator's interval: throughput x/%.2f, TPOT x/%.2f)\n",
                    human(sc, sizeof sc, num(rec, "score")), human(lo, sizeof lo, json_number_value(json_array_get(iv, 0))),
                    human(hi, sizeof hi, json_number_value(json_array_get(iv, 1))), num(si, "throughput_factor"),
                    num(si, "tpot_factor"));
        }
        const json_t *ru = json_object_get(rec, "runner_up");
        if (json_is_object(ru))
            fprintf(f, "Runner-up: %s, %.2fx behind%s; %s\n", json_string_value(json_object_get(ru, "label")),
                    num(ru, "lead"), json_is_true(json_object_get(ru, "marginal")) ? " (marginal: < 5%)" : "",
                    json_string_value(json_object_get(ru, "noise")));
    }
    else fprintf(f, "No recommendation: %s\n", json_string_value(json_object_get(doc, "recommendation_note")));
    const char *note = json_string_value(json_object_get(doc, "target_note"));
    if (note) fprintf(f, "Note: %s\n", note);
}
