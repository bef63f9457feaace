/* cache_page — the report's "Prefix cache and conversations" section: per level the hit rate the
 * server reported (usage, /metrics) beside the hit rate the workload allows, and TTFT on hits and
 * misses; for conversations, TTFT and prompt length by turn (does the cache hold the history?).
 * Shown only when the results carry them (metrics/workload.h). */
#include "report/report_internal.h"
#include <math.h>
#include <stdio.h>

static void cell(rbuf *b, double v, const char *unit_fmt) {
    char t[48];
    if (!isfinite(v)) snprintf(t, sizeof t, "n/a");
    else if (unit_fmt) snprintf(t, sizeof t, unit_fmt, v);
    else fmt_num(v, t, sizeof t);
    rb_puts(b, "<td>");
    rb_esc(b, t);
    rb_puts(b, "</td>");
}

static void level_cell(rbuf *b, const rep_model *m, const rep_level *l) {
    char ll[48];
    rep_level_label(m, l, ll, sizeof ll);
    rb_puts(b, "<td>");
    rb_esc(b, ll);
    rb_puts(b, "</td>");
}

void report_cache_section(rbuf *b, const rep_model *m) {
    const json_t *sess = NULL;
    bool any = false;
    for (size_t i = 0; i < m->n; i++) {
        any |= json_object_get(m->lv[i].r, "prefix_cache") != NULL;
        if (!sess) sess = json_object_get(m->lv[i].r, "sessions");
    }
    if (!any && !sess) return;
    rb_puts(b, "<section id=\"cache\"><h2>Prefix cache and conversations</h2>");
    if (any) {
        rb_puts(b, "<p class=\"note\">Hit rates are shares of prompt tokens. <i>Allowed</i> is what a prefix cache of "
                   "unbounded size could have served, from the workload's repeated blocks and histories; a hit is a request "
                   "with more than half its prompt cached.</p><div class=\"tablewrap\"><table><thead><tr><th>load</th>"
                   "<th>hit rate (usage)</th><th>hit rate (/metrics)</th><th>allowed</th><th>TTFT p50 hit (ms)</th>"
                   "<th>TTFT p50 miss (ms)</th><th>hits / misses</th></tr></thead><tbody>");
        for (size_t i = 0; i < m->n; i++) {
            const json_t *pc = json_object_get(m->lv[i].r, "prefix_cache");
            if (!pc) continue;
            const json_t *h = json_object_get(pc, "ttft_hit"), *x = json_object_get(pc, "ttft_miss");
            rb_puts(b, "<tr>");
            level_cell(b, m, &m->lv[i]);
            cell(b, 100 * rep_num(pc, "hit_rate"), "%.1f%%");
            cell(b, 100 * rep_num(pc, "hit_rate_metrics"), "%.1f%%");
            cell(b, 100 * rep_num(pc, "hit_rate_bound"), "%.1f%%");
            cell(b, rep_num(h, "median_ms"), NULL);
            cell(b, rep_num(x, "median_ms"), NULL);
            rb_printf(b, "<td>%.0f / %.0f</td></tr>", rep_num(h, "n") >= 0 ? rep_num(h, "n") : 0, rep_num(x, "n") >= 0 ? rep_num(x, "n") : 0);
        }
        rb_puts(b, "</tbody></table></div>");
    }
    if (sess) {
        rb_printf(b, "<p>%.0f conversations: %.0f completed, %.0f ended by an error, %.0f cut by the run's end.</p>",
                  rep_num(sess, "conversations"), rep_num(sess, "completed"), rep_num(sess, "ended_by_error"),
                  rep_num(sess, "cut_by_run_end"));
        rb_puts(b, "<div class=\"tablewrap\"><table><thead><tr><th>turn</th><th>requests</th><th>mean prompt tokens</th>"
                   "<th>TTFT p50 (ms)</th><th>TTFT p99 (ms)</th><th>hit rate</th><th>allowed</th></tr></thead><tbody>");
        size_t i;
        const json_t *t;
        json_array_foreach(json_object_get(sess, "by_turn"), i, t) {
            const json_t *tt = json_object_get(t, "ttft");
            rb_printf(b, "<tr><td>%zu</td>", i);
            cell(b, rep_num(t, "requests"), NULL);
            cell(b, rep_num(t, "mean_input_tokens"), NULL);
            cell(b, rep_num(tt, "median_ms"), NULL);
            cell(b, rep_num(tt, "p99_ms"), NULL);
            cell(b, 100 * rep_num(t, "hit_rate"), "%.1f%%");
            cell(b, 100 * rep_num(t, "hit_rate_bound"), "%.1f%%");
            rb_puts(b, "</tr>");
        }
        rb_puts(b, "</tbody></table></div>");
    }
    rb_puts(b, "</section>");
}
