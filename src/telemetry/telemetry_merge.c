/* telemetry_merge — the telemetry of a job over many hosts: each node's sampler (GPUs, host,
 * and on rank 0 the server's /metrics) ran on its own clock, and its series arrive with their
 * times already on the job's clock. Merging labels every GPU with its host, keeps every node's
 * host series, and recomputes the whole-deployment summary over all GPUs, so diagnose and the
 * report see every GPU of the deployment, per node and as a whole, and which one is slowest. */
#include "telemetry/telemetry.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

static json_t *labelled(const json_t *o, const telemetry_node *nd) {
    json_t *c = json_deep_copy(o);
    if (!json_is_object(c)) return c;
    json_object_set_new(c, "host", json_string(nd->host ? nd->host : ""));
    json_object_set_new(c, "rank", json_integer(nd->rank));
    return c;
}

/* The sections both merges end with; the arrays are released. */
static json_t *finish(json_t *o, json_t *gpus, json_t *hosts, json_t *per) {
    if (json_array_size(hosts)) json_object_set(o, "hosts", hosts);
    json_object_set(o, "nodes", per);
    json_decref(gpus);
    json_decref(hosts);
    json_decref(per);
    return o;
}

json_t *telemetry_merge_series(const telemetry_node *nodes, int n) {
    json_t *o = json_object(), *gpus = json_array(), *hosts = json_array(), *per = json_array();
    bool any_gpu = false;
    for (int i = 0; i < n; i++) {
        const json_t *s = nodes[i].series;
        if (!s) continue;
        if (!json_object_get(o, "interval_s")) json_object_set(o, "interval_s", json_object_get(s, "interval_s"));
        json_t *g = json_object_get(s, "gpu");
        if (g) any_gpu = true;
        size_t k;
        json_t *one;
        json_array_foreach(g, k, one) json_array_append_new(gpus, labelled(one, &nodes[i]));
        json_t *h = json_object_get(s, "host");
        if (h) {
            if (!json_object_get(o, "host")) json_object_set_new(o, "host", labelled(h, &nodes[i]));
            json_array_append_new(hosts, labelled(h, &nodes[i]));
        }
        /* the server is scraped once, by rank 0 */
        if (json_object_get(s, "server") && !json_object_get(o, "server"))
            json_object_set_new(o, "server", json_deep_copy(json_object_get(s, "server")));
        json_t *w = json_object_get(s, "warning");
        json_array_append_new(per, json_pack("{s:s,s:i,s:i,s:O,s:O}", "host", nodes[i].host ? nodes[i].host : "",
                                             "rank", nodes[i].rank, "gpus", (int)json_array_size(g),
                                             "sampler", json_object_get(s, "sampler") ? json_object_get(s, "sampler") : json_null(),
                                             "warning", w ? w : json_null()));
        if (!json_object_get(o, "sampler") && json_object_get(s, "sampler"))
            json_object_set(o, "sampler", json_object_get(s, "sampler"));
    }
    if (any_gpu) json_object_set(o, "gpu", gpus);
    return finish(o, gpus, hosts, per);
}

static double stat_mean(const json_t *g, const char *col) {
    json_t *m = json_object_get(json_object_get(g, col), "mean");
    return json_is_number(m) ? json_number_value(m) : NAN;
}

/* The slowest GPU: with clocks that differ (lowest mean SM clock at least 2% under the highest),
 * the lowest clock — in a tensor- or expert-parallel step every GPU waits for it; else the
 * busiest (highest mean utilisation), the one the others wait for. NULL when undecidable. */
