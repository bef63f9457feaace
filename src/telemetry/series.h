/* series — a growable table of timestamped samples (one row per tick, fixed named columns,
 * NaN = unknown) with a hard row cap, and its JSON form {"t_s":[...], "<col>":[...]}. */
#ifndef DSP_SERIES_H
#define DSP_SERIES_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int ncols;
    const char *const *names;   /* static column names */
    size_t n, cap, max_rows;
    int64_t *t_ns;
    double *v;                  /* row-major: v[row * ncols + col] */
    size_t dropped;             /* rows refused because max_rows was reached */
} series;

void series_init(series *s, int ncols, const char *const *names, size_t max_rows);
void series_free(series *s);
/* Appends one row (ncols values). Returns 0, or -1 when full/out of memory (counted in dropped). */
int series_append(series *s, int64_t t_ns, const double *row);
static inline double series_at(const series *s, size_t row, int col) { return s->v[row * (size_t)s->ncols + col]; }
/* {"t_s":[..], name:[..]...}; times relative to t0_ns in seconds; NaN -> null. Columns listed in
 * int_cols (bitmask by column index < 64) are written as integers. */
json_t *series_json(const series *s, int64_t t0_ns, uint64_t int_cols);

/* Window statistics over rows with from_ns <= t <= to_ns, NaN skipped. */
typedef struct { double mean, max, sum; size_t n; } series_stat;
series_stat series_window(const series *s, int col, int64_t from_ns, int64_t to_ns);
/* {"mean":x,"max":y} or null when no known value in the window. */
json_t *series_stat_json(series_stat st);
/* A double as JSON: null when NaN/inf. */
json_t *json_num(double v);
#endif
