/* deployment — the report's section for a run from many hosts (results "dist"), for the GPUs
 * of a deployment that spans nodes (telemetry from every node) and for one split over several
 * GPUs: the ranks with their hosts, load shares and clock offsets, ranks that were lost and why;
 * every node's GPUs summarised on its own and the deployment as a whole, the slowest GPU named;
 * and each GPU on its own row (per load level of a sweep): utilisation, SM activity, memory, and
 * its share of the GPUs' busy time (what a tensor split evens). Nothing when the run came from
 * one process, one node and one GPU. */
#include "report/report_internal.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *s_of(const json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }

static void cell_num(rbuf *b, double v, const char *unit) {
    char t[48];
    fmt_num(v, t, sizeof t);
    rb_puts(b, "<td>");
    rb_esc(b, t);
    if (unit && isfinite(v)) rb_puts(b, unit);
    rb_puts(b, "</td>");
}

static void ranks_table(rbuf *b, const json_t *dist) {
    rb_printf(b, "<p>One job of %.0f MPI ranks on %.0f hosts, %.0f client threads (shards of one plan); rank 0's "
                 "clock is the time axis (largest clock uncertainty %.1f µs).</p>",
              rep_num(dist, "ranks"), rep_num(dist, "hosts"), rep_num(dist, "shards"),
              rep_num(json_object_get(dist, "clock"), "max_uncertainty_ns") / 1e3);
    rb_puts(b, "<div class=\"tablewrap\"><table><thead><tr><th>rank</th><th>host</th><th>role</th><th>threads</th>"
               "<th>requests</th><th>clock offset</th><th>± µs</th><th>drift ppm</th><th>status</th></tr></thead><tbody>");
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(dist, "rank_info"), i, r) {
        const json_t *clk = json_object_get(r, "clock");
        rb_printf(b, "<tr><td>%zu</td><td>", i);
        rb_esc(b, s_of(r, "host"));
        rb_puts(b, "</td><td>");
        rb_esc(b, s_of(r, "role"));
        rb_puts(b, "</td>");
        cell_num(b, rep_num(r, "client_threads"), NULL);
        cell_num(b, rep_num(r, "requests"), NULL);
        cell_num(b, rep_num(clk, "offset_ns") / 1e3, " µs");
        cell_num(b, rep_num(clk, "uncertainty_ns") / 1e3, NULL);
        cell_num(b, rep_num(clk, "drift_ppm"), NULL);
        bool lost = s_of(r, "status") && !strcmp(s_of(r, "status"), "lost");
        rb_puts(b, lost ? "<td class=\"bad\">lost: " : "<td>ok");
        if (lost) rb_esc(b, s_of(r, "lost_reason"));
        rb_puts(b, "</td></tr>");
    }
    rb_puts(b, "</tbody></table></div>");
}

static void gpu_row(rbuf *b, const char *what, const json_t *o) {
    rb_puts(b, "<tr><td>");
    rb_esc(b, what);
    rb_puts(b, "</td>");
    cell_num(b, rep_num(o, "gpus"), NULL);
    static const char *const keys[] = { "util_gpu_pct_mean", "sm_util_pct_mean", "tensor_util_pct_mean", "dram_bw_util_pct_mean" };
    for (size_t k = 0; k < 4; k++) cell_num(b, rep_num(o, keys[k]), "%");
    cell_num(b, rep_num(o, "power_w_mean_total"), " W");
    cell_num(b, rep_num(o, "energy_j") / 1e3, " kJ");
    rb_puts(b, "</tr>");
}

static void gpus_by_node(rbuf *b, const json_t *ts) {
    const json_t *nodes = json_object_get(ts, "nodes");
    size_t n_gpus = json_array_size(json_object_get(ts, "gpus"));
    if (json_array_size(nodes) < 2 || !n_gpus) return;
    rb_puts(b, "<h3>GPUs by node</h3><div class=\"tablewrap\"><table><thead><tr><th>node</th><th>GPUs</th><th>util</th>"
               "<th>SM</th><th>tensor</th><th>DRAM BW</th><th>power</th><th>energy</th></tr></thead><tbody>");
    size_t i;
    json_t *nd;
    json_array_foreach(nodes, i, nd) gpu_row(b, s_of(nd, "host") ? s_of(nd, "host") : "?", nd);
    json_t *whole = json_deep_copy(ts);
    json_object_set_new(whole, "gpus", json_integer((json_int_t)n_gpus));
    gpu_row(b, "whole deployment", whole);
    json_decref(whole);
    rb_puts(b, "</tbody></table></div>");
    const json_t *slow = json_object_get(ts, "slowest_gpu");
    if (slow) {
        rb_printf(b, "<p>Slowest GPU: <b>GPU %.0f on ", rep_num(slow, "index"));
        rb_esc(b, s_of(slow, "host"));
        rb_puts(b, "</b>: ");
        rb_esc(b, s_of(slow, "why"));
        rb_puts(b, ".</p>");
    }
}

