/* series — growable sample table (see series.h). */
#include "telemetry/series.h"
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void series_init(series *s, int ncols, const char *const *names, size_t max_rows) {
    memset(s, 0, sizeof *s);
    s->ncols = ncols;
    s->names = names;
    s->max_rows = max_rows;
}

void series_free(series *s) {
    free(s->t_ns);
    free(s->v);
    s->t_ns = NULL;
    s->v = NULL;
    s->n = s->cap = 0;
}

int series_append(series *s, int64_t t_ns, const double *row) {
    if (s->n >= s->max_rows) { s->dropped++; return -1; }
    if (s->n == s->cap) {
        size_t c = s->cap ? s->cap * 2 : 256;
        if (c > s->max_rows) c = s->max_rows;
        int64_t *t = realloc(s->t_ns, c * sizeof *t);
        if (!t) { s->dropped++; return -1; }
        s->t_ns = t;
        double *v = realloc(s->v, c * (size_t)s->ncols * sizeof *v);
        if (!v) { s->dropped++; return -1; }
        s->v = v;
        s->cap = c;
    }
    s->t_ns[s->n] = t_ns;
    memcpy(s->v + s->n * (size_t)s->ncols, row, (size_t)s->ncols * sizeof *row);
    s->n++;
    return 0;
}

json_t *json_num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

json_t *series_json(const series *s, int64_t t0_ns, uint64_t int_cols) {
    json_t *o = json_object(), *t = json_array();
    for (size_t i = 0; i < s->n; i++)
        json_array_append_new(t, json_real(round((double)(s->t_ns[i] - t0_ns) / 1e6) / 1e3));   /* ms precision */
    json_object_set_new(o, "t_s", t);
    for (int c = 0; c < s->ncols; c++) {
        json_t *a = json_array();
        bool as_int = c < 64 && (int_cols >> c & 1);
        for (size_t i = 0; i < s->n; i++) {
            double v = series_at(s, i, c);
            json_array_append_new(a, !isfinite(v) ? json_null() : as_int ? json_integer((json_int_t)v) : json_real(v));
        }
        json_object_set_new(o, s->names[c], a);
    }
    return o;
}

series_stat series_window(const series *s, int col, int64_t from_ns, int64_t to_ns) {
    series_stat st = {NAN, NAN, 0, 0};
    for (size_t i = 0; i < s->n; i++) {
        if (s->t_ns[i] < from_ns || s->t_ns[i] > to_ns) continue;
        double v = series_at(s, i, col);
        if (isnan(v)) continue;
        st.sum += v;
        if (!st.n || v > st.max) st.max = v;
        st.n++;
    }
    if (st.n) st.mean = st.sum / (double)st.n;
    return st;
}

json_t *series_stat_json(series_stat st) {
    if (!st.n) return json_null();
    return json_pack("{s:o,s:o}", "mean", json_num(st.mean), "max", json_num(st.max));
}
