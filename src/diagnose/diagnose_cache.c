/* diagnose_cache — the prefix_cache class: the hit rate the server achieved (its usage's cached
 * tokens, else its /metrics) far below the hit rate the workload allows (results.prefix_cache,
 * metrics/workload.h). Two causes tell apart by the KV cache's fill: a cache that ran full
 * evicted prefixes before they were reused (the working set does not fit: KV capacity), while a
 * cache with room that still missed never held them where the requests went (prefix caching off,
 * or requests of one prefix spread over replicas without prefix-aware routing). For a trace, the
 * hit rate an LRU cache of the server's KV size allows (config.trace's curve) tells them apart
 * exactly; otherwise the KV cache's fill and the working set against its size do. */
#include "diagnose/diagnose_int.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

static const json_t *get(const json_t *o, const char *k) { return json_object_get(o, k); }

/* The KV cache's fill over the run (0..1): the sim engine's series, else the server's /metrics. */
static double kv_fill_max(const diag_in *in, const char **src) {
    if (in->eng_series && get(in->eng_series, "kv_usage")) {
        *src = "engine.series.kv_usage";
        return diag_max(get(in->eng_series, "kv_usage"));
    }
    const json_t *s = get(get(in->tel, "server"), "series");
    if (s && get(s, "kv_usage_pct")) {
        *src = "telemetry.server.series.kv_usage_pct";
        return diag_max(get(s, "kv_usage_pct")) / 100;
    }
    *src = NULL;
    return NAN;
}

/* The KV cache's size in tokens: the simulated engine's, or what vLLM states on /metrics. */
static double kv_capacity(const diag_in *in, const char **src) {
    double cap = diag_num(in->engine, "kv_tokens");
    *src = "engine.kv_tokens";
    if (!(cap > 0)) {
        cap = diag_num(get(get(in->doc, "telemetry_summary"), "server"), "kv_capacity_tokens");
        *src = "telemetry_summary.server.kv_capacity_tokens (vllm:cache_config_info)";
    }
    return cap > 0 ? cap : NAN;
}

/* The hit rate an LRU prefix cache of cap tokens allows on the trace (config.trace's curve). */
static double lru_at(const diag_in *in, double cap) {
    const json_t *curve = get(get(in->cfg, "trace"), "lru_hit_rate_by_kv_tokens");
    if (!json_array_size(curve) || !isfinite(cap)) return NAN;
    double best = 0;
    size_t i;
    json_t *pt;
    json_array_foreach(curve, i, pt)
        if (json_number_value(json_array_get(pt, 0)) <= cap) best = json_number_value(json_array_get(pt, 1));
    return best;
}

