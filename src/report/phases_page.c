/* phases_page — the report's "Reasoning and the server's side" section: per level the time to the
 * first answer token and the tokens and TPOT of each phase (reasoning models), the part of TTFT
 * the server never saw (its own per-request timing joined to the client's), tokens per decode
 * step (MTP), and any self-check the run failed. Shown only when the results carry them (metrics/phases.h). */
#include "report/report_internal.h"
#include "metrics/metric_table.h"
#include <math.h>
#include <stdio.h>

static void cell(rbuf *b, double v, const char *fmt) {
    char t[48];
    if (!isfinite(v)) snprintf(t, sizeof t, "n/a");
    else snprintf(t, sizeof t, fmt, v);
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

void report_phases_section(rbuf *b, const rep_model *m) {
    bool reasoning = false, server = false, check = false, spec = false;
    for (size_t i = 0; i < m->n; i++) {
        const json_t *r = m->lv[i].r;
        reasoning |= json_object_get(r, "reasoning_requests") != NULL;
        server |= json_object_get(r, "server_timing") != NULL;
        spec |= json_object_get(r, "spec_decode") != NULL;
        const json_t *ll = json_object_get(json_object_get(r, "self_check"), "littles_law");
        check |= json_is_string(json_object_get(ll, "reason"));
    }
    if (!reasoning && !server && !check && !spec) return;
    rb_puts(b, "<section id=\"phases\"><h2>Reasoning and the server's side</h2>");
    if (reasoning) {
        rb_puts(b, "<p class=\"note\">TTFA: time to the first answer token, after the reasoning phase (what a user waits "
                   "for). Reasoning TPOT: (TTFA − TTFT) / reasoning tokens; answer TPOT: (E2EL − TTFA) / (answer tokens − 1).</p>"
                   "<div class=\"tablewrap\"><table><thead><tr><th>load</th><th>reasoning requests</th><th>answered</th>"
                   "<th>mean reasoning tokens</th><th>mean answer tokens</th><th>TTFT p50 (ms)</th><th>TTFA p50 (ms)</th>"
                   "<th>TTFA p99 (ms)</th><th>reasoning TPOT (ms)</th><th>answer TPOT (ms)</th></tr></thead><tbody>");
        for (size_t i = 0; i < m->n; i++) {
            const json_t *r = m->lv[i].r;
            if (!json_object_get(r, "reasoning_requests")) continue;
            rb_puts(b, "<tr>");
            level_cell(b, m, &m->lv[i]);
            cell(b, rep_num(r, "reasoning_requests"), "%.0f");
            cell(b, rep_num(r, "reasoning_answered"), "%.0f");
            cell(b, rep_num(r, "mean_reasoning_tokens"), "%.1f");
            cell(b, rep_num(r, "mean_answer_tokens"), "%.1f");
            cell(b, rep_num(r, METRIC(median_ttft_ms)), "%.1f");
            cell(b, rep_num(r, METRIC(median_ttfa_ms)), "%.1f");
            cell(b, rep_num(r, METRIC(p99_ttfa_ms)), "%.1f");
            cell(b, rep_num(r, METRIC(mean_reasoning_tpot_ms)), "%.2f");
            cell(b, rep_num(r, METRIC(mean_answer_tpot_ms)), "%.2f");
            rb_puts(b, "</tr>");
        }
        rb_puts(b, "</tbody></table></div>");
    }
    if (server) {
        rb_puts(b, "<p class=\"note\">The server's own timing of each request (llama.cpp's <code>timings</code>, vLLM's "
                   "per-request <code>metrics</code>, SGLang's <code>meta_info</code>), joined request by request: TTFT "
                   "outside the server = the client's TTFT − the server's part (llama.cpp: its prompt evaluation; vLLM: its "
                   "queue + its TTFT from scheduling) — the client, the network, HTTP and tokenization (and llama.cpp's "
                   "wait for a free slot).</p>"
                   "<div class=\"tablewrap\"><table><thead><tr><th>load</th><th>source</th><th>joined</th>"
                   "<th>server queue p50 (ms)</th><th>server prefill p50 (ms)</th>"
                   "<th>outside p50 (ms)</th><th>outside p99 (ms)</th><th>outside share of TTFT</th><th>server TPOT (ms)</th>"
                   "<th>causality violations</th></tr></thead><tbody>");
        for (size_t i = 0; i < m->n; i++) {
            const json_t *st = json_object_get(m->lv[i].r, "server_timing");
            if (!st) continue;
            rb_puts(b, "<tr>");
            level_cell(b, m, &m->lv[i]);
            const char *src = json_string_value(json_object_get(st, "source"));
            rb_puts(b, "<td>");
            rb_esc(b, src ? src : "");
            rb_puts(b, "</td>");
            cell(b, rep_num(st, "requests_joined"), "%.0f");
            cell(b, rep_num(st, "median_server_queue_ms"), "%.2f");
            cell(b, rep_num(st, "median_server_prefill_ms"), "%.2f");
            cell(b, rep_num(st, "median_ttft_outside_server_ms"), "%.2f");
            cell(b, rep_num(st, "p99_ttft_outside_server_ms"), "%.2f");
            cell(b, 100 * rep_num(st, "ttft_outside_server_share"), "%.1f%%");
            cell(b, rep_num(st, "mean_server_tpot_ms"), "%.2f");
            cell(b, rep_num(st, "causality_violations"), "%.0f");
            rb_puts(b, "</tr>");
        }
        rb_puts(b, "</tbody></table></div>");
    }
    if (spec) {
        rb_puts(b, "<p class=\"note\">Tokens per decode step (MTP, speculative decoding): from the stream, a chunk of k "
                   "tokens is one step of k (the first chunk, the prefill's, left out); the server's own count where it "
                   "gives one. Acceptance against load is the column down the levels; against position in the output, "
                   "the first and the last span of output positions.</p>"
                   "<div class=\"tablewrap\"><table><thead><tr><th>load</th><th>tokens/step (stream)</th>"
                   "<th>tokens/step (server)</th><th>first positions</th><th>last positions</th></tr></thead><tbody>");
        for (size_t i = 0; i < m->n; i++) {
            const json_t *sd = json_object_get(m->lv[i].r, "spec_decode");
            if (!sd) continue;
            rb_puts(b, "<tr>");
            level_cell(b, m, &m->lv[i]);
            cell(b, rep_num(sd, "mean_acceptance_length"), "%.3f");
            cell(b, rep_num(json_object_get(sd, "server"), "acceptance_length"), "%.3f");
            const json_t *bp = json_object_get(sd, "by_position");
            size_t nb = json_array_size(bp);
            cell(b, nb ? rep_num(json_array_get(bp, 0), "acceptance_length") : NAN, "%.3f");
            cell(b, nb ? rep_num(json_array_get(bp, nb - 1), "acceptance_length") : NAN, "%.3f");
            rb_puts(b, "</tr>");
        }
        rb_puts(b, "</tbody></table></div>");
    }
    for (size_t i = 0; i < m->n; i++) {
        const json_t *ll = json_object_get(json_object_get(m->lv[i].r, "self_check"), "littles_law");
        const char *why = json_string_value(json_object_get(ll, "reason"));
        if (!why) continue;
        char lbl[48];
        rep_level_label(m, &m->lv[i], lbl, sizeof lbl);
        rb_puts(b, "<p><b>Self-check failed</b> — ");
        rb_esc(b, lbl);
        rb_puts(b, ": Little's law does not hold: ");
        rb_esc(b, why);
        rb_puts(b, "</p>");
    }
    rb_puts(b, "</section>");
}
