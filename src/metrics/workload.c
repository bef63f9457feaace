/* workload — prefix-cache hit rates (measured and the workload's bound) and multi-turn
 * conversations, from the records (workload.h). */
#include "metrics/workload.h"
#include "metrics/metric_table.h"
#include "metrics/stats.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *jreal(double x) { return isfinite(x) ? json_real(x) : json_null(); }

static double ttft_ms(const record *r) { return (double)(r->first_ns - r->send_ns) / 1e6; }
static bool has_ttft(const record *r) { return r->outcome == REC_OK && r->first_ns > 0 && r->send_ns > 0; }

/* {"n", "mean_ms", "median_ms", "p<P>_ms" for the run's percentiles} of samples (sorted here). */
static json_t *stat_block(stats_samples *s, const summary_opts *o) {
    stats_sort(s);
    json_t *b = json_object();
    json_object_set_new(b, "n", json_integer((json_int_t)s->n));
    json_object_set_new(b, "mean_ms", jreal(stats_mean(s->v, s->n)));
    json_object_set_new(b, "median_ms", jreal(stats_percentile_sorted(s->v, s->n, 50)));
    for (int i = 0; i < o->n_percentiles; i++) {
        char p[32], key[48];
        summary_percentile_label(o->percentiles[i], p, sizeof p);
        snprintf(key, sizeof key, "p%s_ms", p);
        json_object_set_new(b, key, jreal(stats_percentile_sorted(s->v, s->n, o->percentiles[i])));
    }
    return b;
}

/* Sums over a set of records for the two hit rates. */
typedef struct {
    long long cached, prompt_server;   /* over requests the server reported cached tokens for */
    long long cacheable, prompt_sent;  /* over requests with a known bound */
    long reported, bounded, llamacpp;
} cache_sums;

static void cache_add(cache_sums *c, const record *r) {
    if (r->outcome != REC_OK) return;
    if (r->cached_tokens >= 0 && r->in_tokens_server > 0) {
        c->cached += r->cached_tokens;
        c->prompt_server += r->in_tokens_server;
        c->reported++;
        c->llamacpp += r->prompt_eval_server >= 0;
    }
    if (r->cacheable_tokens >= 0 && r->in_tokens > 0) {
        c->cacheable += r->cacheable_tokens;
        c->prompt_sent += r->in_tokens;
        c->bounded++;
    }
}

static void cache_put(json_t *o, const cache_sums *c) {
    json_object_set_new(o, "hit_rate", c->reported ? jreal((double)c->cached / (double)c->prompt_server) : json_null());
    json_object_set_new(o, "hit_rate_bound", c->bounded ? jreal((double)c->cacheable / (double)c->prompt_sent) : json_null());
}

json_t *workload_prefix_cache(const recset *recs, const summary_opts *o) {
    cache_sums c = {0};
    stats_samples hit, miss;
    stats_init(&hit);
    stats_init(&miss);
    for (size_t i = 0; i < recs->n; i++) {
        const record *r = &recs->v[i];
        if (r->warmup) continue;
        cache_add(&c, r);
        if (!has_ttft(r) || r->cached_tokens < 0 || r->in_tokens_server <= 0) continue;
        bool is_hit = r->cached_tokens > WORKLOAD_HIT_SHARE * r->in_tokens_server;
        stats_add(is_hit ? &hit : &miss, ttft_ms(r));
    }
    if (!c.reported && !c.bounded) { stats_free(&hit); stats_free(&miss); return NULL; }
    json_t *p = json_object();
    cache_put(p, &c);
    json_object_set_new(p, "source", !c.reported ? json_null()
                        : json_string(c.llamacpp == c.reported ? "llamacpp_timings" : c.llamacpp ? "mixed" : "usage_cached_tokens"));
    json_object_set_new(p, "reported_requests", json_integer(c.reported));
    json_object_set_new(p, "cached_tokens", json_integer(c.cached));
    json_object_set_new(p, "prompt_tokens_server", json_integer(c.prompt_server));
    json_object_set_new(p, "bounded_requests", json_integer(c.bounded));
    json_object_set_new(p, "cacheable_tokens", json_integer(c.cacheable));
    json_object_set_new(p, "prompt_tokens_sent", json_integer(c.prompt_sent));
    /* the measured share of what the workload allowed: 1 = the cache held everything it could */
    json_object_set_new(p, "hit_rate_of_bound", c.reported && c.bounded && c.cacheable > 0
                        ? jreal(((double)c.cached / (double)c.prompt_server) / ((double)c.cacheable / (double)c.prompt_sent))
                        : json_null());
    json_object_set_new(p, "hit_share", json_real(WORKLOAD_HIT_SHARE));
    json_object_set_new(p, "ttft_hit", stat_block(&hit, o));
    json_object_set_new(p, "ttft_miss", stat_block(&miss, o));
    stats_free(&hit);
    stats_free(&miss);
    return p;
}