void diag_rule_prefix_cache(diag_in *in, json_t *list, json_t *checked) {
    const json_t *pc = get(in->doc, "prefix_cache");
    double bound = diag_num(pc, "hit_rate_bound");
    double hit = diag_num(pc, "hit_rate");
    const char *hit_src = "results.prefix_cache.hit_rate (server usage)";
    if (!isfinite(hit)) { hit = diag_num(pc, "hit_rate_metrics"); hit_src = "results.prefix_cache.hit_rate_metrics (server /metrics)"; }
    if (!isfinite(bound) || !isfinite(hit)) {
        diag_checked(checked, "prefix_cache", false, !isfinite(bound)
                     ? "no workload bound on the hit rate (a mooncake trace, a prefix or a sessions dataset gives one)"
                     : "the server reported no cached tokens (usage.prompt_tokens_details, llama.cpp timings) and no "
                       "prefix-cache counters on /metrics (--server-metrics)");
        return;
    }
    diag_checked(checked, "prefix_cache", true, "results.prefix_cache (measured hit rate, the workload's bound, TTFT by hit and "
                 "miss), config.trace (working set, LRU hit rate by KV size), the KV cache's size (engine.kv_tokens or "
                 "vllm:cache_config_info), KV usage series");
    if (bound < DIAG_PC_MIN_BOUND || hit >= DIAG_PC_SHORT * bound) return;
    const char *kv_src, *cap_src;
    double fill = kv_fill_max(in, &kv_src);
    double ws = diag_num(get(in->cfg, "trace"), "working_set_tokens"), cap = kv_capacity(in, &cap_src);
    /* with the trace's LRU curve and the cache's size, what that size allows decides: a cache
     * that cannot hold the reuse evicts; one that could, and still missed, kept prefixes apart */
    double lru = lru_at(in, cap);
    bool full, room;
    if (isfinite(lru)) { full = lru < DIAG_PC_SHORT * bound; room = !full; }
    else {
        full = fill >= DIAG_KV_FULL || (ws > 0 && cap > 0 && ws > cap);
        room = isfinite(fill) && fill < DIAG_PC_ROOM && !(ws > cap && cap > 0);
    }
    double gap = (bound - hit) / bound;
    double conf = (full || room ? 0.75 : 0.55) + 0.2 * (gap > 1 ? 1 : gap);
    bool llama_slots = !strcmp(in->dep.engine, "llama.cpp") && in->dep.max_num_seqs > 0;
    json_t *f = diag_finding(list, "prefix_cache", conf,
                             full ? "prefix-cache hits %.0f%% of the %.0f%% the workload allows: the KV cache is too small for "
                                    "the working set, so prefixes are evicted before they are reused"
                           : room && llama_slots ? "prefix-cache hits %.0f%% of the %.0f%% the workload allows while the KV cache "
                                    "had room: llama.cpp keeps one prompt per slot, and its slots are fewer than the prefixes "
                                    "in turn"
                           : room ? "prefix-cache hits %.0f%% of the %.0f%% the workload allows while the KV cache had room: "
                                    "prefixes are not kept where their requests go (prefix caching off, or spread over replicas)"
                                  : "prefix-cache hits %.0f%% of the %.0f%% the workload allows",
                             100 * hit, 100 * bound);
    /* the prompt tokens computed that the cache could have served, of all computed */
    diag_cost(f, hit < 1 ? (bound - hit) / (1 - hit) : 0, "of prefill work (prompt tokens computed) the cache could have served");
    diag_ev(f, 100 * hit, "%", hit_src, "measured hit rate %.1f%%", 100 * hit);
    diag_ev(f, 100 * bound, "%", "results.prefix_cache.hit_rate_bound", "the workload allows %.1f%%: the share of prompt tokens an "
            "unbounded cache would serve (repeated blocks, conversation histories)", 100 * bound);
    double th = diag_num(get(pc, "ttft_hit"), "median_ms"), tm = diag_num(get(pc, "ttft_miss"), "median_ms");
    if (isfinite(th) && isfinite(tm))
        diag_ev(f, tm, "ms", "results.prefix_cache.ttft_hit / ttft_miss", "median TTFT %.1f ms on a miss vs %.1f ms on a hit", tm, th);
    if (isfinite(lru))
        diag_ev(f, 100 * lru, "%", "config.trace.lru_hit_rate_by_kv_tokens at the KV cache's size", "an LRU prefix cache of the "
                "server's %.0f KV tokens (%s) allows %.1f%% on this trace", cap, cap_src, 100 * lru);
    if (isfinite(fill)) diag_ev(f, 100 * fill, "%", kv_src, "KV usage max %.0f%%", 100 * fill);
    if (ws > 0 && cap > 0)
        diag_ev(f, ws, "tokens", "config.trace.working_set_tokens vs the KV cache's size", "the trace's distinct blocks hold %.0f "
                "tokens; the KV cache holds %.0f (%.1fx)", ws, cap, ws / cap);
    else if (ws > 0)
        diag_ev(f, ws, "tokens", "config.trace.working_set_tokens", "the trace's distinct blocks hold %.0f tokens", ws);
    if (!room)
        diag_kv_memory_settings(in, f, "half the bytes per cached token: about twice the prefixes stay in the cache",
                                "more memory for KV blocks: a larger working set stays cached");
    if (!full && llama_slots) {
        diag_ev(f, in->dep.max_num_seqs, "slots", in->dep.max_num_seqs_s.src, "%d slot%s, each holding the last prompt it "
                "served", in->dep.max_num_seqs, in->dep.max_num_seqs == 1 ? "" : "s");
        /* llama.cpp keeps each slot's last prompt (cache_prompt is on by default) and sends a request
         * to the slot whose prompt is most like it: prefixes survive only while there are as many
         * slots as prefixes in turn */
        char cur[16], sug[16];
        snprintf(cur, sizeof cur, "%d", in->dep.max_num_seqs);
        snprintf(sug, sizeof sug, "%d", 2 * in->dep.max_num_seqs);
        diag_setting_any(in, f, "max_num_seqs", cur, sug, "llama.cpp caches the last prompt of each slot: more slots keep more "
                     "prefixes (each slot gets -c / -np tokens, so raise -c with it)");
    } else if (!full) {
        const json_t *sim = get(in->cfg, "sim");
        const json_t *pcs = get(sim, "prefix_caching");
        diag_setting(in, f, "enable_prefix_caching", json_is_boolean(pcs) ? (json_is_true(pcs) ? "on" : "off") : NULL, "on",
                     "requests reuse the KV of prefixes already computed");
        diag_knob(f, "prefix-aware routing", "enable", "requests sharing a prefix go to the replica that holds it "
                  "(e.g. a router that hashes the prompt's leading blocks), so each replica's cache sees the whole reuse");
    }
}
