/* cmd_trace — `dsperf trace`: what a Mooncake-format trace holds before it is replayed: requests,
 * span, lengths, distinct blocks and the working set they make, and the prefix-cache hit rate the
 * trace allows with an unbounded cache. --render builds every request body exactly as bench would
 * send it (and checks the lengths with --tokenizer), timing it and keeping memory to the ids:
 * scripts/bench_trace.sh measures a 12,000-request trace with half a million distinct blocks. */
#include "cli/cli.h"
#include "cli/bench_opts.h"
#include "client/openai.h"
#include "dataset/dataset.h"
#include "dataset/trace.h"
#include "model/model.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/units.h"
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static void usage(FILE *f) {
    fprintf(f,
        "usage: dsperf trace [mooncake:]FILE [options]\n\n"
        "Summarises a trace in Moonshot's Mooncake format (one JSON object a line: timestamp ms,\n"
        "input_length, output_length, hash_ids: one id per block) before it is replayed with\n"
        "dsperf bench --dataset mooncake:FILE --arrival trace: span, lengths, distinct blocks, the\n"
        "prefix-cache hit rate it allows, and the KV capacity an LRU prefix cache needs for a share of\n"
        "that (requests replayed one at a time: in-flight requests need their blocks on top).\n\n"
        "  --trace-block-size N tokens per hash id (default 512; as bench and sim name it)\n"
        "  --trace-window A..B  only the requests from A to B after the first (e.g. 10m..20m)\n"
        "  --time-scale F       timestamps x F (0.5: twice as fast)\n"
        "  --tokenizer PATH     count in the served model's tokens (default: words)\n"
        "  --api completions|chat  what the server adds to the prompt: BOS, or the chat template\n"
        "  --render             build every request body as bench sends it, timed (lengths checked\n"
        "                       with --tokenizer on a sample)\n"
        "  --model NAME         with --kv-dtype and --tp: the KV memory per GPU the capacities below take\n"
        "  --kv-dtype D         bf16 (default), fp8, ...\n"
        "  --tp N               tensor-parallel size (MLA's latent KV is on every rank; default 1)\n"
        "  --json               print the summary as one JSON object\n\n"
        "example:\n"
        "  dsperf trace mooncake:conversation_trace.jsonl --tokenizer tokenizer.json --render\n");
}

/* Builds every request body; fills the byte counts and the seconds each pass took. */
static int render_all(const dataset *d, bool chat, double *text_s, double *body_s, double *text_bytes, double *body_bytes) {
    int64_t t0 = clock_now_ns();
    *text_bytes = *body_bytes = 0;
    for (size_t i = 0; i < d->n; i++) {
        char *buf;
        size_t len;
        if (!dataset_item_text(&d->items[i], &buf, &len)) return -1;
        *text_bytes += (double)len;
        free(buf);
    }
    int64_t t1 = clock_now_ns();
    for (size_t i = 0; i < d->n; i++) {
        char *body = openai_request_body(chat ? OPENAI_CHAT : OPENAI_COMPLETIONS, "model", &d->items[i], true, true);
        if (!body) return -1;
        *body_bytes += (double)strlen(body);
        free(body);
    }
    *text_s = (double)(t1 - t0) / 1e9;
    *body_s = (double)(clock_now_ns() - t1) / 1e9;
    return 0;
}

