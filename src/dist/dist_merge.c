/* dist_merge — the job-level sections of a merged result: the client's cost per rank and in
 * total, the telemetry of every node on the job's clock, and the "dist" section (ranks, hosts,
 * shards, each rank's clock offset, its uncertainty and drift, lost ranks and why). */
#include "dist/dist_int.h"
#include "telemetry/telemetry.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double num(const json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : 0;
}


/* Totals over ranks: CPU and chunks add up, the core share is in cores (summed over hosts),
 * CPU per chunk is total CPU over total chunks, the largest RSS is the one that matters. */
json_t *dist_client_merge(const dist *d, const json_t *own) {
    json_t *ranks = json_array();
    double user = 0, sys = 0, share = 0, chunks = 0, cps = 0, rss = 0;
    for (int r = 0; r < d->size; r++) {
        const json_t *c = r == 0 ? own : d->ri[r].client;
        if (!c) continue;
        json_t *e = json_deep_copy(c);
        json_object_set_new(e, "rank", json_integer(r));
        json_object_set_new(e, "host", json_string(d->ri[r].host));
        json_object_set_new(e, "threads", json_integer(d->ri[r].threads));
        json_array_append_new(ranks, e);
        user += num(c, "cpu_user_s");
        sys += num(c, "cpu_sys_s");
        share += num(c, "cpu_core_share");
        chunks += num(c, "chunks");
        cps += num(c, "chunks_per_s");
        if (num(c, "max_rss_kib") > rss) rss = num(c, "max_rss_kib");
    }
    json_t *t = json_object();
    json_object_set_new(t, "cpu_user_s", json_real(user));
    json_object_set_new(t, "cpu_sys_s", json_real(sys));
    json_object_set_new(t, "cpu_core_share", json_real(share));
    json_object_set_new(t, "chunks", json_integer((json_int_t)chunks));
    json_object_set_new(t, "cpu_us_per_chunk", chunks > 0 ? json_real((user + sys) * 1e6 / chunks) : json_null());
    json_object_set_new(t, "chunks_per_s", json_real(cps));
    json_object_set_new(t, "max_rss_kib", json_integer((json_int_t)rss));
    json_object_set_new(t, "threads", json_integer(d->plan.shard_total));
    json_object_set_new(t, "ranks", ranks);
    return t;
}

static json_t *clock_json(const rank_info *ri, int r) {
    if (r == 0)
        return json_pack("{s:i,s:i,s:i,s:i,s:i,s:b}", "offset_ns", 0, "uncertainty_ns", 0, "rtt_min_ns", 0,
                         "rtt_median_ns", 0, "samples", 0, "reference", 1);
    json_t *c = json_pack("{s:I,s:I,s:I,s:I,s:i}", "offset_ns", (json_int_t)ri->clk.offset_ns,
                          "uncertainty_ns", (json_int_t)ri->clk.uncertainty_ns, "rtt_min_ns", (json_int_t)ri->clk.rtt_min_ns,
                          "rtt_median_ns", (json_int_t)ri->clk.rtt_median_ns, "samples", ri->clk.samples);
    if (ri->clk_end_at_ns > ri->clk_at_ns) {
        int64_t drift = ri->clk_end.offset_ns - ri->clk.offset_ns;
        double span_s = (double)(ri->clk_end_at_ns - ri->clk_at_ns) / 1e9;
        json_object_set_new(c, "end_offset_ns", json_integer((json_int_t)ri->clk_end.offset_ns));
        json_object_set_new(c, "end_uncertainty_ns", json_integer((json_int_t)ri->clk_end.uncertainty_ns));
        json_object_set_new(c, "drift_ns", json_integer((json_int_t)drift));
        json_object_set_new(c, "drift_ppm", json_real(span_s > 0 ? drift / span_s / 1e3 : 0));
        /* the follower applied the drift when it exceeded both measurements' errors */
        json_object_set_new(c, "drift_applied",
                            json_boolean(llabs(drift) > ri->clk.uncertainty_ns + ri->clk_end.uncertainty_ns));
    } else {
        json_object_set_new(c, "drift_ns", json_null());
    }
    return c;
}

