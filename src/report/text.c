/* text — the report's plain formats: Markdown (verdict, findings, the per-load table, errors,
 * the reproduce command) for pasting into issues and PRs, and CSV with one row per load level
 * (one row for a single run) of the headline metrics, for spreadsheets and scripts. */
#include "report/report_internal.h"
#include "metrics/metric_table.h"
#include "metrics/summary.h"
#include "common/redact.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *str(const json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }

/* ---- Markdown ---- */

static void md_num(rbuf *b, double v) {
    char t[48];
    fmt_num(v, t, sizeof t);
    rb_printf(b, " %s |", t);
}

static void md_pct(rbuf *b, double v) {
    char t[32];
    fmt_pct_cell(v, t, sizeof t);
    rb_printf(b, " %s |", t);
}

static void md_pair(rbuf *b, double x, double y, double slo) {
    char a[48], c[48];
    fmt_num(x, a, sizeof a);
    fmt_num(y, c, sizeof c);
    bool bad = !isnan(slo) && y > slo;
    rb_printf(b, " %s / %s%s%s |", a, bad ? "**" : "", c, bad ? "** \xe2\x9c\x97" : "");
}

static void md_finding_list(rbuf *b, const rep_model *m, const json_t *list);

static void md_findings(rbuf *b, const rep_model *m, const json_t *diagnosis) {
    rb_puts(b, "\n## Findings\n\n");
    const json_t *list = json_object_get(diagnosis, "findings"), *cfg = json_object_get(diagnosis, "configuration");
    if (!diagnosis) { rb_puts(b, "No diagnosis available for this document.\n"); return; }
    if (json_array_size(cfg)) {
        /* a rate beyond physics: the assumed deployment is wrong, which is no bottleneck */
        rb_puts(b, "**Configuration: the assumed deployment cannot be right.**\n\n");
        md_finding_list(b, m, cfg);
        rb_puts(b, "\n");
    }
    const json_t *warns = json_object_get(diagnosis, "warnings");
    size_t i;
    json_t *w;
    json_array_foreach(warns, i, w) {
        rb_puts(b, "> **Warning");
        double wl = rep_num(w, "level");
        if (!isnan(wl)) { char ll[48]; rep_load_label(m, wl, ll, sizeof ll); rb_puts(b, " at "); rb_md_cell(b, ll); }
        rb_puts(b, ":** ");
        rb_md_cell(b, json_string_value(json_object_get(w, "message")));
        rb_puts(b, "\n\n");
    }
    if (!json_array_size(list)) { rb_puts(b, "The diagnosis found nothing to report.\n"); return; }
    md_finding_list(b, m, list);
}

static void md_finding_list(rbuf *b, const rep_model *m, const json_t *list) {
    size_t i;
    json_t *f;
    json_array_foreach(list, i, f) {
        rb_printf(b, "%zu. **", i + 1);
        rb_md_cell(b, str(f, "title") ? str(f, "title") : "(untitled finding)");
        rb_puts(b, "**");
        if (str(f, "class")) { rb_puts(b, " — `"); rb_md_cell(b, str(f, "class")); rb_puts(b, "`"); }
        double conf = rep_num(f, "confidence");
        if (!isnan(conf)) rb_printf(b, ", confidence %.0f%%", 100 * conf);
        double lvl = rep_num(f, "level");
        if (!isnan(lvl)) {
            char ll[32];
            rep_load_label(m, lvl, ll, sizeof ll);
            rb_printf(b, ", at %s", ll);
        }
        rb_puts(b, "\n");
        size_t j;
        json_t *e;
        json_array_foreach(json_object_get(f, "evidence"), j, e) {
            rb_puts(b, "   - ");
            rb_md_cell(b, str(e, "text"));
            const json_t *v = json_object_get(e, "value");
            const char *text = str(e, "text");
            /* the number is usually in the sentence already */
            if (json_is_number(v) && !(text && strpbrk(text, "0123456789"))) {
                char t[48];
                fmt_num(json_number_value(v), t, sizeof t);
                rb_printf(b, " **%s", t);
                if (str(e, "unit")) { rb_puts(b, " "); rb_md_cell(b, str(e, "unit")); }
                rb_puts(b, "**");
            }
            rb_puts(b, "\n");
        }
        /* where each number came from: folded, as on the page, not in the sentences */
        bool any_src = false;
        json_array_foreach(json_object_get(f, "evidence"), j, e) {
            if (!str(e, "source")) continue;
            if (!any_src) rb_puts(b, "\n   <details><summary>where the numbers come from</summary>\n\n");
            any_src = true;
            rb_printf(b, "   %zu. `", j + 1);
            rb_md_cell(b, str(e, "source"));
            rb_puts(b, "`\n");
        }
        if (any_src) rb_puts(b, "\n   </details>\n\n");
        json_array_foreach(json_object_get(f, "knobs"), j, e) {
            rb_puts(b, "   - knob **");
            rb_md_cell(b, str(e, "knob"));
            rb_puts(b, "**");
            if (str(e, "direction")) { rb_puts(b, " ("); rb_md_cell(b, str(e, "direction")); rb_puts(b, ")"); }
            if (str(e, "effect")) { rb_puts(b, ": "); rb_md_cell(b, str(e, "effect")); }
            rb_puts(b, "\n");
        }
    }
}

