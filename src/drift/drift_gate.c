/* drift_gate — gate rules on a drift document. A rule is a floor or a ceiling on a bucket metric:
 * "top1_agreement>=0.99", "delta_ppl<=+2%" (X% is X/100: drift's ratios are fractions),
 * "kl@16k<=0.01" for one context; compare's "metric:>=X" / "metric:<=X" / "metric:X" spellings are
 * accepted too. compare's own parser does not fit: its rules are allowances on the change between
 * two runs ("+10%" needs a direction), while drift's numbers already are the change, and a rule can
 * name a context. Without "@context" a rule must hold at every measured context. */
#include "drift/drift_int.h"
#include "common/units.h"
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int parse_one(const char *s, size_t len, drift_rule *r, char *err, size_t errlen) {
    char buf[160];
    char *a = units_copy_trimmed(buf, sizeof buf, s, len);
    memset(r, 0, sizeof *r);
    snprintf(r->text, sizeof r->text, "%.95s", a);
    const char *want = "rules look like top1_agreement>=0.99, delta_ppl<=+2%, kl@16k<=0.01";
    size_t name_len = strcspn(a, "<>=:@");
    if (!name_len || name_len >= sizeof r->metric) { snprintf(err, errlen, "bad --gate rule '%s': %s", r->text, want); return -1; }
    for (size_t i = 0; i < name_len; i++)
        if (!isalnum((unsigned char)a[i]) && a[i] != '_') { snprintf(err, errlen, "bad --gate rule '%s': %s", r->text, want); return -1; }
    memcpy(r->metric, a, name_len);
    char *p = a + name_len;
    if (*p == '@') {
        p++;
        size_t cl = strcspn(p, "<>=:");
        char cbuf[32];
        long long v, mult = 1;
        snprintf(cbuf, sizeof cbuf, "%.*s", (int)(cl < 31 ? cl : 31), p);
        size_t l = strlen(cbuf);
        if (l && (cbuf[l - 1] == 'k' || cbuf[l - 1] == 'K')) { mult = 1024; cbuf[l - 1] = 0; }
        if (units_parse_int(cbuf, 1, 1LL << 30, &v) < 0) {
            snprintf(err, errlen, "bad --gate rule '%s': '@' names a context like @16k or @4096", r->text);
            return -1;
        }
        r->context = v * mult;
        p += cl;
    }
    if (*p == ':') p++;
    if (!strncmp(p, ">=", 2)) { r->at_least = true; p += 2; }
    else if (!strncmp(p, "<=", 2)) p += 2;
    else if (*p == '<' || *p == '>' || *p == '=') {
        snprintf(err, errlen, "bad --gate rule '%s': use >= (a floor) or <= (a ceiling)", r->text);
        return -1;
    } else if (p == a + name_len || p[-1] != ':') {
        snprintf(err, errlen, "bad --gate rule '%s': %s", r->text, want);
        return -1;
    }
    size_t vl = strlen(p);
    bool pct = vl && p[vl - 1] == '%';
    if (pct) p[--vl] = 0;
    char *end;
    double x = strtod(p, &end);
    if (!vl || *end || !isfinite(x)) { snprintf(err, errlen, "bad --gate rule '%s': '%s' is not a number (%s)", r->text, p, want); return -1; }
    r->value = pct ? x / 100.0 : x;
    return 0;
}

int drift_parse_rules(const char *spec, drift_rule *rules, int max, int *n, char *err, size_t errlen) {
    for (const char *p = spec, *end; *p; p = *end ? end + 1 : end) {
        end = p + strcspn(p, ",");
        if (end == p) continue;
        if (*n >= max) { snprintf(err, errlen, "too many --gate rules (at most %d)", max); return -1; }
        if (parse_one(p, (size_t)(end - p), &rules[(*n)++], err, errlen) < 0) return -1;
    }
    return 0;
}