json_t *dist_section(const dist *d, const dist_merged *m) {
    json_t *ranks = json_array(), *lost = json_array();
    int hosts = 0, samplers = 0;
    int64_t umax = 0;
    for (int r = 0; r < d->size; r++) {
        const rank_info *ri = &d->ri[r];
        bool first_on_host = true;
        for (int q = 0; q < r; q++) if (!strcmp(d->ri[q].host, ri->host)) first_on_host = false;
        hosts += first_on_host;
        samplers += ri->samples_only;
        if (r > 0 && ri->clk.uncertainty_ns > umax) umax = ri->clk.uncertainty_ns;
        json_t *e = json_pack("{s:i,s:s,s:i,s:s,s:b,s:i,s:i,s:I,s:o,s:s}", "rank", r, "host", ri->host, "pid", ri->pid,
                              "role", ri->samples_only ? "telemetry" : "load", "node_leader", ri->leader,
                              "client_threads", ri->threads, "shard_base", ri->shard_base,
                              "requests", (json_int_t)ri->records, "clock", clock_json(ri, r),
                              "status", ri->stage == RS_LOST ? "lost" : "ok");
        json_object_set_new(e, "lost_reason", ri->stage == RS_LOST ? json_string(ri->why) : json_null());
        if (r > 0) json_object_set_new(e, "bytes_received", json_integer((json_int_t)ri->bytes));
        json_array_append_new(ranks, e);
        if (ri->stage == RS_LOST)
            json_array_append_new(lost, json_pack("{s:i,s:s,s:s}", "rank", r, "host", ri->host, "why", ri->why));
    }
    (void)m;
    return json_pack("{s:s,s:i,s:i,s:i,s:i,s:i,s:{s:s,s:s,s:i,s:I},s:o,s:o}", "engine", "Open MPI",
                     "ranks", d->size, "load_ranks", d->n_load_ranks, "telemetry_ranks", samplers, "hosts", hosts,
                     "shards", d->plan.shard_total, "clock", "reference", "rank 0's CLOCK_MONOTONIC",
                     "method", "MPI ping-pong, the exchange with the shortest round trip (offset = rank 0's time - the "
                               "midpoint; error <= half that round trip) of 32 to 128 (more while no round trip is under "
                               "40 us), measured at the start and the end of each run", "exchanges_min", 32, "max_uncertainty_ns", (json_int_t)umax, "rank_info", ranks, "lost_ranks", lost);
}

void dist_telemetry_merge(dist *d, dist_merged *m, const dist_local *loc) {
    telemetry_node *nodes = calloc((size_t)d->size, sizeof *nodes);
    json_t *own_series = NULL, *own_summary = NULL;
    if (!nodes) return;
    int n = 0;
    if (loc->tel) {
        own_series = telemetry_series_json(loc->tel, m->lo.start_ns);
        own_summary = telemetry_summary_json(loc->tel, m->lo.start_ns, m->lo.end_ns, 0);
        nodes[n++] = (telemetry_node){ d->ri[0].host, 0, own_series, own_summary };
    }
    for (int r = 1; r < d->size; r++)
        if (d->ri[r].tel_series || d->ri[r].tel_summary)
            nodes[n++] = (telemetry_node){ d->ri[r].host, r, d->ri[r].tel_series, d->ri[r].tel_summary };
    if (n) {
        /* energy per output token: the job's tokens, as the summary counts them */
        double out_tokens = 0;
        for (size_t i = 0; i < m->recs.n; i++)
            if (!m->recs.v[i].warmup && m->recs.v[i].outcome == REC_OK) out_tokens += record_out_tokens(&m->recs.v[i]);
        m->telemetry = telemetry_merge_series(nodes, n);
        m->telemetry_summary = telemetry_merge_summary(nodes, n, out_tokens);
    }
    json_decref(own_series);
    json_decref(own_summary);
    for (int r = 1; r < d->size; r++) {
        json_decref(d->ri[r].tel_series);
        json_decref(d->ri[r].tel_summary);
        d->ri[r].tel_series = d->ri[r].tel_summary = NULL;
    }
    free(nodes);
}