/* The sum of a per-interval counter column over every scrape of the run (the series starts with a
 * reading before the first request and ends with one after the last); NAN when never known. */
static double series_total(const json_t *series, const char *col) {
    const json_t *a = json_object_get(series, col);
    double sum = 0;
    size_t i, n = 0;
    json_t *v;
    json_array_foreach(a, i, v) if (json_is_number(v)) { sum += json_number_value(v); n++; }
    return n ? sum : NAN;
}

void workload_add_metrics_hit_rate(json_t *results) {
    json_t *srv = json_object_get(json_object_get(results, "telemetry_summary"), "server");
    if (!srv) return;
    const json_t *series = json_object_get(json_object_get(json_object_get(results, "telemetry"), "server"), "series");
    const char *engine = json_string_value(json_object_get(srv, "source"));
    json_t *pct = json_object_get(srv, "prefix_cache_hit_rate_pct");
    double hits = series_total(series, "prefix_cache_hits"), queries = series_total(series, "prefix_cache_queries");
    double evaluated = series_total(series, "prompt_tokens");
    double usage = json_number_value(json_object_get(results, "total_input_tokens_server"));
    double rate = NAN;
    const char *how = NULL;
    if (queries > 0 && hits >= 0) { rate = hits / queries; how = "prefix cache hits / queries over the run"; }
    else if (json_is_number(pct)) { rate = json_number_value(pct) / 100; how = "the engine's hit-rate gauge"; }
    else if (engine && !strcmp(engine, "llamacpp") && isfinite(evaluated) && usage > 0) {
        rate = 1 - evaluated / usage;
        if (rate < 0) rate = 0;
        how = "1 - prompt tokens evaluated / prompt tokens in usage";
    }
    if (!isfinite(rate)) return;
    json_t *pc = json_object_get(results, "prefix_cache");
    if (!pc) { pc = json_object(); json_object_set_new(results, "prefix_cache", pc); }
    json_object_set_new(pc, "hit_rate_metrics", json_real(rate));
    json_object_set_new(pc, "metrics_source", json_pack("{s:s,s:s}", "engine", engine ? engine : "unknown", "how", how));
}

/* ---- conversations ---- */

static int by_session_turn(const void *a, const void *b) {
    const record *x = *(const record *const *)a, *y = *(const record *const *)b;
    if (x->session != y->session) return x->session < y->session ? -1 : 1;
    return x->turn < y->turn ? -1 : x->turn > y->turn;
}

