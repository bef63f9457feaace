/* html — the report page: verdict strip (sentence, tiles, SLO and validity badges), findings,
 * saturation and latency-vs-throughput charts, the per-load table, latency distributions, the
 * time-aligned run view, errors by class, and how to reproduce the run. One file, inline CSS and
 * SVG, no script and no external reference, every document string escaped. */
#include "report/report_internal.h"
#include "metrics/metric_table.h"
#include "metrics/summary.h"
#include "results/validity.h"
#include "common/redact.h"
#include "sweep/context.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void report_default_opts(report_opts *o) { memset(o, 0, sizeof *o); }

static const char *str(const json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }

/* The document the header and reproduce section describe: the sweep itself, or the run. */
static const json_t *first_results(const rep_model *m) { return m->n ? m->lv[0].r : m->doc; }

static void page_title(const rep_model *m, const report_opts *o, rbuf *t) {
    if (o->title) { rb_puts(t, o->title); return; }
    const json_t *r = first_results(m);
    const json_t *cfg = json_object_get(r, "config");
    const char *model = str(cfg, "model");
    if (!model || !*model) model = str(json_object_get(cfg, "sim"), "model");
    const char *target = str(cfg, "url");
    if (!target) target = str(cfg, "target");
    rb_printf(t, "dsperf %s", m->sweep ? "sweep" : str(r, "producer") ? str(r, "producer") : "run");
    if (model && *model) rb_printf(t, " \xe2\x80\x94 %s", model);
    if (target && *target && strcmp(target, "sim") != 0) rb_printf(t, " @ %s", target);
}

/* ---- verdict strip ---- */

static void tile(rbuf *b, const char *k, const char *v, const char *sub) {
    rb_puts(b, "<div class=\"tile\"><div class=\"k\">");
    rb_esc(b, k);
    rb_puts(b, "</div><div class=\"v\">");
    rb_esc(b, v);
    rb_puts(b, "</div>");
    if (sub) {
        rb_puts(b, "<div class=\"s\">");
        rb_esc(b, sub);
        rb_puts(b, "</div>");
    }
    rb_puts(b, "</div>");
}

static void badge(rbuf *b, const char *cls, const char *text) {
    rb_printf(b, "<span class=\"badge %s\">", cls);
    rb_esc(b, text);
    rb_puts(b, "</span>");
}

/* The level the headline latency tiles describe: the knee of a sweep, else the run. */
static const rep_level *headline_level(const rep_model *m) {
    for (size_t i = 0; i < m->n; i++) if (m->lv[i].is_knee) return &m->lv[i];
    /* along context length: the longest prompt (or output) measured */
    if (m->sweep && m->n && json_is_object(json_object_get(m->doc, "context"))) return &m->lv[m->n - 1];
    return m->sweep ? NULL : &m->lv[0];
}

static int n_gpus(const json_t *r) {
    size_t g = json_array_size(json_object_get(json_object_get(r, "telemetry"), "gpu"));
    if (g) return (int)g;
    g = json_array_size(json_object_get(json_object_get(r, "environment"), "gpus"));
    if (g) return (int)g;
    const json_t *sim = json_object_get(json_object_get(r, "config"), "sim");
    double n = rep_num(sim, "gpus");
    if (!(n > 0)) n = rep_num(sim, "tp");
    return n > 0 ? (int)n : 0;
}

static void tiles(rbuf *b, const rep_model *m, const json_t *diagnosis) {
    char v[64], s[160], t[48];
    rb_puts(b, "<div class=\"tiles\">");
    const json_t *ctx = m->sweep ? json_object_get(m->doc, "context") : NULL;
    if (json_is_object(ctx)) {
        const json_t *sf = json_object_get(ctx, "stops_fitting");
        bool in = !strcmp(m->axis, "input_len");
        if (json_is_object(sf)) {
            char l[24];
            sweep_length_label(rep_num(sf, in ? "input_len" : "output_len"), l, sizeof l);
            snprintf(v, sizeof v, "%s tokens", l);
            tile(b, "stops fitting at", v, json_string_value(json_object_get(sf, "why")));
        } else {
            tile(b, "stops fitting at", "never", "no preemption, no rejected prompt");
        }
    } else if (m->sweep) {
        if (m->knee) {
            rep_load_label(m, rep_num(m->knee, "load"), v, sizeof v);
            fmt_num(rep_num(m->knee, METRIC(output_throughput)), t, sizeof t);
            snprintf(s, sizeof s, "%s out tok/s", t);
            tile(b, "knee", v, s);
        } else {
            tile(b, "knee", "not found", "throughput kept rising");
        }
        if (m->max_goodput) {
            /* goodput is requests within the SLO per second, as the terminal and the JSON say;
             * the tokens those requests carried are the subtitle */
            double g_tok = NAN;
            for (size_t i = 0; isnan(g_tok) && i < m->n; i++) if (m->lv[i].is_max_goodput) g_tok = rep_goodput_tok_s(m->lv[i].r);
            char tok[32];
            fmt_num(rep_num(m->max_goodput, METRIC(request_goodput)), t, sizeof t);
            snprintf(v, sizeof v, "%s req/s", t);
            fmt_num(g_tok, tok, sizeof tok);
            rep_load_label(m, rep_num(m->max_goodput, "load"), t, sizeof t);
            snprintf(s, sizeof s, "at %s (%s out tok/s)", t, tok);
            tile(b, "max goodput", v, s);
        }
        double peak = NAN;
        for (size_t i = 0; i < m->n; i++) {
            double o = rep_num(m->lv[i].r, METRIC(output_throughput));
            if (!isnan(o) && (isnan(peak) || o > peak)) peak = o;
        }
        fmt_num(peak, v, sizeof v);
        tile(b, "peak output", v, "tok/s over all levels");
    }
    const rep_level *h = headline_level(m);
    if (h) {
        const json_t *r = h->r;
        const char *where = json_is_object(ctx) ? "at the longest length" : m->sweep ? "at the knee" : NULL;
        if (!m->sweep) {
            fmt_num(rep_num(r, METRIC(output_throughput)), v, sizeof v);
            fmt_num(rep_num(r, METRIC(request_throughput)), t, sizeof t);
            snprintf(s, sizeof s, "%s req/s", t);
            tile(b, "output tok/s", v, s);
            double g = rep_goodput_tok_s(r);
            if (!isnan(g)) {
                /* req/s as in a sweep's tile, the verdict and the terminal */
                fmt_num(rep_num(r, METRIC(request_goodput)), t, sizeof t);
                snprintf(v, sizeof v, "%s req/s", t);
                fmt_num(g, t, sizeof t);
                snprintf(s, sizeof s, "%.0f%% of requests within SLO (%s out tok/s)",
                         100.0 * rep_num(r, "good_requests") / rep_num(r, "completed"), t);
                tile(b, "goodput", v, s);
            }
        }
        const char *mets[] = { "ttft", "tpot" }, *names[] = { "p99 TTFT", "p99 TPOT" };
        for (int k = 0; k < 2; k++) {
            fmt_ms(rep_pct(r, mets[k], 99), v, sizeof v);
            fmt_ms(rep_pct(r, mets[k], 50), t, sizeof t);
            if (rep_pct_thin(r, mets[k], 99))
                /* the largest of a few samples, not a tail: the tile says so where it is read */
                snprintf(s, sizeof s, "p50 %s%s%s; from %ld requests (a p99 needs %ld)", t, where ? ", " : "",
                         where ? where : "", rep_pct_samples(r, mets[k]), summary_percentile_samples_needed(99));
            else
                snprintf(s, sizeof s, "p50 %s%s%s", t, where ? ", " : "", where ? where : "");
            tile(b, names[k], v, s);
        }
        int g = n_gpus(r);
        if (g > 0) {
            fmt_num(rep_num(r, METRIC(output_throughput)) / g, v, sizeof v);
            snprintf(s, sizeof s, "%d GPU%s%s%s", g, g > 1 ? "s" : "", where ? ", " : "", where ? where : "");
            tile(b, "out tok/s per GPU", v, s);
        }
    }
    double ok = 0, bad = 0;
    for (size_t i = 0; i < m->n; i++) {
        double c, f;
        validity_counts(m->lv[i].r, &f, &c);    /* server-side failures only */
        if (!isnan(c)) ok += c;
        if (!isnan(f)) bad += f;
    }
    const json_t *rf = json_object_get(diagnosis, "roofline");
    double eff = rep_num(rf, "efficiency");
    if (isfinite(eff)) {
        fmt_pct(100 * eff, v, sizeof v);
        fmt_num(rep_num(rf, "bound_tokens_per_s"), t, sizeof t);
        snprintf(s, sizeof s, "of the HBM bound (%s tok/s)", t);
        tile(b, "decode vs roofline", v, s);
    }
    fmt_pct(ok + bad > 0 ? 100 * bad / (ok + bad) : 0.0, v, sizeof v);
    fmt_num(bad, t, sizeof t);
    char all[32];
    fmt_num(ok + bad, all, sizeof all);
    snprintf(s, sizeof s, "%s failed of %s", t, all);
    tile(b, "errors", v, s);
    rb_puts(b, "</div>");
}

