/* drift_text — a drift document for people: the terminal table (one row per context, the noise
 * floor's verdict, the gate) and the one sentence diagnose and tune attach to a KV-cache dtype
 * recommendation. */
#include "drift/drift_int.h"
#include <math.h>
#include <string.h>

static double num(const json_t *o, const char *k) {
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static void ctx_label(int64_t c, char *buf, size_t len) {
    if (len < 24) { if (len) buf[0] = 0; return; }
    if (c >= 1024 && c % 1024 == 0) snprintf(buf, len, "%lldk", (long long)(c / 1024));
    else snprintf(buf, len, "%lld", (long long)c);
}

/* "99.61% [99.20, 100.00]" (pct: value x 100 with a %, signed for deltas) */
static void fmt_ci(const json_t *b, const char *k, bool pct, bool sign, char *buf, size_t len) {
    double v = num(b, k);
    char cik[64];
    snprintf(cik, sizeof cik, "%s_ci", k);
    const json_t *ci = json_object_get(b, cik);
    if (!isfinite(v)) { snprintf(buf, len, "n/a"); return; }
    double m = pct ? 100 : 1;
    const char *f = sign ? (pct ? "%+.2f%%" : "%+.4g") : (pct ? "%.2f%%" : "%.4g");
    int n = snprintf(buf, len, f, v * m);
    if (json_is_array(ci) && n > 0 && (size_t)n < len) {
        const char *g = sign ? (pct ? " [%+.2f, %+.2f]" : " [%+.3g, %+.3g]") : (pct ? " [%.2f, %.2f]" : " [%.3g, %.3g]");
        snprintf(buf + n, len - (size_t)n, g, json_number_value(json_array_get(ci, 0)) * m, json_number_value(json_array_get(ci, 1)) * m);
    }
}

void drift_print(FILE *f, const json_t *doc) {
    const json_t *b = json_object_get(doc, "baseline"), *c = json_object_get(doc, "candidate"), *cfg = json_object_get(doc, "config");
    fprintf(f, "dsperf drift: baseline %s (%s) vs candidate %s (%s)%s\n",
            json_string_value(json_object_get(b, "url")), json_string_value(json_object_get(b, "model")) ? json_string_value(json_object_get(b, "model")) : "?",
            json_string_value(json_object_get(c, "url")), json_string_value(json_object_get(c, "model")) ? json_string_value(json_object_get(c, "model")) : "?",
            json_is_true(json_object_get(doc, "partial")) ? "  [PARTIAL: interrupted]" : "");
    fprintf(f, "  %lld prompts x %lld tokens per context (lengths in %s), top-%lld logprobs; scored by %s / %s%s\n",
            (long long)json_integer_value(json_object_get(cfg, "prompts_per_context")), (long long)json_integer_value(json_object_get(cfg, "gen_tokens")),
            json_string_value(json_object_get(cfg, "length_unit")), (long long)json_integer_value(json_object_get(cfg, "top_k")),
            json_string_value(json_object_get(b, "score_method")), json_string_value(json_object_get(c, "score_method")),
            json_is_true(json_object_get(doc, "same_deployment")) ? "; the candidate is the baseline: this run is the noise floor" : "");
    fprintf(f, "  %-8s %-24s %-24s %-9s %-9s %-6s %-8s %s\n", "context", "top-1 agreement", "delta PPL", "KL", "dlogprob",
            "exact", "1st diff", "vs noise floor");
    size_t i;
    const json_t *bk;
    json_array_foreach(json_object_get(doc, "buckets"), i, bk) {
        char ctx[24], ag[48], dp[48], kl[16], dl[16], ex[16], fd[16];
        ctx_label(json_integer_value(json_object_get(bk, "context")), ctx, sizeof ctx);
        fmt_ci(bk, "top1_agreement", true, false, ag, sizeof ag);
        fmt_ci(bk, "delta_ppl", true, true, dp, sizeof dp);
        snprintf(kl, sizeof kl, "%.4g", num(bk, "kl"));
        snprintf(dl, sizeof dl, "%+.4f", num(bk, "mean_logprob_delta"));
        snprintf(ex, sizeof ex, "%.0f%%", num(bk, "exact_match_rate") * 100);
        snprintf(fd, sizeof fd, "%.1f", num(bk, "mean_first_divergence"));
        const char *v = json_string_value(json_object_get(bk, "verdict"));
        fprintf(f, "  %-8s %-24s %-24s %-9s %-9s %-6s %-8s %s\n", ctx, ag, dp, kl, dl, ex, fd, v ? v : "");
    }
    json_array_foreach(json_object_get(doc, "buckets"), i, bk) {
        const json_t *fl = json_object_get(bk, "floor");
        if (!json_is_object(fl)) continue;
        char ctx[24], ag[48], dp[48];
        ctx_label(json_integer_value(json_object_get(bk, "context")), ctx, sizeof ctx);
        fmt_ci(fl, "top1_agreement", true, false, ag, sizeof ag);
        fmt_ci(fl, "delta_ppl", true, true, dp, sizeof dp);
        fprintf(f, "  floor %-3s %-24s %-24s (the baseline against itself)\n", ctx, ag, dp);
    }
    const char *src = json_string_value(json_object_get(json_array_get(json_object_get(doc, "buckets"), 0), "delta_ppl_source"));
    fprintf(f, "  delta PPL of the %s; KL(baseline||candidate) per token from the top-%lld lists (a lower bound); intervals: %g%% bootstrap over prompts\n",
            src && !strcmp(src, "text") ? "reference text" : "baseline's continuation", (long long)json_integer_value(json_object_get(cfg, "top_k")),
            num(cfg, "confidence") * 100);
    json_array_foreach(json_object_get(doc, "warnings"), i, bk) fprintf(f, "  warning: %s\n", json_string_value(bk));
    const json_t *gate = json_object_get(doc, "gate");
    if (gate) {
        size_t n = json_array_size(json_object_get(gate, "rules")), failed = 0;
        const json_t *r;
        json_array_foreach(json_object_get(gate, "rules"), i, r) failed += !json_is_true(json_object_get(r, "passed"));
        fprintf(f, "gate: %s (%zu of %zu rules failed%s)\n", json_is_true(json_object_get(gate, "passed")) ? "PASSED" : "FAILED", failed, n,
                json_is_true(json_object_get(gate, "partial")) ? "; the run is partial" : "");
        json_array_foreach(json_object_get(gate, "rules"), i, r)
            fprintf(f, "  %s %s: %s\n", json_is_true(json_object_get(r, "passed")) ? "ok  " : "FAIL", json_string_value(json_object_get(r, "rule")),
                    json_string_value(json_object_get(r, "reason")));
    }
}

void drift_kv_note(const json_t *doc, char *buf, size_t len) {
    if (!doc) {
        snprintf(buf, len, "untested for accuracy: measure what it costs with dsperf drift --baseline URL --candidate URL "
                           "(the same model with only the KV-cache dtype changed) and pass the result with --drift FILE");
        return;
    }
    size_t i, n = 0;
    const json_t *bk, *last = NULL;
    int w = snprintf(buf, len, "accuracy cost (dsperf drift): top-1 agreement / delta PPL by context:");
    json_array_foreach(json_object_get(doc, "buckets"), i, bk) {
        if (!json_is_true(json_object_get(bk, "complete")) || w < 0 || (size_t)w >= len) continue;
        char ctx[24];
        ctx_label(json_integer_value(json_object_get(bk, "context")), ctx, sizeof ctx);
        w += snprintf(buf + w, len - (size_t)w, "%s %s %.2f%% / %+.2f%%", n++ ? "," : "", ctx,
                      num(bk, "top1_agreement") * 100, num(bk, "delta_ppl") * 100);
        last = bk;
    }
    if (!last) { snprintf(buf, len, "the drift result holds no complete context: the recommendation is untested for accuracy"); return; }
    const char *v = json_string_value(json_object_get(last, "verdict"));
    if (w > 0 && (size_t)w < len)
        snprintf(buf + w, len - (size_t)w, "%s%s", v ? "; at the longest: " : "", v ? v : "");
}