/* One conversation's records (sorted by turn): its summary line; *end gets how it ended. */
static json_t *session_line(const record *const *v, size_t n, int turns, const char **end) {
    const record *last = v[n - 1];
    size_t ok = 0;
    long long out = 0;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i]->outcome != REC_OK) continue;
        ok++;
        out += record_out_tokens(v[i]);
        if (has_ttft(v[i])) sum += ttft_ms(v[i]);
    }
    *end = last->outcome == REC_OK ? ((int)n >= turns ? "completed" : "cut")
         : last->outcome == REC_ERR_CANCELLED ? "cut" : "error";
    json_t *s = json_object();
    json_object_set_new(s, "session", json_integer((json_int_t)last->session - 1));
    json_object_set_new(s, "turns", json_integer((json_int_t)ok));
    json_object_set_new(s, "end", json_string(*end));
    json_object_set_new(s, "error", !strcmp(*end, "error") ? json_string(rec_outcome_name((rec_outcome)last->outcome)) : json_null());
    json_object_set_new(s, METRIC(mean_ttft_ms), ok ? jreal(sum / (double)ok) : json_null());
    json_object_set_new(s, "first_ttft_ms", has_ttft(v[0]) ? jreal(ttft_ms(v[0])) : json_null());
    json_object_set_new(s, "last_ttft_ms", ok && has_ttft(v[ok - 1]) ? jreal(ttft_ms(v[ok - 1])) : json_null());
    json_object_set_new(s, "last_input_tokens", ok ? json_integer(v[ok - 1]->in_tokens) : json_null());
    json_object_set_new(s, "output_tokens", json_integer(out));
    return s;
}

json_t *workload_sessions(const recset *recs, const summary_opts *o) {
    size_t n = 0;
    for (size_t i = 0; i < recs->n; i++) n += recs->v[i].session && !recs->v[i].warmup;
    if (!n) return NULL;
    const record **v = malloc(n * sizeof *v);
    if (!v) return NULL;
    size_t k = 0;
    int max_turn = 0;
    for (size_t i = 0; i < recs->n; i++) {
        const record *r = &recs->v[i];
        if (!r->session || r->warmup) continue;
        v[k++] = r;
        if (r->turn > max_turn) max_turn = r->turn;
    }
    qsort(v, n, sizeof *v, by_session_turn);
    int turns = o->session_turns > 0 ? o->session_turns : max_turn + 1;
    json_t *list = json_array();
    long conversations = 0, completed = 0, errored = 0, cut = 0;
    for (size_t a = 0, b; a < n; a = b) {
        for (b = a + 1; b < n && v[b]->session == v[a]->session; b++) {}
        const char *end;
        json_t *line = session_line(v + a, b - a, turns, &end);
        conversations++;
        completed += !strcmp(end, "completed");
        errored += !strcmp(end, "error");
        cut += !strcmp(end, "cut");
        if (json_array_size(list) < WORKLOAD_MAX_SESSIONS_LISTED) json_array_append_new(list, line);
        else json_decref(line);
    }
    json_t *by_turn = json_array();
    for (int t = 0; t <= max_turn; t++) {
        stats_samples ttft;
        stats_init(&ttft);
        cache_sums c = {0};
        long sent = 0, ok = 0;
        double in_sum = 0;
        for (size_t i = 0; i < n; i++) {
            if (v[i]->turn != t) continue;
            sent++;
            cache_add(&c, v[i]);
            if (v[i]->outcome != REC_OK) continue;
            ok++;
            in_sum += v[i]->in_tokens;
            if (has_ttft(v[i])) stats_add(&ttft, ttft_ms(v[i]));
        }
        json_t *e = json_object();
        json_object_set_new(e, "turn", json_integer(t));
        json_object_set_new(e, "requests", json_integer(sent));
        json_object_set_new(e, "completed", json_integer(ok));
        json_object_set_new(e, "mean_input_tokens", ok ? jreal(in_sum / (double)ok) : json_null());
        json_object_set_new(e, "ttft", stat_block(&ttft, o));
        cache_put(e, &c);
        json_array_append_new(by_turn, e);
        stats_free(&ttft);
    }
    free(v);
    json_t *s = json_object();
    json_object_set_new(s, "conversations", json_integer(conversations));
    json_object_set_new(s, "turns_planned", json_integer(turns));
    json_object_set_new(s, "completed", json_integer(completed));
    json_object_set_new(s, "ended_by_error", json_integer(errored));
    json_object_set_new(s, "cut_by_run_end", json_integer(cut));
    json_object_set_new(s, "by_turn", by_turn);
    json_object_set_new(s, "per_session", list);
    json_object_set_new(s, "per_session_listed_max", json_integer(WORKLOAD_MAX_SESSIONS_LISTED));
    return s;
}