static void slo_badges(rbuf *b, const rep_model *m) {
    const rep_level *h = headline_level(m);
    if (!h) return;
    static const char *const metric[] = { "ttft", "tpot", "e2el" }, *const name[] = { "TTFT", "TPOT", "E2EL" };
    for (int i = 0; i < 3; i++) {
        double slo = rep_slo_ms(h->r, metric[i]), p99 = rep_pct(h->r, metric[i], 99);
        if (isnan(slo) || isnan(p99)) continue;
        char a[24], s[24], text[128];
        fmt_ms(p99, a, sizeof a);
        fmt_ms(slo, s, sizeof s);
        bool pass = p99 <= slo;
        snprintf(text, sizeof text, "%s p99 %s %s\xe2\x89\xa4%s (%s)%s", pass ? "\xe2\x9c\x93" : "\xe2\x9c\x97", name[i],
                 pass ? "" : "not ", s, a, m->sweep ? " at the knee" : "");
        badge(b, pass ? "ok" : "bad", text);
    }
    double e = rep_error_pct(h->r);
    if (!isnan(e)) {
        char text[64];
        char pc[24];
        fmt_pct(e, pc, sizeof pc);
        snprintf(text, sizeof text, "%s errors %s %s 1%%%s", e <= 1 ? "\xe2\x9c\x93" : "\xe2\x9c\x97", pc,
                 e <= 1 ? "\xe2\x89\xa4" : ">", m->sweep ? " at the knee" : "");
        badge(b, e <= 1 ? "ok" : "bad", text);
    }
}

static void validity_badges(rbuf *b, const rep_model *m, const report_opts *o) {
    long warm = 0, mism = 0, partial = 0, behind = 0, early = 0, capped = 0, not_measured = 0;
    double cpu_share = NAN;
    char behind_at[48] = "", cpu_at[48] = "";
    const char *why_behind = NULL, *why_partial = NULL, *producer = NULL, *tel_warn = NULL;
    bool tel = false, eng = false;
    for (size_t i = 0; i < m->n; i++) {
        const json_t *r = m->lv[i].r;
        warm += (long)(rep_num(r, "warmup_requests") > 0 ? rep_num(r, "warmup_requests") : 0);
        mism += (long)(rep_num(r, "output_token_mismatches") > 0 ? rep_num(r, "output_token_mismatches") : 0);
        if (json_is_true(json_object_get(r, "partial"))) { partial++; why_partial = str(r, "partial_reason"); }
        if (json_is_true(json_object_get(r, "client_fell_behind"))) {
            if (!behind++) {
                rep_level_label(m, &m->lv[i], behind_at, sizeof behind_at);
                why_behind = str(r, "client_lag_reason");
            }
        }
        if (json_is_true(json_object_get(r, "client_queue_capped"))) capped++;
        early += m->lv[i].early_stopped;
        not_measured += !m->lv[i].measured;
        /* over a run shorter than a second the CPU share is mostly start-up cost: not shown */
        double cs = rep_num(r, "duration") >= 1 ? rep_num(json_object_get(r, "client"), "cpu_core_share") : NAN;
        if (!isnan(cs) && (isnan(cpu_share) || cs > cpu_share)) {
            cpu_share = cs;
            if (m->sweep) rep_level_label(m, &m->lv[i], cpu_at, sizeof cpu_at);
        }
        producer = str(r, "producer");
        const json_t *t = json_object_get(r, "telemetry");
        if (json_array_size(json_object_get(t, "gpu"))) tel = true;
        if (str(t, "warning")) tel_warn = str(t, "warning");
        if (json_object_get(r, "engine")) eng = true;
    }
    if (json_is_true(json_object_get(m->doc, "partial"))) { partial++; why_partial = str(m->doc, "partial_reason"); }
    char t[512];
    if (warm > 0) { snprintf(t, sizeof t, "warm-up excluded (%ld requests)", warm); badge(b, "ok", t); }
    else badge(b, "", "no warm-up requests");
    if (partial) {
        snprintf(t, sizeof t, "cancelled early: %s", why_partial ? why_partial : "partial results");
        badge(b, "warn", t);
    }
    if (behind) {
        snprintf(t, sizeof t, "client fell behind its plan%s%s%s%s", m->sweep ? " at " : "", m->sweep ? behind_at : "",
                 why_behind ? ": " : "", why_behind ? why_behind : "");
        badge(b, "bad", t);
    } else if (producer && !strcmp(producer, "bench")) {
        badge(b, "ok", "client kept its schedule");
    }
    if (capped) badge(b, "", "client queue capped by --max-concurrency (measured)");
    if (!isnan(cpu_share)) {
        snprintf(t, sizeof t, "client CPU %.0f%% of one core%s%s%s", 100 * cpu_share, cpu_at[0] ? " at " : "", cpu_at,
                 cpu_share < 0.5 ? " (headroom)" : cpu_share < 0.8 ? " (busy)" : " (near its limit)");
        badge(b, cpu_share < 0.5 ? "ok" : cpu_share < 0.8 ? "warn" : "bad", t);
    }
    /* coordinated omission: the user's view (from the schedule) against the server's (from send) */
    const rep_level *h = headline_level(m);
    if (!h && m->n) h = &m->lv[m->n - 1];
    double fs = h ? rep_pct(h->r, "ttft_from_schedule", 99) : NAN, fsend = h ? rep_pct(h->r, "ttft", 99) : NAN;
    if (isfinite(fs) && isfinite(fsend)) {
        char a[24], c[24];
        fmt_ms(fs, a, sizeof a);
        fmt_ms(fsend, c, sizeof c);
        bool off = fs > 1.1 * fsend && fs - fsend > 1;
        snprintf(t, sizeof t, "%s p99 TTFT from schedule %s vs %s from send%s", off ? "client-side queueing:" : "CO-corrected:",
                 a, c, m->sweep ? (h->is_knee ? " (knee)" : " (highest load)") : "");
        badge(b, off ? "warn" : "ok", t);
    }
    if (mism) { snprintf(t, sizeof t, "%ld output length mismatches (server vs client)", mism); badge(b, "warn", t); }
    if (early) { snprintf(t, sizeof t, "%ld level%s stopped early (over-saturated)", early, early > 1 ? "s" : ""); badge(b, "warn", t); }
    if (not_measured) {
        snprintf(t, sizeof t, "%ld level%s not measured: requests outlast %s (see the per-load table)", not_measured,
                 not_measured > 1 ? "s" : "", not_measured > 1 ? "them" : "it");
        badge(b, "bad", t);
    }
    if (producer && !strcmp(producer, "sim")) badge(b, "", "simulated engine (virtual clock)");
    if (tel) badge(b, "ok", "GPU telemetry aligned");
    else if (tel_warn) { snprintf(t, sizeof t, "no GPU telemetry: %s", tel_warn); badge(b, "warn", t); }
    else if (!eng) badge(b, "", "no GPU telemetry");
    if (o->requests) {
        char nn[32];
        fmt_num((double)report_requests_count(o->requests), nn, sizeof nn);
        snprintf(t, sizeof t, "%s per-request samples", nn);
        badge(b, "ok", t);
    }
}