int cmd_trace(int argc, char **argv) {
    static const struct option opts[] = {
        {"trace-block-size", 1, 0, 'b'}, {"block-size", 1, 0, 'B'}, {"trace-window", 1, 0, 'w'}, {"time-scale", 1, 0, 's'}, {"tokenizer", 1, 0, 't'},
        {"api", 1, 0, 'a'}, {"render", 0, 0, 'r'}, {"json", 0, 0, 'j'}, {"model", 1, 0, 'm'}, {"kv-dtype", 1, 0, 'k'},
        {"tp", 1, 0, 'p'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0},
    };
    const model_arch *m = NULL;
    model_dtype kvd = DT_BF16;
    int tp = 1;
    dataset_opts o = { .tolerance = 0.05 };
    const char *tok_path = NULL;
    bool chat = false, render = false, as_json = false;
    long long v;
    optind = 1;
    opterr = 0;
    cli_option_table("trace", opts);   /* DSPERF_OPTION_TABLE: the table, for completion */
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        const char *a = optarg;
        switch (c) {
        case 'B':   /* the old spelling */
            log_warn("--block-size here is deprecated: it is --trace-block-size (tokens per hash id); --block-size "
                     "means the KV block in sim, plan and serve");
            /* fall through */
        case 'b': if (units_parse_int(a, 1, 1 << 20, &v) < 0) { log_error("bad --trace-block-size '%s': tokens per hash id, e.g. 512", a); return EXIT_USAGE; }
                  o.block_tokens = (int32_t)v; break;
        case 'w': if (bench_opts_parse_window(a, &o.window_start_ns, &o.window_end_ns) < 0) { log_error("bad --trace-window '%s': START..END, e.g. 10m..20m", a); return EXIT_USAGE; } break;
        case 's': if (units_parse_double(a, &o.time_scale) < 0 || !(o.time_scale > 0)) { log_error("bad --time-scale '%s': a factor > 0", a); return EXIT_USAGE; } break;
        case 't': tok_path = a; break;
        case 'a': if (strcmp(a, "chat") && strcmp(a, "completions")) { log_error("bad --api '%s': completions or chat", a); return EXIT_USAGE; }
                  chat = !strcmp(a, "chat"); break;
        case 'r': render = true; break;
        case 'j': as_json = true; break;
        case 'm': if (!(m = model_find(a))) { log_error("unknown --model '%s' (dsperf plan --list names the catalog)", a); return EXIT_USAGE; } break;
        case 'k': if (model_dtype_parse(a, DT_BF16, &kvd) < 0) { log_error("bad --kv-dtype '%s': bf16, fp8, ...", a); return EXIT_USAGE; } break;
        case 'p': if (units_parse_int(a, 1, 1024, &v) < 0) { log_error("bad --tp '%s': 1..1024", a); return EXIT_USAGE; } tp = (int)v; break;
        case 'h': usage(stdout); return EXIT_OK;
        default: return cli_bad_option("trace", opts, argc, argv, optind, optopt);
        }
    }
    if (optind != argc - 1) { log_error("give one trace file: dsperf trace mooncake:FILE (see --help)"); return EXIT_USAGE; }
    char spec[4096];
    snprintf(spec, sizeof spec, "%s%s", strncmp(argv[optind], "mooncake:", 9) ? "mooncake:" : "", argv[optind]);
    char err[1024];
    tokenizer *tok = NULL;
    if (tok_path && tokenizer_load(tok_path, &tok, err, sizeof err) < 0) { log_error("--tokenizer %s: %s", tok_path, err); return EXIT_USAGE; }
    o.tok = tok;
    if (m && tok_path == NULL) log_info("--model without --tokenizer: capacities are in words, not the model's tokens");
    double kv_bpt = m ? model_kv_bytes_per_token(m, kvd, tp) : 0;
    int64_t t0 = clock_now_ns();
    dataset *d;
    if (dataset_open(spec, 0, 1, &o, &d, err, sizeof err) < 0) { log_error("%s", err); tokenizer_free(tok); return EXIT_USAGE; }
    dataset_count_for_api(d, tok, chat);
    double load_s = (double)(clock_now_ns() - t0) / 1e9;
    int rc = EXIT_OK;
    if (d->length_error[0]) { log_error("%s", d->length_error); rc = EXIT_USAGE; }
    long long in = 0, out = 0, cacheable = 0;
    for (size_t i = 0; i < d->n; i++) { in += d->items[i].in_tokens; out += d->items[i].max_tokens; cacheable += d->items[i].cacheable_tokens; }
    double span_s = (double)(d->items[d->n - 1].timestamp_ns - d->items[0].timestamp_ns) / 1e9;
    double text_s = 0, body_s = 0, text_b = 0, body_b = 0;
    if (rc == EXIT_OK && render && render_all(d, chat, &text_s, &body_s, &text_b, &body_b) < 0) { log_error("out of memory"); rc = EXIT_RUN_FAILED; }
    /* the KV capacity an LRU cache needs for shares of the bound */
    trace_lru lru;
    json_t *need = json_array();
    double bound = in ? (double)cacheable / (double)in : 0;
    if (rc == EXIT_OK && trace_lru_compute(d, &lru) == 0) {
        static const double share[] = { 0.25, 0.5, 0.75, 0.9, 1.0 };
        for (size_t k = 0; k < sizeof share / sizeof share[0]; k++) {
            int64_t tok = trace_lru_tokens_for(&lru, share[k] * bound);
            json_t *e = json_pack("{s:f,s:f,s:I}", "share_of_bound", share[k], "hit_rate", share[k] * bound, "kv_tokens", (json_int_t)tok);
            if (kv_bpt > 0) json_object_set_new(e, "kv_gb_per_gpu", json_real((double)tok * kv_bpt / 1e9));
            json_array_append_new(need, e);
        }
        trace_lru_free(&lru);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    json_t *j = json_pack("{s:s,s:I,s:I,s:f,s:I,s:I,s:i,s:I,s:I,s:f,s:f,s:s}", "trace", argv[optind], "lines", (json_int_t)d->trace_lines,
        "requests", (json_int_t)d->n, "span_s", span_s, "input_tokens", (json_int_t)in, "output_tokens", (json_int_t)out,
        "block_tokens", d->block_tokens, "distinct_blocks", (json_int_t)d->distinct_blocks, "working_set_tokens",
        (json_int_t)d->working_set_tokens, "hit_rate_bound", in ? (double)cacheable / (double)in : 0.0, "load_s", load_s,
        "length_unit", d->length_unit);
    if (render) json_object_update_new(j, json_pack("{s:f,s:f,s:f,s:f}", "render_text_s", text_s, "render_body_s", body_s,
                                                    "text_bytes", text_b, "body_bytes", body_b));
    json_object_set_new(j, "max_rss_mb", json_real(ru.ru_maxrss / 1024.0));
    json_object_set_new(j, "lru_kv_for_hit_rate", need);
    if (as_json) {
        char *s = json_dumps(j, JSON_COMPACT);
        printf("%s\n", s);
        free(s);
    } else if (rc == EXIT_OK) {
        printf("%s: %zu requests (%zu lines), %.2f s from first to last\n", argv[optind], d->n, d->trace_lines, span_s);
        printf("  input %.0f %s per request on average (%lld in all), output %.0f\n", (double)in / (double)d->n, d->length_unit, in,
               (double)out / (double)d->n);
        printf("  %zu distinct blocks of %d %s: a working set of %lld %s\n", d->distinct_blocks, d->block_tokens, d->length_unit,
               d->working_set_tokens, d->length_unit);
        printf("  prefix-cache hit rate the trace allows (unbounded cache): %.1f%% of prompt %s\n", in ? 100.0 * cacheable / in : 0, d->length_unit);
        printf("  KV an LRU prefix cache needs (requests one at a time):\n");
        size_t k;
        json_t *e;
        json_array_foreach(need, k, e) {
            double gb = json_number_value(json_object_get(e, "kv_gb_per_gpu"));
            char mem[256] = "";
            if (json_object_get(e, "kv_gb_per_gpu")) snprintf(mem, sizeof mem, " = %.3g GB per GPU (%s, %s, tp %d)", gb, m->name, model_dtype_name(kvd), tp);
            printf("    %5.1f%% hit rate (%3.0f%% of the bound): %lld %s%s\n", 100 * json_number_value(json_object_get(e, "hit_rate")),
                   100 * json_number_value(json_object_get(e, "share_of_bound")),
                   (long long)json_integer_value(json_object_get(e, "kv_tokens")), d->length_unit, mem);
        }
        printf("  read in %.2f s\n", load_s);
        if (render)
            printf("  rendered %.0f MB of prompt text in %.2f s, %.0f MB of request bodies in %.2f s; peak memory %.0f MB\n",
                   text_b / 1e6, text_s, body_b / 1e6, body_s, ru.ru_maxrss / 1024.0);
    }
    json_decref(j);
    dataset_free(d);
    tokenizer_free(tok);
    return rc;
}