static json_t *slowest(const json_t *gpus) {
    size_t i, lo = (size_t)-1, busy = (size_t)-1;
    json_t *g;
    double cmin = INFINITY, cmax = -INFINITY, umax = -INFINITY;
    json_array_foreach(gpus, i, g) {
        double c = stat_mean(g, "sm_clock_mhz"), u = stat_mean(g, "sm_util_pct");
        if (!isfinite(u)) u = stat_mean(g, "util_gpu_pct");
        if (isfinite(c) && c < cmin) { cmin = c; lo = i; }
        if (isfinite(c) && c > cmax) cmax = c;
        if (isfinite(u) && u > umax) { umax = u; busy = i; }
    }
    if (json_array_size(gpus) < 2) return NULL;
    char why[256];
    if (lo != (size_t)-1 && cmin < 0.98 * cmax) {
        g = json_array_get(gpus, lo);
        json_t *th = json_object_get(g, "throttled_frac");
        snprintf(why, sizeof why, "lowest mean SM clock: %.0f MHz against %.0f MHz on the fastest GPU%s", cmin, cmax,
                 json_is_number(th) && json_number_value(th) > 0 ? " (throttled part of the window)" : "");
        return json_pack("{s:O,s:O,s:s,s:f,s:s}", "host", json_object_get(g, "host"), "index", json_object_get(g, "index"),
                         "by", "sm_clock", "sm_clock_mhz_mean", cmin, "why", why);
    }
    if (busy == (size_t)-1) return NULL;
    g = json_array_get(gpus, busy);
    snprintf(why, sizeof why, "clocks alike; busiest GPU: %.0f%% mean activity (the others wait for it in a parallel step)", umax);
    return json_pack("{s:O,s:O,s:s,s:f,s:s}", "host", json_object_get(g, "host"), "index", json_object_get(g, "index"),
                     "by", "busiest", "util_pct_mean", umax, "why", why);
}

json_t *telemetry_merge_summary(const telemetry_node *nodes, int n, double output_tokens) {
    json_t *o = json_object(), *gpus = json_array(), *hosts = json_array(), *per = json_array();
    double energy = 0;
    bool energy_known = true;
    for (int i = 0; i < n; i++) {
        const json_t *s = nodes[i].summary;
        if (!s) continue;
        if (!json_object_get(o, "window_s")) json_object_set(o, "window_s", json_object_get(s, "window_s"));
        size_t k;
        json_t *g;
        json_array_foreach(json_object_get(s, "gpus"), k, g) {
            json_array_append_new(gpus, labelled(g, &nodes[i]));
            json_t *e = json_object_get(g, "energy_j");
            if (json_is_number(e)) energy += json_number_value(e); else energy_known = false;
        }
        if (json_object_get(s, "server") && !json_object_get(o, "server"))
            json_object_set_new(o, "server", json_deep_copy(json_object_get(s, "server")));
        json_t *h = json_object_get(s, "host");
        if (h) {
            if (!json_object_get(o, "host")) json_object_set_new(o, "host", labelled(h, &nodes[i]));
            json_array_append_new(hosts, labelled(h, &nodes[i]));
        }
        /* the node's own view: its GPUs' means as its sampler summarised them */
        json_t *v = json_pack("{s:s,s:i,s:i}", "host", nodes[i].host ? nodes[i].host : "", "rank", nodes[i].rank,
                              "gpus", (int)json_array_size(json_object_get(s, "gpus")));
        static const char *const keys[] = { "util_gpu_pct_mean", "sm_util_pct_mean", "tensor_util_pct_mean",
                                            "dram_bw_util_pct_mean", "power_w_mean_total", "energy_j", NULL };
        for (const char *const *kk = keys; *kk; kk++)
            if (json_object_get(s, *kk)) json_object_set(v, *kk, json_object_get(s, *kk));
        json_array_append_new(per, v);
    }
    size_t ng = json_array_size(gpus);
    if (ng) {
        json_object_set(o, "gpus", gpus);
        static const char *const avg[] = { "util_gpu_pct", "sm_util_pct", "tensor_util_pct", "dram_bw_util_pct" };
        for (size_t k = 0; k < sizeof avg / sizeof avg[0]; k++) {
            double sum = 0;
            int cnt = 0;
            size_t i;
            json_t *g;
            json_array_foreach(gpus, i, g) {
                double m = stat_mean(g, avg[k]);
                if (isfinite(m)) { sum += m; cnt++; }
            }
            char key[64];
            snprintf(key, sizeof key, "%s_mean", avg[k]);
            json_object_set_new(o, key, cnt ? json_real(sum / cnt) : json_null());
        }
        double pw = 0;
        int npw = 0;
        size_t i;
        json_t *g;
        json_array_foreach(gpus, i, g) {
            double m = stat_mean(g, "power_w");
            if (isfinite(m)) { pw += m; npw++; }
        }
        json_object_set_new(o, "power_w_mean_total", npw ? json_real(pw) : json_null());
        json_object_set_new(o, "energy_j", energy_known ? json_real(energy) : json_null());
        json_object_set_new(o, "energy_j_per_output_token",
                            energy_known && output_tokens > 0 ? json_real(energy / output_tokens) : json_null());
        json_t *sl = slowest(gpus);
        if (sl) json_object_set_new(o, "slowest_gpu", sl);
    }
    return finish(o, gpus, hosts, per);
}