static void verdict(rbuf *b, const rep_model *m, const report_opts *o) {
    rb_puts(b, "<section id=\"verdict\" class=\"verdict\"><p class=\"sentence\">");
    rbuf s;
    rb_init(&s);
    rep_verdict(m, o->diagnosis, &s);
    rb_esc(b, s.p);
    rb_free(&s);
    rb_puts(b, "</p>");
    tiles(b, m, o->diagnosis);
    rb_puts(b, "<div class=\"badges\">");
    slo_badges(b, m);
    validity_badges(b, m, o);
    rb_puts(b, "</div></section>");
}

/* ---- findings ---- */

static void evidence_value(rbuf *b, const json_t *e) {
    const json_t *v = json_object_get(e, "value");
    const char *text = str(e, "text");
    /* diagnose usually writes the number into the sentence: show it again only when it is not */
    if (!json_is_number(v) || (text && strpbrk(text, "0123456789"))) return;
    char n[48];
    fmt_num(json_number_value(v), n, sizeof n);
    rb_puts(b, " <b>");
    rb_esc(b, n);
    const char *u = str(e, "unit");
    if (u) { rb_puts(b, " "); rb_esc(b, u); }
    rb_puts(b, "</b>");
}

/* Where each number came from (a results field, an endpoint, the cost model): for whoever checks
 * the claim, so folded away from the sentences people read first. */
static void evidence_sources(rbuf *b, const json_t *ev) {
    size_t i, n = 0;
    json_t *e;
    json_array_foreach(ev, i, e) n += str(e, "source") != NULL;
    if (!n) return;
    rb_puts(b, "<details class=\"sources\"><summary class=\"note\">where the numbers come from</summary><ul class=\"note\">");
    json_array_foreach(ev, i, e) {
        if (!str(e, "source")) continue;
        /* the evidence's first words name it; the whole sentence is just above */
        const char *t = str(e, "text") ? str(e, "text") : "";
        size_t len = strlen(t), cut = len;
        if (len > 48) {
            cut = 48;
            while (cut > 20 && t[cut] != ' ') cut--;
            if (t[cut] != ' ') cut = len;   /* no word break: the whole text, never half a character */
        }
        char head[64];
        snprintf(head, sizeof head, "%.*s", (int)cut, t);
        rb_puts(b, "<li>");
        rb_esc(b, cut < len ? head : t);
        if (cut < len) rb_puts(b, "\xe2\x80\xa6");
        rb_puts(b, ": <code>");
        rb_esc(b, str(e, "source"));
        rb_puts(b, "</code></li>");
    }
    rb_puts(b, "</ul></details>");
}

static void finding(rbuf *b, const rep_model *m, const json_t *f, size_t rank) {
    const char *cls = str(f, "class");
    rb_printf(b, "<article class=\"finding%s\" id=\"finding-%zu\"><div class=\"fhead\"><span class=\"rank\">%zu</span>",
              cls && !strcmp(cls, "healthy") ? " healthy" : "", rank, rank);
    if (cls) { rb_puts(b, "<span class=\"cls\">"); rb_esc(b, cls); rb_puts(b, "</span>"); }
    rb_puts(b, "<b>");
    rb_esc(b, str(f, "title") ? str(f, "title") : "(untitled finding)");
    rb_puts(b, "</b>");
    double conf = rep_num(f, "confidence");
    if (!isnan(conf)) rb_printf(b, "<span class=\"conf\">confidence %.0f%%</span>", 100 * conf);
    rb_puts(b, "</div>");
    const json_t *ev = json_object_get(f, "evidence");
    if (json_array_size(ev)) {
        rb_puts(b, "<ul>");
        size_t i;
        json_t *e;
        json_array_foreach(ev, i, e) {
            rb_puts(b, "<li>");
            rb_esc(b, str(e, "text"));
            evidence_value(b, e);
            rb_puts(b, "</li>");
        }
        rb_puts(b, "</ul>");
        evidence_sources(b, ev);
    }
    const json_t *knobs = json_object_get(f, "knobs");
    if (json_array_size(knobs)) {
        rb_puts(b, "<div>Knobs: ");
        size_t i;
        json_t *k;
        json_array_foreach(knobs, i, k) {
            if (i) rb_puts(b, "; ");
            rb_puts(b, "<b>");
            rb_esc(b, str(k, "knob"));
            rb_puts(b, "</b>");
            if (str(k, "direction")) { rb_puts(b, " ("); rb_esc(b, str(k, "direction")); rb_puts(b, ")"); }
            if (str(k, "effect")) { rb_puts(b, " \xe2\x80\x94 "); rb_esc(b, str(k, "effect")); }
        }
        rb_puts(b, "</div>");
    }
    const json_t *w = json_object_get(f, "window");
    double lvl = rep_num(f, "level");
    if (json_is_object(w) || !isnan(lvl)) {
        rb_puts(b, "<div class=\"note\">Look at: ");
        if (json_is_object(w)) {
            double t0 = rep_num(w, "t0_s"), t1 = rep_num(w, "t1_s");
            int prec = t1 - t0 < 10 ? 1 : 0;
            rb_printf(b, "<a href=\"#fig-timeline\">run timeline, t = %.*f\xe2\x80\x93%.*f s</a> ", prec, t0, prec, t1);
        }
        size_t row = (size_t)-1;
        for (size_t i = 0; !isnan(lvl) && i < m->n && row == (size_t)-1; i++) if (m->lv[i].load == lvl) row = i;
        if (!isnan(lvl)) {
            char ll[32];
            rep_load_label(m, lvl, ll, sizeof ll);
            if (row != (size_t)-1) rb_printf(b, "<a href=\"#level-%zu\">level ", row);
            else rb_puts(b, "<a href=\"#levels\">level ");
            rb_esc(b, ll);
            rb_puts(b, "</a>");
        }
        rb_puts(b, "</div>");
    }
    rb_puts(b, "</article>");
}

