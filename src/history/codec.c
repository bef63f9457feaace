/* codec — the history's byte-level helpers: zlib for the stored documents, FNV-1a for the
 * configuration and document hashes, canonical JSON text, the headline column list, and the
 * compare view (what of a document compare and trend read). */
#include "history/hist_internal.h"
#include "metrics/metric_table.h"
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ---- headline columns of the run table (in step with db.c's schema: history_test checks it) ---- */

const char *const hist_cols[] = {
    "completed", "failed", "error_rate", "duration", METRIC(request_throughput), METRIC(output_throughput), METRIC(total_token_throughput),
    METRIC(request_goodput), METRIC(max_output_tokens_per_s),
    METRIC(mean_ttft_ms), METRIC(median_ttft_ms), METRIC(p90_ttft_ms), METRIC(p99_ttft_ms), METRIC(mean_tpot_ms), METRIC(median_tpot_ms), METRIC(p90_tpot_ms), METRIC(p99_tpot_ms),
    METRIC(mean_itl_ms), METRIC(median_itl_ms), METRIC(p90_itl_ms), METRIC(p99_itl_ms), METRIC(mean_e2el_ms), METRIC(median_e2el_ms), METRIC(p90_e2el_ms), METRIC(p99_e2el_ms),
    METRIC(p99_ttft_from_schedule_ms), METRIC(p99_e2el_from_schedule_ms),
    METRIC(knee_load), METRIC(knee_output_throughput), METRIC(peak_output_throughput), METRIC(max_goodput), METRIC(max_goodput_load), METRIC(slo_boundary_load),
};
const size_t hist_n_cols = sizeof hist_cols / sizeof hist_cols[0];

int hist_col_index(const char *name) {
    for (size_t i = 0; i < hist_n_cols; i++)
        if (!strcmp(hist_cols[i], name)) return (int)i;
    return -1;
}

/* ---- zlib ---- */

int hist_deflate(const void *in, size_t len, unsigned char **out, size_t *out_len) {
    uLongf cap = compressBound((uLong)len);
    unsigned char *buf = malloc(cap ? cap : 1);
    if (!buf) return -1;
    /* level 6: a 100 kB results document in about a millisecond, to a fifth of its size */
    if (compress2(buf, &cap, in, (uLong)len, 6) != Z_OK) { free(buf); return -1; }
    *out = buf;
    *out_len = cap;
    return 0;
}

char *hist_inflate(const void *in, size_t in_len, size_t len) {
    char *buf = malloc(len + 1);
    if (!buf) return NULL;
    uLongf got = (uLongf)len;
    if (uncompress((Bytef *)buf, &got, in, (uLong)in_len) != Z_OK || got != len) { free(buf); return NULL; }
    buf[len] = 0;
    return buf;
}

/* ---- hashes ---- */

void hist_hash_hex(const void *data, size_t len, char out[17]) {
    uint64_t h = 14695981039346656037ULL;     /* FNV-1a 64: identity of non-adversarial text */
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) { h ^= p[i]; h *= 1099511628211ULL; }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

char *hist_canonical(const json_t *v) {
    return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
}

/* ---- the compare view ---- */

static void slim_results(json_t *r) {
    if (!json_is_object(r)) return;
    json_object_del(r, "telemetry");
    json_object_del(r, "engine");
    json_object_del(r, "environment");
    json_t *tl = json_object_get(r, "timeline");
    if (json_is_object(tl)) {
        /* compare's throughput intervals read these two series; the rest is for the report */
        json_t *keep = json_object();
        const char *keys[] = {"finished", "output_tokens"};
        for (size_t i = 0; i < 2; i++)
            if (json_object_get(tl, keys[i])) json_object_set(keep, keys[i], json_object_get(tl, keys[i]));
        json_object_set_new(r, "timeline", keep);
    }
}

json_t *hist_compare_view(const json_t *doc) {
    json_t *v = json_deep_copy(doc);
    if (!v) return NULL;
    slim_results(v);
    size_t i;
    json_t *lv;
    json_array_foreach(json_object_get(v, "levels"), i, lv) slim_results(json_object_get(lv, "results"));
    json_object_del(v, "configs");   /* tune: every configuration in detail, kept in the document */
    return v;
}