static void md_table(rbuf *b, const rep_model *m) {
    rb_printf(b, "\n## %s\n\n", m->sweep ? "Per-load results" : "Run summary");
    /* telemetry columns only where some level sampled them (as on the page) */
    bool gpu, dram, kv;
    rep_telemetry_columns(m, &gpu, &dram, &kv);
    rb_puts(b, "| load | req/s | out tok/s | goodput req/s | TTFT p50 / p99 (ms) | TPOT p50 / p99 (ms) |"
               " ITL p99 (ms) | E2EL p99 (ms) | queue p99 (ms) | err % |");
    if (gpu) rb_puts(b, " GPU util % |");
    if (kv) rb_puts(b, " KV peak % |");
    rb_puts(b, "\n|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    if (gpu) rb_puts(b, "--:|");
    if (kv) rb_puts(b, "--:|");
    rb_puts(b, "\n");
    for (size_t i = 0; i < m->n; i++) {
        const rep_level *l = &m->lv[i];
        const json_t *r = l->r;
        char ll[48];
        rep_level_label(m, l, ll, sizeof ll);
        rb_printf(b, "| %s%s%s%s |", l->is_knee ? "**\xe2\x96\xb6 " : "", ll, l->is_knee ? " (knee)**" : "",
                  l->saturated ? " saturated" : "");
        md_num(b, rep_num(r, METRIC(request_throughput)));
        md_num(b, rep_num(r, METRIC(output_throughput)));
        md_num(b, rep_num(r, METRIC(request_goodput)));
        md_pair(b, rep_pct(r, "ttft", 50), rep_pct(r, "ttft", 99), rep_slo_ms(r, "ttft"));
        md_pair(b, rep_pct(r, "tpot", 50), rep_pct(r, "tpot", 99), rep_slo_ms(r, "tpot"));
        md_num(b, rep_pct(r, "itl", 99));
        md_num(b, rep_pct(r, "e2el", 99));
        md_num(b, rep_pct(r, "queue", 99));
        md_pct(b, rep_error_pct(r));
        if (gpu) md_pct(b, rep_gpu_mean(r, "util_gpu_pct"));
        if (kv) md_pct(b, rep_kv_max_pct(r));
        rb_puts(b, "\n");
    }
    /* a p99 from fewer requests than it needs is the largest sample relabelled: marked here */
    long need = summary_percentile_samples_needed(99);
    bool any = false;
    for (size_t i = 0; i < m->n; i++) {
        double n = rep_num(m->lv[i].r, "completed");
        if (!(n >= 0) || n >= need) continue;
        char ll[48];
        rep_level_label(m, &m->lv[i], ll, sizeof ll);
        if (!any) rb_printf(b, "\np99 from fewer than %ld requests is set by the largest samples, not a tail: ", need);
        rb_printf(b, "%s%s (%.0f requests)", any ? ", " : "", ll, n);
        any = true;
    }
    if (any) rb_puts(b, "\n");
}

static void md_errors(rbuf *b, const rep_model *m) {
    double failed = 0;
    for (size_t i = 0; i < m->n; i++) { double f = rep_num(m->lv[i].r, "failed"); if (f > 0) failed += f; }
    rb_puts(b, "\n## Errors\n\n");
    if (failed <= 0) { rb_puts(b, "No failed requests.\n"); return; }
    for (size_t i = 0; i < m->n; i++) {
        const json_t *r = m->lv[i].r;
        if (!(rep_num(r, "failed") > 0)) continue;
        char ll[48];
        rep_level_label(m, &m->lv[i], ll, sizeof ll);
        rb_printf(b, "- %s:", ll);
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)json_object_get(r, "errors"), k, v) {
            if (json_is_object(v)) {
                const char *code;
                json_t *n;
                json_object_foreach(v, code, n) { rb_puts(b, " HTTP "); rb_md_cell(b, code); rb_printf(b, " %lld;", (long long)json_integer_value(n)); }
            } else if (json_integer_value(v) > 0 &&
                       !(strcmp(k, "http") == 0 && json_object_size(json_object_get(json_object_get(r, "errors"), "http_status")))) {
                rb_puts(b, " ");
                rb_md_cell(b, k);
                rb_printf(b, " %lld;", (long long)json_integer_value(v));
            }
        }
        rb_puts(b, "\n");
        size_t j;
        json_array_foreach(json_object_get(r, "error_examples"), j, v) {
            const char *msg = json_string_value(json_object_get(v, "message"));
            if (!msg) continue;
            char cut[241];
            snprintf(cut, sizeof cut, "%s", msg);
            rb_puts(b, "  - first ");
            rb_md_cell(b, json_string_value(json_object_get(v, "class")));
            rb_puts(b, ": `");
            rb_md_cell(b, cut);
            rb_puts(b, "`\n");
        }
    }
}