static void roofline(rbuf *b, const json_t *rf) {
    if (!json_is_object(rf)) return;
    char a[32], c[32];
    fmt_num(rep_num(rf, "decode_tokens_per_s"), a, sizeof a);
    fmt_num(rep_num(rf, "bound_tokens_per_s"), c, sizeof c);
    rb_puts(b, "<p>Roofline: ");
    if (str(rf, "model")) { rb_esc(b, str(rf, "model")); rb_puts(b, " on "); }
    if (str(rf, "gpu")) rb_esc(b, str(rf, "gpu"));
    rb_printf(b, ": decode %s tok/s achieved vs %s tok/s bandwidth bound", a, c);
    double e = rep_num(rf, "efficiency");
    if (!isnan(e)) rb_printf(b, " (<b>%.0f%%</b> of roofline)", 100 * e);
    double bt = rep_num(rf, "batch"), ctx = rep_num(rf, "context");
    if (!isnan(bt)) { fmt_num(bt, a, sizeof a); rb_printf(b, ", batch %s", a); }
    if (!isnan(ctx)) { fmt_num(ctx, a, sizeof a); rb_printf(b, ", context %s", a); }
    rb_puts(b, ".</p>");
    if (str(rf, "source")) {
        rb_puts(b, "<details class=\"sources\"><summary class=\"note\">where the roofline comes from</summary><p class=\"note\"><code>");
        rb_esc(b, str(rf, "source"));
        rb_puts(b, "</code></p></details>");
    }
}

/* Where the time went (diagnose's accounting): a request's mean time and one decode step, each part
 * with its share and its bound; what nothing explains is shown as such. */
static void time_parts(rbuf *b, const json_t *parts, const char *caption) {
    if (!json_array_size(parts)) return;
    rb_puts(b, "<table class=\"time\"><caption>");
    rb_esc(b, caption);
    rb_puts(b, "</caption><tr><th>part</th><th>ms</th><th>share</th><th>bound</th></tr>");
    size_t i;
    json_t *p;
    json_array_foreach(parts, i, p) {
        char ms[32];
        fmt_ms(rep_num(p, "ms"), ms, sizeof ms);
        rb_puts(b, "<tr><td>");
        rb_esc(b, json_string_value(json_object_get(p, "part")));
        rb_printf(b, "</td><td>%s</td><td>%.1f%%</td><td>", ms, 100 * rep_num(p, "share"));
        const char *bound = json_string_value(json_object_get(p, "bound"));
        if (bound) rb_esc(b, bound);
        rb_puts(b, "</td></tr>");
    }
    rb_puts(b, "</table>");
}

static void time_accounting(rbuf *b, const rep_model *m, const json_t *t) {
    if (!json_is_object(t)) return;
    rb_puts(b, "<h3>Where the time went</h3>");
    char cap[160], ms[32], at[48] = "";
    double lvl = rep_num(t, "level");
    if (!isnan(lvl)) { char ll[32]; rep_load_label(m, lvl, ll, sizeof ll); snprintf(at, sizeof at, " at %s", ll); }
    fmt_ms(rep_num(t, "request_ms"), ms, sizeof ms);
    snprintf(cap, sizeof cap, "a request%s: %s on average", at, ms);
    time_parts(b, json_object_get(t, "request"), cap);
    fmt_ms(rep_num(t, "decode_step_ms"), ms, sizeof ms);
    snprintf(cap, sizeof cap, "a decode step%s: %s", at, ms);
    time_parts(b, json_object_get(t, "decode_step"), cap);
}

static void findings(rbuf *b, const rep_model *m, const report_opts *o) {
    rb_puts(b, "<section id=\"findings\"><h2>Findings</h2>");
    const json_t *list = json_object_get(o->diagnosis, "findings");
    if (!o->diagnosis) {
        rb_puts(b, "<p class=\"note\">No diagnosis available for this document.</p>");
    } else if (!json_array_size(list)) {
        rb_puts(b, "<p class=\"note\">The diagnosis found nothing to report.</p>");
    } else {
        size_t i;
        json_t *f;
        json_array_foreach(list, i, f) finding(b, m, f, i + 1);
    }
    /* the run's own warnings are evidence: overload, a lagging client, a p99 of few requests */
    const json_t *warns = json_object_get(o->diagnosis, "warnings");
    if (json_array_size(warns)) {
        rb_puts(b, "<h3>Warnings from the run</h3><ul class=\"warnings\">");
        size_t i;
        json_t *w;
        json_array_foreach(warns, i, w) {
            rb_puts(b, "<li>");
            double wl = rep_num(w, "level");
            if (isfinite(wl)) { char ll[48]; rep_load_label(m, wl, ll, sizeof ll); rb_puts(b, "["); rb_esc(b, ll); rb_puts(b, "] "); }
            rb_esc(b, json_string_value(json_object_get(w, "message")));
            rb_puts(b, "</li>");
        }
        rb_puts(b, "</ul>");
    }
    /* a rate beyond physics: the assumed deployment is wrong, which is no bottleneck */
    const json_t *cfg = json_object_get(o->diagnosis, "configuration");
    if (json_array_size(cfg)) {
        rb_puts(b, "<h3>Configuration: the assumed deployment cannot be right</h3>");
        size_t i;
        json_t *f;
        json_array_foreach(cfg, i, f) finding(b, m, f, i + 1);
    }
    time_accounting(b, m, json_object_get(o->diagnosis, "time"));
    roofline(b, json_object_get(o->diagnosis, "roofline"));
    const json_t *checked = json_object_get(o->diagnosis, "checked");
    size_t i, skipped = 0;
    json_t *c;
    json_array_foreach(checked, i, c) skipped += json_is_false(json_object_get(c, "ran"));
    if (skipped) {
        rb_printf(b, "<details><summary class=\"note\">%zu rule%s not checked for lack of data</summary><ul class=\"note\">",
                  skipped, skipped > 1 ? "s" : "");
        json_array_foreach(checked, i, c) {
            if (!json_is_false(json_object_get(c, "ran"))) continue;
            rb_puts(b, "<li><code>");
            rb_esc(b, str(c, "rule"));
            rb_puts(b, "</code>: ");
            rb_esc(b, str(c, "why"));
            rb_puts(b, "</li>");
        }
        rb_puts(b, "</ul></details>");
    }
    rb_puts(b, "</section>");
}

