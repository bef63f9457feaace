/* deployment — the report's section for a run from many hosts (results "dist") and for the GPUs
 * of a deployment that spans nodes (telemetry from every node): the ranks with their hosts,
 * load shares and clock offsets, ranks that were lost and why; every node's GPUs summarised on
 * its own and the deployment as a whole, and the slowest GPU named. Nothing when the run came
 * from one process and one node. */
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

void report_deployment(rbuf *b, const json_t *r) {
    const json_t *dist = json_object_get(r, "dist"), *ts = json_object_get(r, "telemetry_summary");
    bool nodes = json_array_size(json_object_get(ts, "nodes")) >= 2;
    if (!dist && !nodes) return;
    rb_puts(b, "<section id=\"deployment\"><h2>Hosts and GPUs</h2>");
    if (dist) ranks_table(b, dist);
    if (nodes) gpus_by_node(b, ts);
    rb_puts(b, "</section>");
}