int report_write_markdown(FILE *f, const json_t *doc, const report_opts *o, char *err, size_t errlen) {
    if (report_is_tune(doc)) return report_tune_markdown(f, doc, err, errlen);
    if (report_is_drift(doc)) return report_drift_markdown(f, doc, err, errlen);
    rep_model m;
    if (rep_model_init(&m, doc, err, errlen) != 0) return -1;
    rbuf b;
    rb_init(&b);
    const json_t *r = m.n ? m.lv[0].r : doc;
    rb_puts(&b, "# ");
    if (o && o->title) rb_md_cell(&b, o->title);
    else rb_printf(&b, "dsperf %s report", m.sweep ? "sweep" : "run");
    rb_puts(&b, "\n\n");
    if (m.n) {
        rbuf s;
        rb_init(&s);
        rep_verdict(&m, o ? o->diagnosis : NULL, &s);
        rb_puts(&b, "**Verdict.** ");
        rb_md_cell(&b, s.p);
        rb_puts(&b, "\n");
        rb_free(&s);
        md_findings(&b, &m, o ? o->diagnosis : NULL);
        md_table(&b, &m);
        md_context_and_stability(&b, &m);
        md_errors(&b, &m);
    } else {
        rb_puts(&b, "The document holds no levels with results.\n");
    }
    const char *lo_url = NULL;
    char *cmd = rep_command(doc, r, &lo_url);
    rb_puts(&b, "\n## Reproduce\n\n");
    if (cmd) {
        rb_puts(&b, "    ");
        for (const char *p = cmd; *p; p++) rb_putn(&b, *p == '\n' ? " " : p, 1);
        rb_puts(&b, "\n\n");
        if (redact_command_note(cmd)) rb_printf(&b, "%s\n\n", redact_command_note(cmd));
    }
    free(cmd);
    if (lo_url) rb_printf(&b, "The server listened on %s, a loopback address of the machine that ran this: start it again "
                              "and give its address to --url.\n\n", lo_url);
    rb_printf(&b, "dsperf %s", str(r, "version") ? str(r, "version") : "?");
    if (str(r, "date")) rb_printf(&b, ", %s", str(r, "date"));
    const json_t *env = json_object_get(r, "environment");
    if (str(env, "hostname")) { rb_puts(&b, ", host "); rb_md_cell(&b, str(env, "hostname")); }
    rb_puts(&b, ".\n");
    rep_model_free(&m);
    return rb_write(&b, f, err, errlen);
}