/* ---- per-load table ---- */

static void cell_num(rbuf *b, double v, bool bad, const char *title) {
    char t[48];
    fmt_num(v, t, sizeof t);
    rb_printf(b, "<td%s", bad ? " class=\"bad\"" : "");
    if (title) { rb_puts(b, " title=\""); rb_esc(b, title); rb_puts(b, "\""); }
    rb_puts(b, ">");
    rb_esc(b, t);
    rb_puts(b, "</td>");
}

static void cell_num_thin(rbuf *b, double v, bool bad, long thin_n) {
    char t[48], title[160];
    fmt_num(v, t, sizeof t);
    rb_printf(b, "<td%s", bad ? " class=\"bad\"" : "");
    if (thin_n >= 0) {
        snprintf(title, sizeof title, "p99 from %ld sample%s: a p99 needs %ld", thin_n, thin_n == 1 ? "" : "s",
                 summary_percentile_samples_needed(99));
        rb_puts(b, " title=\"");
        rb_esc(b, title);
        rb_puts(b, "\"");
    }
    rb_puts(b, ">");
    rb_esc(b, t);
    rb_puts(b, thin_n >= 0 ? "*</td>" : "</td>");
}

/* p50 / p99; a p99 from fewer samples than it needs carries a "*" and says why on hover. */
static void cell_pair(rbuf *b, double a, double c, double slo, long thin_n) {
    char x[32], y[32];
    fmt_num(a, x, sizeof x);
    fmt_num(c, y, sizeof y);
    rb_printf(b, "<td%s", !isnan(slo) && c > slo ? " class=\"bad\"" : "");
    if (thin_n >= 0)
        rb_printf(b, " title=\"p99 from %ld request%s: a p99 needs %ld; this is the largest sample, not a tail estimate\"",
                  thin_n, thin_n == 1 ? "" : "s", summary_percentile_samples_needed(99));
    rb_printf(b, ">%s / %s%s</td>", x, y, thin_n >= 0 ? "*" : "");
}

/* The sample count when metric's p99 is thin in r, else -1 (cell_pair's argument). */
static long thin99(const json_t *r, const char *metric) {
    return rep_pct_thin(r, metric, 99) ? rep_pct_samples(r, metric) : -1;
}

/* A percentage cell: the precision a percentage carries (fmt_pct_cell), red when bad. */
static void cell_pct(rbuf *b, double v, bool bad, const char *title) {
    char t[32];
    fmt_pct_cell(v, t, sizeof t);
    rb_printf(b, "<td%s", bad ? " class=\"bad\"" : "");
    if (title) { rb_puts(b, " title=\""); rb_esc(b, title); rb_puts(b, "\""); }
    rb_puts(b, ">");
    rb_esc(b, t);
    rb_puts(b, "</td>");
}

static void levels_table(rbuf *b, const rep_model *m) {
    /* telemetry columns only where some level sampled them: a column of "n/a" says nothing */
    bool gpu, dram, kv;
    rep_telemetry_columns(m, &gpu, &dram, &kv);
    int cols = 10 + gpu + dram + kv;
    bool any_thin = false;
    rb_puts(b, "<section id=\"levels\"><h2>");
    rb_puts(b, m->sweep ? "Per-load results" : "Run summary");
    rb_puts(b, "</h2><div class=\"tablewrap\"><table><thead><tr><th>load</th><th>req/s</th>"
               "<th>out tok/s</th><th>goodput req/s</th><th>TTFT p50 / p99 (ms)</th><th>TPOT p50 / p99 (ms)</th>"
               "<th>ITL p99 (ms)</th><th>E2EL p99 (ms)</th><th>client queue p99 (ms)</th><th>err %</th>");
    if (gpu) rb_puts(b, "<th>GPU util %</th>");
    if (dram) rb_puts(b, "<th>DRAM BW %</th>");
    if (kv) rb_puts(b, "<th>KV peak %</th>");
    rb_puts(b, "</tr></thead><tbody>");
    for (size_t i = 0; i < m->n; i++) {
        const rep_level *l = &m->lv[i];
        const json_t *r = l->r;
        char ll[48];
        rep_level_label(m, l, ll, sizeof ll);
        rb_printf(b, "<tr id=\"level-%zu\"%s><td>%s", i, l->is_knee ? " class=\"knee\"" : "", l->is_knee ? "\xe2\x96\xb6 " : "");
        rb_esc(b, ll);
        if (l->repeat > 0) rb_printf(b, " #%d", l->repeat + 1);
        if (l->saturated) {
            /* the sweep's over-saturation verdict, when it judged: the two slopes and their t */
            const json_t *os = json_object_get(l->level, "over_saturation");
            char why[200] = "";
            if (json_is_true(json_object_get(os, "judged")))
                snprintf(why, sizeof why, "in-flight %+.2f/s (t=%.1f), TTFT %+.1f ms/s (t=%.1f), t critical %.2f",
                         rep_num(os, "inflight_slope_per_s"), rep_num(os, "inflight_t"), rep_num(os, "ttft_slope_ms_per_s"),
                         rep_num(os, "ttft_t"), rep_num(os, "t_critical"));
            rb_puts(b, " <span class=\"note\"");
            if (why[0]) { rb_puts(b, " title=\""); rb_esc(b, why); rb_puts(b, "\""); }
            rb_puts(b, l->early_stopped ? ">saturated, stopped early</span>" : ">saturated</span>");
        }
        if (l->is_max_goodput) rb_puts(b, " <span class=\"note\">max goodput</span>");
        if (!l->measured) {
            /* no numbers: what little completed is a biased sample */
            const char *why = json_string_value(json_object_get(l->level, "not_measured_reason"));
            rb_printf(b, "</td><td colspan=\"%d\" class=\"note\">", cols - 1);
            rb_esc(b, why ? why : "not measured: requests outlast the level");
            rb_puts(b, "</td></tr>");
            continue;
        }
        rb_puts(b, "</td>");
        char n[64], ci[160];
        snprintf(n, sizeof n, "n=%.0f completed, %.0f failed", rep_num(r, "completed"), rep_num(r, "failed"));
        double lo, hi;
        int k;
        if (rep_ci(m, l->load, METRIC(output_throughput), &lo, &hi, &k))
            snprintf(ci, sizeof ci, "%s; 95%% CI of the mean over %d repeats: %.0f\xe2\x80\x93%.0f tok/s", n, k, lo, hi);
        else
            snprintf(ci, sizeof ci, "%s", n);
        cell_num(b, rep_num(r, METRIC(request_throughput)), false, n);
        cell_num(b, rep_num(r, METRIC(output_throughput)), false, ci);
        char gt[96], gn[32];
        fmt_num(rep_goodput_tok_s(r), gn, sizeof gn);
        snprintf(gt, sizeof gt, "%s out tok/s from the requests within the SLO", gn);
        cell_num(b, rep_num(r, METRIC(request_goodput)), false, gt);
        cell_pair(b, rep_pct(r, "ttft", 50), rep_pct(r, "ttft", 99), rep_slo_ms(r, "ttft"), thin99(r, "ttft"));
        cell_pair(b, rep_pct(r, "tpot", 50), rep_pct(r, "tpot", 99), rep_slo_ms(r, "tpot"), thin99(r, "tpot"));
        cell_num_thin(b, rep_pct(r, "itl", 99), false, thin99(r, "itl"));
        double e2 = rep_pct(r, "e2el", 99), es = rep_slo_ms(r, "e2el");
        cell_num_thin(b, e2, !isnan(es) && e2 > es, thin99(r, "e2el"));
        cell_num_thin(b, rep_pct(r, "queue", 99), false, thin99(r, "queue"));
        any_thin |= thin99(r, "ttft") >= 0 || thin99(r, "itl") >= 0;
        double e = rep_error_pct(r);
        cell_pct(b, e, e > 1, NULL);
        if (gpu) cell_pct(b, rep_gpu_mean(r, "util_gpu_pct"), false, "mean over the run and GPUs");
        if (dram) cell_pct(b, rep_gpu_mean(r, "dram_bw_util_pct"), false, "mean over the run and GPUs");
        if (kv) cell_pct(b, rep_kv_max_pct(r), false, NULL);
        rb_puts(b, "</tr>");
    }
    rb_puts(b, "</tbody></table></div><p class=\"note\">Red: over the SLO, or more than 1% errors. Hover a "
               "throughput cell for the request counts, a goodput cell for its tokens.");
    if (any_thin)
        rb_printf(b, " * p99 from fewer than %ld samples: the largest sample, not a tail estimate.",
                  summary_percentile_samples_needed(99));
    if (!gpu || !kv) {
        rb_puts(b, " Not sampled, so not shown:");
        if (!gpu) rb_puts(b, dram ? " GPU utilization" : " GPU utilization and DRAM bandwidth (no GPU telemetry)");
        if (!gpu && !kv) rb_puts(b, ";");
        if (!kv) rb_puts(b, " KV-cache usage (no server /metrics or engine series)");
        rb_puts(b, ".");
    }
    if (m->sweep) rb_puts(b, " \xe2\x96\xb6 marks the knee.");
    rb_puts(b, "</p></section>");
}