static size_t n_gpus_of(const json_t *r) { return json_array_size(json_object_get(json_object_get(r, "telemetry_summary"), "gpus")); }

/* The series entry of a summary's GPU (same index and host): its name and memory size. */
static const json_t *gpu_entry(const json_t *r, const json_t *sg) {
    size_t i;
    json_t *g;
    const char *h = s_of(sg, "host");
    json_array_foreach(json_object_get(json_object_get(r, "telemetry"), "gpu"), i, g)
        if (rep_num(g, "index") == rep_num(sg, "index") && (!h || (s_of(g, "host") && !strcmp(h, s_of(g, "host"))))) return g;
    return NULL;
}

/* One row per GPU of one results document; level: the load label, NULL for a single run. */
static void gpu_rows(rbuf *b, const json_t *r, const char *level) {
    const json_t *gpus = json_object_get(json_object_get(r, "telemetry_summary"), "gpus");
    double busy_total = 0;
    size_t i;
    json_t *sg;
    json_array_foreach(gpus, i, sg) {
        double u = rep_num(json_object_get(sg, "util_gpu_pct"), "mean");
        if (isfinite(u)) busy_total += u;
    }
    json_array_foreach(gpus, i, sg) {
        const json_t *g = gpu_entry(r, sg);
        rb_puts(b, "<tr>");
        if (level) { rb_puts(b, "<td>"); rb_esc(b, level); rb_puts(b, "</td>"); }
        rb_printf(b, "<td>GPU %.0f", rep_num(sg, "index"));
        if (s_of(sg, "host")) { rb_puts(b, " on "); rb_esc(b, s_of(sg, "host")); }
        rb_puts(b, "</td><td>");
        rb_esc(b, s_of(g, "name"));
        rb_puts(b, "</td>");
        double u = rep_num(json_object_get(sg, "util_gpu_pct"), "mean");
        cell_num(b, u, "%");
        cell_num(b, rep_num(json_object_get(sg, "util_gpu_pct"), "max"), "%");
        cell_num(b, rep_num(json_object_get(sg, "sm_util_pct"), "mean"), "%");
        cell_num(b, rep_num(json_object_get(sg, "mem_used_mib"), "max") / 1024, " GiB");
        cell_num(b, rep_num(g, "mem_total_mib") / 1024, " GiB");
        cell_num(b, busy_total > 0 && isfinite(u) ? 100 * u / busy_total : NAN, "%");
        rb_puts(b, "</tr>");
    }
}

/* Each GPU of a deployment with two or more; for a sweep, per level. */
static void gpus_each(rbuf *b, const json_t *r, const rep_model *m) {
    bool levels = m && m->sweep && m->n > 1;
    rb_puts(b, "<h3>Each GPU</h3><p>Busy share: the GPU's mean utilisation over the sum of all GPUs' (a split that keeps "
               "every GPU equally busy gives each the same share; the busiest is the straggler).</p>"
               "<div class=\"tablewrap\"><table><thead><tr>");
    if (levels) rb_puts(b, "<th>load</th>");
    rb_puts(b, "<th>GPU</th><th>name</th><th>util mean</th><th>util max</th><th>SM</th><th>memory used</th>"
               "<th>memory</th><th>busy share</th></tr></thead><tbody>");
    if (!levels) gpu_rows(b, r, NULL);
    for (size_t i = 0; levels && i < m->n; i++) {
        if (n_gpus_of(m->lv[i].r) < 2) continue;
        char load[32];
        fmt_num(m->lv[i].load, load, sizeof load);
        gpu_rows(b, m->lv[i].r, load);
    }
    rb_puts(b, "</tbody></table></div>");
}

void report_deployment(rbuf *b, const json_t *r, const rep_model *m) {
    const json_t *dist = json_object_get(r, "dist"), *ts = json_object_get(r, "telemetry_summary");
    bool nodes = json_array_size(json_object_get(ts, "nodes")) >= 2;
    bool gpus = n_gpus_of(r) >= 2;
    for (size_t i = 0; m && !gpus && i < m->n; i++) gpus = n_gpus_of(m->lv[i].r) >= 2;
    if (!dist && !nodes && !gpus) return;
    rb_puts(b, "<section id=\"deployment\"><h2>Hosts and GPUs</h2>");
    if (dist) ranks_table(b, dist);
    if (nodes) gpus_by_node(b, ts);
    if (gpus) gpus_each(b, r, m);
    rb_puts(b, "</section>");
}
