/* run/bench_opts — the options of a load run: their defaults, their release and the
 * configuration section of the results they produce (parsing them is the CLI's, cli/bench_opts.h). */
#include "run/bench_opts.h"
#include "common/clock.h"
#include "common/redact.h"
#include "results/validity.h"
#include <stdlib.h>
#include <string.h>

static int32_t count_words(void *ctx, const char *text, size_t len) {
    (void)ctx;
    return dataset_count_words(text, len);
}

void bench_opts_init(bench_opts *b) {
    memset(b, 0, sizeof *b);
    b->client.counter = (token_counter){ count_words, NULL, "words" };
    b->client.api = OPENAI_COMPLETIONS;
    b->client.timeout_ns = 300 * NS_PER_S;
    b->client.include_usage = true;
    b->client.api_key = getenv("OPENAI_API_KEY");
    redact_add_secret("OPENAI_API_KEY", b->client.api_key);
    b->plan.grace_ns = 30 * NS_PER_S;
    b->plan.seed = 1;
    b->dataset_spec = "random:in=1024,out=128";
    b->length_tolerance = 0.05;
    b->arrival_spec = "poisson";
    b->max_error_rate = VALIDITY_DEFAULT_MAX_ERROR_RATE;
    summary_default_opts(&b->summary);
    telemetry_default_opts(&b->telemetry);
    history_opts_init(&b->hist);
    dist_default_opts(&b->dist_o);
}

void bench_opts_free(bench_opts *b) {
    for (int i = 0; i < b->n_classes; i++) {
        dataset_free(b->classes[i].ds);
        free(b->classes[i].spec_copy);
        b->classes[i].ds = NULL;
        b->classes[i].spec_copy = NULL;
    }
    tokenizer_free(b->tok);
    b->tok = NULL;
    json_decref(b->server_identity);
    b->server_identity = NULL;
    json_decref(b->deployment);
    b->deployment = NULL;
    free(b->command_line);
    for (size_t i = 0; i < b->n_headers; i++) free((char *)b->headers[i]);
    free(b->headers);
}

json_t *bench_opts_config_json(const bench_opts *b, const dataset *ds) {
    json_t *c = json_object();
    json_object_set_new(c, "url", redact_json(b->client.base_url));
    json_object_set_new(c, "api", json_string(b->client.api == OPENAI_CHAT ? "chat" : "completions"));
    json_object_set_new(c, "model", json_string(b->client.model ? b->client.model : ""));
    json_object_set_new(c, "load", json_string(b->plan.concurrency ? "closed" : "open"));
    if (b->plan.concurrency) json_object_set_new(c, "concurrency", json_integer(b->plan.concurrency));
    else {
        json_object_set_new(c, "rate_per_s", json_real(b->plan.arr.rate_per_s));
        json_object_set_new(c, "arrival", json_string(b->arrival_spec));
        if (b->plan.arr.ramp_ns > 0) {
            json_object_set_new(c, "ramp_from_per_s", json_real(b->plan.arr.ramp_from_per_s));
            json_object_set_new(c, "ramp_s", json_real(b->plan.arr.ramp_ns / 1e9));
        }
        json_object_set_new(c, "max_concurrency", b->plan.max_concurrency ? json_integer(b->plan.max_concurrency) : json_null());
    }
    json_object_set_new(c, "requests", json_integer((json_int_t)b->plan.requests));
    json_object_set_new(c, "duration_s", json_real(b->plan.duration_ns / 1e9));
    json_object_set_new(c, "warmup", json_integer((json_int_t)b->plan.warmup));
    json_object_set_new(c, "think_s", json_real(b->plan.think_ns / 1e9));
    json_object_set_new(c, "seed", json_integer((json_int_t)b->plan.seed));
    json_object_set_new(c, "timeout_s", json_real(b->client.timeout_ns / 1e9));
    json_object_set_new(c, "dataset", json_string(b->dataset_spec));
    json_object_set_new(c, "dataset_size", json_integer(ds ? (json_int_t)ds->n : 0));
    json_object_set_new(c, "length_unit", json_string(ds ? ds->length_unit : "words"));
    json_object_set_new(c, "tokenizer", b->tokenizer_path ? json_string(b->tokenizer_path) : json_null());
    if (b->n_classes) {
        json_t *cl = json_array();
        for (int i = 0; i < b->n_classes; i++) {
            json_t *o = json_object();
            json_object_set_new(o, "name", json_string(b->classes[i].name));
            json_object_set_new(o, "weight", json_real(b->classes[i].weight));
            json_object_set_new(o, "dataset", json_string(b->classes[i].dataset_spec));
            json_array_append_new(cl, o);
        }
        json_object_set_new(c, "classes", cl);
    }
    if (ds) {
        /* tokenization pre-validation: the prompt lengths as measured before the run */
        json_t *v = json_object();
        json_object_set_new(v, "in_tokens_min", json_integer(ds->len_min));
        json_object_set_new(v, "in_tokens_mean", json_real(ds->len_mean));
        json_object_set_new(v, "in_tokens_max", json_integer(ds->len_max));
        json_object_set_new(v, "rebuilt", json_integer((json_int_t)ds->rebuilt));
        json_object_set_new(v, "skipped", json_integer((json_int_t)ds->skipped));
        json_object_set_new(c, "dataset_lengths", v);
    }
    if (ds && ds->blocks)
        json_object_set_new(c, "trace", json_pack("{s:I,s:I,s:i,s:I,s:I,s:f,s:I,s:I}", "lines", (json_int_t)ds->trace_lines,
            "requests", (json_int_t)ds->n, "block_tokens", ds->block_tokens, "distinct_blocks", (json_int_t)ds->distinct_blocks,
            "working_set_tokens", (json_int_t)ds->working_set_tokens, "time_scale", b->time_scale > 0 ? b->time_scale : 1.0,
            "window_start_ns", (json_int_t)b->window_start_ns, "window_end_ns", (json_int_t)b->window_end_ns));
    if (ds && ds->blocks) {
        /* what an LRU prefix cache of each size allows: [[kv_tokens, hit_rate], ...] */
        json_t *lru = json_array();
        for (int i = 0; i < ds->n_lru; i++)
            json_array_append_new(lru, json_pack("[I,f]", (json_int_t)ds->lru_tokens[i], ds->lru_rate[i]));
        json_object_set_new(json_object_get(c, "trace"), "lru_hit_rate_by_kv_tokens", lru);
    }
    json_object_set_new(c, "ignore_eos", json_boolean(b->client.ignore_eos));
    json_object_set_new(c, "include_usage", json_boolean(b->client.include_usage));
    json_object_set_new(c, "token_counter", json_string(b->client.counter.name ? b->client.counter.name : "words"));
    return c;
}