/* ---- errors ---- */

/* The first message of a class (an HTTP status when status > 0) from the results' error_examples,
 * at the first level that has one; NULL when no level kept one. */
static const char *example_message(const rep_model *m, const char *cls, int status) {
    for (size_t i = 0; i < m->n; i++) {
        size_t k;
        json_t *e;
        json_array_foreach(json_object_get(m->lv[i].r, "error_examples"), k, e) {
            const char *c = json_string_value(json_object_get(e, "class"));
            if (!c || strcmp(c, cls) || (status && json_integer_value(json_object_get(e, "status")) != status)) continue;
            if (json_string_value(json_object_get(e, "message"))) return json_string_value(json_object_get(e, "message"));
        }
    }
    return NULL;
}

static void errors_section(rbuf *b, const rep_model *m, const report_opts *o) {
    rb_puts(b, "<section id=\"errors\"><h2>Errors</h2>");
    double failed = 0;
    for (size_t i = 0; i < m->n; i++) { double f = rep_num(m->lv[i].r, "failed"); if (f > 0) failed += f; }
    if (failed <= 0) {
        rb_puts(b, "<p>No failed requests.</p></section>");
        return;
    }
    /* classes: every key of errors{} with a count somewhere, HTTP statuses split out */
    const char *classes[64];
    size_t nc = 0;
    for (size_t i = 0; i < m->n; i++) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)json_object_get(m->lv[i].r, "errors"), k, v) {
            if (json_is_object(v)) {
                const char *code;
                json_t *cnt;
                json_object_foreach(v, code, cnt) {
                    (void)cnt;
                    size_t j = 0;
                    while (j < nc && strcmp(classes[j], code)) j++;
                    if (j == nc && nc < 64) classes[nc++] = code;
                }
            } else if (json_integer_value(v) > 0 && !(strcmp(k, "http") == 0 &&
                                                        json_object_size(json_object_get(json_object_get(m->lv[i].r, "errors"), "http_status")))) {
                size_t j = 0;
                while (j < nc && strcmp(classes[j], k)) j++;
                if (j == nc && nc < 64) classes[nc++] = k;
            }
        }
    }
    rb_puts(b, "<div class=\"tablewrap\"><table><thead><tr><th>class</th>");
    for (size_t i = 0; i < m->n; i++) {
        char ll[48];
        rep_level_label(m, &m->lv[i], ll, sizeof ll);
        rb_puts(b, "<th>");
        rb_esc(b, ll);
        rb_puts(b, "</th>");
    }
    const report_requests *rq = o->requests;
    bool examples = false;
    for (size_t i = 0; i < m->n; i++) examples |= json_array_size(json_object_get(m->lv[i].r, "error_examples")) > 0;
    rb_puts(b, rq || examples ? "<th class=\"l\">first message</th></tr></thead><tbody>" : "</tr></thead><tbody>");
    for (size_t c = 0; c < nc; c++) {
        bool http = classes[c][0] >= '0' && classes[c][0] <= '9';
        rb_puts(b, "<tr><td>");
        if (http) rb_puts(b, "HTTP ");
        rb_esc(b, classes[c]);
        rb_puts(b, "</td>");
        for (size_t i = 0; i < m->n; i++) {
            const json_t *e = json_object_get(m->lv[i].r, "errors");
            const json_t *v = http ? json_object_get(json_object_get(e, "http_status"), classes[c]) : json_object_get(e, classes[c]);
            char t[32];
            fmt_num(json_is_number(v) ? json_number_value(v) : 0, t, sizeof t);
            rb_printf(b, "<td>%s</td>", t);
        }
        const char *msg = example_message(m, http ? "http" : classes[c], http ? atoi(classes[c]) : 0);
        if (!rq && !examples) { rb_puts(b, "</tr>"); continue; }
        rb_puts(b, "<td class=\"l\">");
        if (msg) {
            char cut[241];
            snprintf(cut, sizeof cut, "%s", msg);
            rb_puts(b, "<code>");
            rb_esc(b, cut);
            rb_puts(b, "</code>");
        }
        for (size_t k = 0; !msg && rq && k < rq->n_error_classes; k++)
            if (!strcmp(rq->first_error_class[k], http ? "http" : classes[c])) {
                rb_puts(b, "<code>");
                char cut[241];
                snprintf(cut, sizeof cut, "%s", rq->first_error_text[k]);
                rb_esc(b, cut);
                rb_puts(b, "</code>");
                break;
            }
        rb_puts(b, "</td></tr>");
    }
    rb_puts(b, "</tbody></table></div><div class=\"grid2\" style=\"margin-top:12px\">");
    charts_errors(b, m);
    rb_puts(b, "</div></section>");
}