/* ---- CSV ---- */

static const char *const csv_cols[] = {
    "axis", "load", "repeat", "saturated", "knee", "completed", "failed", "error_pct", "duration_s",
    METRIC(request_throughput), "achieved_rate_per_s", METRIC(output_throughput), METRIC(total_token_throughput), METRIC(request_goodput),
    METRIC(goodput_tok_s), METRIC(mean_ttft_ms), METRIC(p50_ttft_ms), METRIC(p99_ttft_ms), METRIC(mean_tpot_ms), METRIC(p50_tpot_ms), METRIC(p99_tpot_ms),
    METRIC(p50_itl_ms), METRIC(p99_itl_ms), METRIC(p50_e2el_ms), METRIC(p99_e2el_ms), METRIC(p99_queue_ms), METRIC(p99_ttft_from_schedule_ms),
    METRIC(p99_e2el_from_schedule_ms), "gpu_util_pct", "dram_bw_util_pct", "kv_peak_pct",
};

static void csv_num(rbuf *b, double v) {
    if (isfinite(v)) rb_printf(b, ",%.10g", v);
    else rb_puts(b, ",");
}

int report_write_csv(FILE *f, const json_t *doc, char *err, size_t errlen) {
    if (report_is_tune(doc)) return report_tune_csv(f, doc, err, errlen);
    if (report_is_drift(doc)) return report_drift_csv(f, doc, err, errlen);
    rep_model m;
    if (rep_model_init(&m, doc, err, errlen) != 0) return -1;
    rbuf b;
    rb_init(&b);
    for (size_t i = 0; i < sizeof csv_cols / sizeof csv_cols[0]; i++) rb_printf(&b, "%s%s", i ? "," : "", csv_cols[i]);
    rb_puts(&b, "\n");
    for (size_t i = 0; i < m.n; i++) {
        const rep_level *l = &m.lv[i];
        const json_t *r = l->r;
        rb_csv_field(&b, m.axis ? m.axis : "");
        csv_num(&b, l->load);
        rb_printf(&b, ",%d,%d,%d", l->repeat, l->saturated, l->is_knee);
        csv_num(&b, rep_num(r, "completed"));
        csv_num(&b, rep_num(r, "failed"));
        csv_num(&b, rep_error_pct(r));
        csv_num(&b, rep_num(r, "duration"));
        csv_num(&b, rep_num(r, METRIC(request_throughput)));
        csv_num(&b, rep_num(r, "achieved_rate_per_s"));
        csv_num(&b, rep_num(r, METRIC(output_throughput)));
        csv_num(&b, rep_num(r, METRIC(total_token_throughput)));
        csv_num(&b, rep_num(r, METRIC(request_goodput)));
        csv_num(&b, rep_goodput_tok_s(r));
        csv_num(&b, rep_num(r, METRIC(mean_ttft_ms)));
        csv_num(&b, rep_pct(r, "ttft", 50));
        csv_num(&b, rep_pct(r, "ttft", 99));
        csv_num(&b, rep_num(r, METRIC(mean_tpot_ms)));
        csv_num(&b, rep_pct(r, "tpot", 50));
        csv_num(&b, rep_pct(r, "tpot", 99));
        csv_num(&b, rep_pct(r, "itl", 50));
        csv_num(&b, rep_pct(r, "itl", 99));
        csv_num(&b, rep_pct(r, "e2el", 50));
        csv_num(&b, rep_pct(r, "e2el", 99));
        csv_num(&b, rep_pct(r, "queue", 99));
        csv_num(&b, rep_pct(r, "ttft_from_schedule", 99));
        csv_num(&b, rep_pct(r, "e2el_from_schedule", 99));
        csv_num(&b, rep_gpu_mean(r, "util_gpu_pct"));
        csv_num(&b, rep_gpu_mean(r, "dram_bw_util_pct"));
        csv_num(&b, rep_kv_max_pct(r));
        rb_puts(&b, "\n");
    }
    rep_model_free(&m);
    return rb_write(&b, f, err, errlen);
}