/* "98.7% [98.3, 99.0]" for fractions, "0.0123 [0.01, 0.015]" otherwise */
static void shown(const json_t *b, const char *metric, char *buf, size_t len) {
    double v = json_number_value(json_object_get(b, metric));
    char cik[64];
    snprintf(cik, sizeof cik, "%s_ci", metric);
    const json_t *ci = json_object_get(b, cik);
    bool frac = strstr(metric, "agreement") || strstr(metric, "ppl") || strstr(metric, "rate") || strstr(metric, "containment") ||
                strstr(metric, "coverage");
    if (frac && strstr(metric, "ppl") && !strstr(metric, "delta")) frac = false;
    if (frac) {
        int n = snprintf(buf, len, "%.2f%%", v * 100);
        if (json_is_array(ci) && n > 0 && (size_t)n < len)
            snprintf(buf + n, len - (size_t)n, " [%.2f, %.2f]", json_number_value(json_array_get(ci, 0)) * 100,
                     json_number_value(json_array_get(ci, 1)) * 100);
    } else {
        int n = snprintf(buf, len, "%.4g", v);
        if (json_is_array(ci) && n > 0 && (size_t)n < len)
            snprintf(buf + n, len - (size_t)n, " [%.4g, %.4g]", json_number_value(json_array_get(ci, 0)), json_number_value(json_array_get(ci, 1)));
    }
}

int drift_gate(json_t *doc, const drift_rule *rules, int n, char *err, size_t errlen) {
    const json_t *buckets = json_object_get(doc, "buckets");
    json_t *res = json_array();
    bool all = true;
    for (int i = 0; i < n; i++) {
        const drift_rule *r = &rules[i];
        size_t k;
        const json_t *b;
        bool known = false, ctx_found = r->context == 0, passed = true, evaluated = false;
        char why[400] = "";
        json_array_foreach(buckets, k, b) {
            if (json_object_get(b, r->metric)) known = true;
            if (r->context && json_integer_value(json_object_get(b, "context")) != r->context) continue;
            ctx_found = true;
            const json_t *v = json_object_get(b, r->metric);
            if (!json_is_true(json_object_get(b, "complete"))) continue;
            char ctx[32], val[96];
            snprintf(ctx, sizeof ctx, "%lld", (long long)json_integer_value(json_object_get(b, "context")));
            if (!json_is_number(v)) {
                if (passed) snprintf(why, sizeof why, "%s was not measured at context %s", r->metric, ctx);
                passed = false;
                continue;
            }
            evaluated = true;
            double x = json_number_value(v);
            bool ok = r->at_least ? x >= r->value : x <= r->value;
            shown(b, r->metric, val, sizeof val);
            if (!ok && passed) {
                snprintf(why, sizeof why, "at context %s %s is %s, %s %g", ctx, r->metric, val, r->at_least ? "below" : "above", r->value);
                passed = false;
            }
        }
        if (json_array_size(buckets) && !known) {
            snprintf(err, errlen, "--gate rule '%s': no context has a metric '%s' (names as in the drift document: "
                     "top1_agreement, delta_ppl, kl, mean_logprob_delta, exact_match_rate, ...)", r->text, r->metric);
            json_decref(res);
            return -1;
        }
        if (json_array_size(buckets) && !ctx_found) {
            snprintf(err, errlen, "--gate rule '%s': no context %lld was measured", r->text, (long long)r->context);
            json_decref(res);
            return -1;
        }
        if (passed && !evaluated) { passed = false; snprintf(why, sizeof why, "no complete context to evaluate it on"); }
        if (passed) snprintf(why, sizeof why, "holds at %s", r->context ? "its context" : "every context");
        all = all && passed;
        json_array_append_new(res, json_pack("{s:s,s:b,s:s}", "rule", r->text, "passed", passed, "reason", why));
    }
    bool partial = json_is_true(json_object_get(doc, "partial"));
    json_object_set_new(doc, "gate", json_pack("{s:o,s:b,s:b}", "rules", res, "partial", partial, "passed", all && !partial));
    return 0;
}