/* ---- workload ---- */

/* What was asked against what was sent and received: the dataset spec, and per level the mean
 * input and output tokens per completed request, as the client counted and as the server said. */
static void workload(rbuf *b, const rep_model *m) {
    const json_t *cfg = json_object_get(first_results(m), "config");
    const char *spec = str(cfg, "dataset");
    rb_puts(b, "<section id=\"workload\"><h2>Workload</h2>");
    if (spec) { rb_puts(b, "<p>Dataset: <code>"); rb_esc(b, spec); rb_puts(b, "</code>"); }
    if (str(cfg, "length_unit")) { rb_puts(b, " (lengths in "); rb_esc(b, str(cfg, "length_unit")); rb_puts(b, ")"); }
    if (spec) rb_puts(b, "</p>");
    rb_puts(b, "<div class=\"tablewrap\"><table><thead><tr><th>load</th><th>completed</th><th>mean input tokens</th>"
               "<th>mean input (server)</th><th>mean output tokens</th><th>mean output (client count)</th>"
               "<th>length mismatches</th></tr></thead><tbody>");
    for (size_t i = 0; i < m->n; i++) {
        const json_t *r = m->lv[i].r;
        double n = rep_num(r, "completed");
        char ll[48];
        rep_level_label(m, &m->lv[i], ll, sizeof ll);
        rb_puts(b, "<tr><td>");
        rb_esc(b, ll);
        rb_puts(b, "</td>");
        cell_num(b, n, false, NULL);
        cell_num(b, n > 0 ? rep_num(r, "total_input_tokens") / n : NAN, false, NULL);
        cell_num(b, n > 0 ? rep_num(r, "total_input_tokens_server") / n : NAN, false, NULL);
        cell_num(b, n > 0 ? rep_num(r, "total_output_tokens") / n : NAN, false, NULL);
        cell_num(b, n > 0 ? rep_num(r, "total_output_tokens_client") / n : NAN, false, NULL);
        double mm = rep_num(r, "output_token_mismatches");
        cell_num(b, mm, mm > 0, NULL);
        rb_puts(b, "</tr>");
    }
    rb_puts(b, "</tbody></table></div></section>");
}

/* ---- request classes ---- */

/* One row per class (per level in a sweep): does one tenant's burst hurt another's tail? */
static void classes_section(rbuf *b, const rep_model *m) {
    bool any = false;
    for (size_t i = 0; i < m->n && !any; i++) any = json_array_size(json_object_get(m->lv[i].r, "classes")) > 0;
    if (!any) return;
    rb_puts(b, "<section id=\"classes\"><h2>Request classes</h2><p class=\"note\">Each class is summarised on "
               "its own, under its own SLOs; the client's own pace is judged for the whole run.</p>"
               "<div class=\"tablewrap\"><table><thead><tr>");
    if (m->sweep) rb_puts(b, "<th>load</th>");
    rb_puts(b, "<th>class</th><th>weight</th><th>dataset</th><th>completed</th><th>failed</th><th>TTFT p50 / p99 (ms)</th>"
               "<th>TPOT p50 / p99 (ms)</th><th>E2E p99 (ms)</th><th>out tok/s</th><th>goodput (req/s)</th></tr></thead><tbody>");
    for (size_t i = 0; i < m->n; i++) {
        size_t k;
        json_t *c;
        json_array_foreach(json_object_get(m->lv[i].r, "classes"), k, c) {
            rb_puts(b, "<tr>");
            if (m->sweep) {
                char ll[48];
                rep_level_label(m, &m->lv[i], ll, sizeof ll);
                rb_puts(b, "<td>");
                rb_esc(b, ll);
                rb_puts(b, "</td>");
            }
            rb_puts(b, "<td>");
            rb_esc(b, str(c, "class") ? str(c, "class") : "?");
            rb_puts(b, "</td>");
            cell_num(b, rep_num(c, "weight"), false, NULL);
            rb_puts(b, "<td><code>");
            rb_esc(b, str(c, "dataset") ? str(c, "dataset") : "");
            rb_puts(b, "</code></td>");
            cell_num(b, rep_num(c, "completed"), false, NULL);
            double failed = rep_num(c, "failed");
            cell_num(b, failed, failed > 0, NULL);
            cell_pair(b, rep_num(c, METRIC(median_ttft_ms)), rep_num(c, METRIC(p99_ttft_ms)), NAN, thin99(c, "ttft"));
            cell_pair(b, rep_num(c, METRIC(median_tpot_ms)), rep_num(c, METRIC(p99_tpot_ms)), NAN, thin99(c, "tpot"));
            cell_num_thin(b, rep_num(c, METRIC(p99_e2el_ms)), false, thin99(c, "e2el"));
            cell_num(b, rep_num(c, METRIC(output_throughput)), false, NULL);
            cell_num(b, rep_num(c, METRIC(request_goodput)), false, NULL);
            rb_puts(b, "</tr>");
        }
    }
    rb_puts(b, "</tbody></table></div></section>");
}

/* ---- reproduce ---- */

static void env_row(rbuf *b, const char *k, const json_t *v) {
    if (!v || json_is_null(v)) return;
    /* nothing to say: an empty list ("gpus": [] when the client saw none) */
    if ((json_is_array(v) && !json_array_size(v)) || (json_is_object(v) && !json_object_size(v))) return;
    rb_puts(b, "<dt>");
    rb_esc(b, k);
    rb_puts(b, "</dt><dd>");
    if (json_is_string(v)) rb_esc(b, json_string_value(v));
    else if (json_is_array(v) && json_is_string(json_array_get(v, 0))) {
        size_t i;
        const json_t *e;
        json_array_foreach(v, i, e) {
            if (i) rb_puts(b, ", ");
            rb_esc(b, json_is_string(e) ? json_string_value(e) : "?");
        }
    } else {
        char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        rb_esc(b, s);
        free(s);
    }
    rb_puts(b, "</dd>");
}

static void reproduce(rbuf *b, const rep_model *m) {
    const json_t *r = first_results(m);
    rb_puts(b, "<section id=\"reproduce\"><h2>Reproduce</h2>");
    const char *lo_url = NULL;
    char *cmd = rep_command(m->doc, r, &lo_url);
    if (cmd) { rb_puts(b, "<p>Command:</p><pre>"); rb_esc(b, cmd); rb_puts(b, "</pre>"); }
    if (redact_command_note(cmd)) { rb_puts(b, "<p class=\"faint\">"); rb_esc(b, redact_command_note(cmd)); rb_puts(b, "</p>"); }
    free(cmd);
    if (lo_url) {
        rb_puts(b, "<p class=\"faint\">The server listened on ");
        rb_esc(b, lo_url);
        rb_puts(b, ", a loopback address of the machine that ran this: start the server again and give its "
                   "address to --url.</p>");
    }
    rb_puts(b, "<dl class=\"env\">");
    env_row(b, "tool", json_object_get(r, "tool"));
    env_row(b, "version", json_object_get(r, "version"));
    json_t *sweep_producer = m->sweep ? json_string("sweep") : NULL;   /* not its first level's "bench" */
    env_row(b, "producer", sweep_producer ? sweep_producer : json_object_get(r, "producer"));
    json_decref(sweep_producer);
    env_row(b, "date", json_object_get(r, "date"));
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)json_object_get(r, "environment"), k, v) env_row(b, k, v);
    const json_t *tel = json_object_get(r, "telemetry");
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(tel, "gpu"), i, g) {
        char key[96];
        if (str(g, "host")) snprintf(key, sizeof key, "GPU %zu (%s, index %lld)", i, str(g, "host"), (long long)json_integer_value(json_object_get(g, "index")));
        else snprintf(key, sizeof key, "GPU %zu", i);
        env_row(b, key, json_object_get(g, "name"));
    }
    env_row(b, "server metrics", json_object_get(json_object_get(tel, "server"), "source"));
    env_row(b, "NUMA", json_object_get(json_object_get(json_object_get(tel, "host"), "numa"), "why"));
    rb_puts(b, "</dl>");
    const json_t *cfg = json_object_get(m->doc, "config");
    if (!cfg) cfg = json_object_get(r, "config");
    if (cfg) {
        char *s = json_dumps(cfg, JSON_INDENT(2) | JSON_SORT_KEYS);
        rb_puts(b, "<p>Configuration:</p><pre>");
        rb_esc(b, s);
        rb_puts(b, "</pre>");
        free(s);
    }
    const json_t *eng = json_object_get(r, "engine");
    if (eng) {
        json_t *copy = json_deep_copy(eng);
        json_object_del(copy, "series");   /* the series are drawn above, not listed */
        char *s = json_dumps(copy, JSON_INDENT(2));
        rb_puts(b, "<p>Simulated engine:</p><pre>");
        rb_esc(b, s);
        rb_puts(b, "</pre>");
        free(s);
        json_decref(copy);
    }
    rb_puts(b, "</section>");
}

/* ---- page ---- */

void report_page_head(rbuf *b, const char *title) {
    rb_puts(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
               "<meta name=\"color-scheme\" content=\"light dark\"><title>");
    rb_esc(b, title);
    rb_puts(b, "</title><style>");
    rb_puts(b, report_css);
    rb_puts(b, "</style></head><body><main><header><h1>");
    rb_esc(b, title);
    rb_puts(b, "</h1><div class=\"meta\">");
}

static void build(rbuf *b, const rep_model *m, const report_opts *o) {
    rbuf title;
    rb_init(&title);
    page_title(m, o, &title);
    report_page_head(b, title.p ? title.p : "");
    rb_free(&title);
    const json_t *r = first_results(m);
    if (str(r, "date")) { rb_esc(b, str(r, "date")); rb_puts(b, " &middot; "); }
    bool length = m->sweep && json_is_object(json_object_get(m->doc, "context"));
    if (m->sweep) rb_printf(b, "sweep over %s, %zu levels &middot; ", length ? (strcmp(m->axis, "input_len") ? "output length"
                            : "prompt length") : m->axis && !strcmp(m->axis, "rate") ? "request rate" : "concurrency", m->n);
    double d = 0;
    for (size_t i = 0; i < m->n; i++) { double x = rep_num(m->lv[i].r, "duration"); if (x > 0) d += x; }
    char ds[32];
    fmt_num(d, ds, sizeof ds);
    rb_printf(b, "%s s measured &middot; dsperf ", ds);
    rb_esc(b, str(r, "version") ? str(r, "version") : "?");
    rb_puts(b, "</div><nav><a href=\"#findings\">Findings</a>");
    if (length) rb_puts(b, "<a href=\"#context\">Context</a>");
    else if (m->sweep) rb_puts(b, "<a href=\"#curves\">Saturation</a>");
    if (m->sweep && json_is_array(json_object_get(json_object_get(m->doc, "stability"), "points")))
        rb_puts(b, "<a href=\"#stability\">Stability</a>");
    rb_puts(b, "<a href=\"#levels\">Table</a><a href=\"#distribution\">Latency distribution</a>"
               "<a href=\"#timeline\">Timeline</a><a href=\"#errors\">Errors</a><a href=\"#workload\">Workload</a>"
               "<a href=\"#reproduce\">Reproduce</a>"
               "</nav></header>");
    verdict(b, m, o);
    findings(b, m, o);
    if (length) charts_context(b, m);   /* along length, load is fixed: no saturation curve */
    else if (m->sweep) {
        rb_puts(b, "<section id=\"curves\"><h2>Saturation and latency vs throughput</h2><div class=\"grid2\">");
        charts_saturation(b, m);
        charts_latency_vs_throughput(b, m, "ttft", "TTFT");
        charts_latency_vs_throughput(b, m, "tpot", "TPOT");
        charts_breakdown(b, m);
        rb_puts(b, "</div></section>");
    }
    charts_stability(b, m);
    levels_table(b, m);
    classes_section(b, m);
    report_cache_section(b, m);
    report_phases_section(b, m);
    rb_puts(b, "<section id=\"distribution\"><h2>Latency distribution</h2>");
    double completed = 0;
    for (size_t i = 0; i < m->n; i++) { double c = rep_num(m->lv[i].r, "completed"); if (c > 0) completed += c; }
    if (completed <= 0) rb_puts(b, "<p>No request completed successfully: there is no latency to show.</p>");
    rb_puts(b, "<div class=\"grid2\">");
    charts_nines(b, m, o->requests, "ttft", "TTFT");
    charts_nines(b, m, o->requests, "tpot", "TPOT");
    charts_nines(b, m, o->requests, "itl", "ITL");
    charts_nines(b, m, o->requests, "e2el", "E2E latency");
    rb_puts(b, "</div></section><section id=\"timeline\"><h2>Run timeline</h2>");
    charts_timeline(b, m, o->requests, o->diagnosis);
    charts_gantt(b, m, o->requests);
    rb_puts(b, "</section>");
    errors_section(b, m, o);
    workload(b, m);
    report_deployment(b, first_results(m), m);
    reproduce(b, m);
    rb_puts(b, "<footer>Generated by <b>dsperf report</b>");
    if (o->source_name) { rb_puts(b, " from "); rb_esc(b, o->source_name); }
    rb_puts(b, ". Self-contained: no scripts, no network.</footer></main></body></html>\n");
}

int report_write_html(FILE *f, const json_t *doc, const report_opts *o, char *err, size_t errlen) {
    if (report_is_tune(doc)) return report_tune_html(f, doc, o, err, errlen);
    if (report_is_drift(doc)) return report_drift_html(f, doc, o, err, errlen);
    rep_model m;
    if (rep_model_init(&m, doc, err, errlen) != 0) return -1;
    if (!m.n) {
        snprintf(err, errlen, "the sweep document holds no levels with results");
        rep_model_free(&m);
        return -1;
    }
    rbuf b;
    rb_init(&b);
    build(&b, &m, o);
    rep_model_free(&m);
    return rb_write(&b, f, err, errlen);
}
