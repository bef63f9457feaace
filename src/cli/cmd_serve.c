/* cmd_serve — `dsperf serve`: an OpenAI-compatible streaming server with known timing and
 * seeded faults. The server's own options are parsed here; every other `--key value` is handed
 * to the selected engine's option setter, so adding an engine is one entry in `engines[]`. */
#include "cli/cli.h"
#include "server/server.h"
#include "engine/fixed.h"
#include "engine/sim.h"
#include "common/units.h"
#include "common/log.h"
#include "common/bindaddr.h"
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { const char *key, *value; } serve_kv;

/* Builds an engine from the options the server did not recognise. Returns NULL with err set;
 * every failure here is a usage error (unknown key or bad value). */
typedef engine *(*serve_engine_factory)(const serve_kv *opts, int n_opts, uint64_t seed, const char *served_model,
                                        server_params *sp, char *err, size_t errlen);

static engine *fixed_from_options(const serve_kv *opts, int n, uint64_t seed, const char *served_model, server_params *sp,
                                  char *err, size_t errlen) {
    (void)served_model;
    (void)sp;
    fixed_params p;
    fixed_default_params(&p);
    p.seed = seed;
    for (int i = 0; i < n; i++) {
        int rc = fixed_params_set(&p, opts[i].key, opts[i].value, err, errlen);
        if (rc == 1) snprintf(err, errlen, "unknown option --%s for --engine fixed (see dsperf serve --help)", opts[i].key);
        if (rc) return NULL;
    }
    return engine_fixed_create(&p, err, errlen);
}

/* The simulated deployment as clients may read it: GET /v1/models meta.sim (the simulator's settings,
 * which deploy_from_server reads: a sweep's roofline then knows the GPU), and for vLLM's
 * cache_config_info on /metrics what set the KV cache's size. meta is set once (the first loop's
 * engine); the caller frees it. */
static void sim_facts(const sim_params *p, engine *e, server_params *sp) {
    sim_info info;
    cost_model c;
    char err[256];
    int mml = p->max_model_len;
    if (mml <= 0 && sim_params_cost(p, &c, err, sizeof err) == 0) { mml = c.arch.max_position; cost_free(&c); }
    long long blocks = sim_get_info(e, &info) == 0 ? info.total_blocks : 0;
    json_t *sim = json_pack("{s:s,s:s,s:i,s:i,s:s,s:s,s:i,s:i,s:i,s:f,s:b,s:i,s:I}", "model",
        p->model_config[0] ? p->model_config : p->model, "gpu", p->gpu, "tp", p->tp, "ep", p->ep, "weight_dtype",
        p->weight_dtype, "kv_dtype", p->kv_dtype, "max_num_seqs", p->max_num_seqs, "max_num_batched_tokens",
        p->max_num_batched_tokens, "block_size", p->block_size, "gpu_memory_utilization", p->gpu_memory_utilization,
        "chunked_prefill", p->chunked_prefill, "max_model_len", mml, "kv_tokens", (json_int_t)(blocks * p->block_size));
    json_object_set_new(sim, "num_gpu_blocks", json_integer(p->num_gpu_blocks));   /* an override; 0 none */
    json_t *meta = json_pack("{s:s,s:o}", "engine", "dsperf sim", "sim", sim);
    if (!sp->models_meta_json) sp->models_meta_json = meta ? json_dumps(meta, JSON_COMPACT) : NULL;
    json_decref(meta);
    sp->gpu_memory_utilization = p->gpu_memory_utilization;
    sp->num_gpu_blocks_override = p->num_gpu_blocks;
}

/* The simulated DeepSeek engine: the served --model picks the catalog model (HF ids work) unless
 * the simulator's own --sim-model is given; every other unknown option is a simulator option. */
static engine *sim_from_options(const serve_kv *opts, int n, uint64_t seed, const char *served_model, server_params *sp,
                                char *err, size_t errlen) {
    (void)seed;
    sim_params p;
    sim_default_params(&p);
    bool model_given = false;
    for (int i = 0; i < n; i++) {
        const char *key = opts[i].key;
        if (!strcmp(key, "sim-model")) { key = "model"; model_given = true; }
        int rc = sim_params_set(&p, key, opts[i].value, err, errlen);
        if (rc == 1) snprintf(err, errlen, "unknown option --%s for --engine sim (see dsperf serve --help)", opts[i].key);
        if (rc) return NULL;
    }
    if (!model_given && served_model) {
        char e2[256];
        if (sim_params_set(&p, "model", served_model, e2, sizeof e2) != 0) {
            snprintf(err, errlen, "--engine sim does not know the model '%s' (dsperf plan --list shows the catalog; "
                     "or give --sim-model NAME and keep --model as the served name)", served_model);
            return NULL;
        }
    }
    /* with prefix caching the engine needs each prompt's identity: its KV blocks' hashes */
    if (p.prefix_caching) sp->prefix_block_tokens = p.block_size;
    sp->kv_block_tokens = p.block_size;
    engine *e = engine_sim_create(&p, err, errlen);
    if (e) sim_facts(&p, e, sp);
    return e;
}

static const char *fixed_help(void) { return fixed_params_help; }
/* The simulator's own option list, less its --model entry (and that entry's continuation lines):
 * in serve, --model is the served name and --sim-model names the catalog model. */
static const char *sim_help(void) {
    static char buf[8192];
    size_t n = (size_t)snprintf(buf, sizeof buf, "  --sim-model NAME           catalog model to simulate (default: the served --model;\n                             dsperf plan --list names them)\n");
    bool skipping = false;
    for (const char *l = sim_params_help(); *l && n < sizeof buf - 1;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) + 1 : strlen(l);
        bool option_line = !strncmp(l, "  --", 4);
        if (option_line) skipping = !strncmp(l, "  --model ", 10);
        if (!skipping) n += (size_t)snprintf(buf + n, sizeof buf - n, "%.*s", (int)len, l);
        l += len;
    }
    return buf;
}

static const struct {
    const char *name;
    serve_engine_factory create;
    const char *(*help)(void);
} engines[] = {
    {"fixed", fixed_from_options, fixed_help},
    {"sim", sim_from_options, sim_help},
};
#define N_ENGINES (int)(sizeof engines / sizeof engines[0])

enum {
    O_HOST = 1000, O_PORT, O_MODEL, O_ENGINE, O_SPEEDUP, O_DURATION, O_SEED, O_FAIL, O_429, O_DROP,
    O_STALL_RATE, O_STALL, O_ERR_RATE, O_ERR_STYLE, O_DEFAULT_MAX, O_THREADS, O_EXIT_AFTER, O_HELP, O_MAX_BODY,
    O_LP_SEED, O_LP_NOISE, O_LP_JITTER, O_LP_STYLE, O_LOG_PROMPTS, O_REASONING, O_PER_REQ_METRICS,
};

static const struct option long_opts[] = {
    {"host", required_argument, 0, O_HOST},
    {"port", required_argument, 0, O_PORT},
    {"model", required_argument, 0, O_MODEL},
    {"engine", required_argument, 0, O_ENGINE},
    {"speedup", required_argument, 0, O_SPEEDUP},
    {"duration", required_argument, 0, O_DURATION},
    {"exit-after", required_argument, 0, O_EXIT_AFTER},
    {"log-prompts", required_argument, 0, O_LOG_PROMPTS},
    {"seed", required_argument, 0, O_SEED},
    {"fail-rate", required_argument, 0, O_FAIL},
    {"status-429-rate", required_argument, 0, O_429},
    {"drop-rate", required_argument, 0, O_DROP},
    {"stall-rate", required_argument, 0, O_STALL_RATE},
    {"stall", required_argument, 0, O_STALL},
    {"error-event-rate", required_argument, 0, O_ERR_RATE},
    {"error-style", required_argument, 0, O_ERR_STYLE},
    {"default-max-tokens", required_argument, 0, O_DEFAULT_MAX},
    {"threads", required_argument, 0, O_THREADS},
    {"max-body", required_argument, 0, O_MAX_BODY},
    {"help", no_argument, 0, O_HELP},
    {"logprob-seed", required_argument, 0, O_LP_SEED},
    {"logprob-noise", required_argument, 0, O_LP_NOISE},
    {"logprob-jitter", required_argument, 0, O_LP_JITTER},
    {"logprobs-style", required_argument, 0, O_LP_STYLE},
    {"reasoning-tokens", required_argument, 0, O_REASONING},
    {"per-request-metrics", no_argument, 0, O_PER_REQ_METRICS},
    {0, 0, 0, 0},
};

static void usage(FILE *f) {
    fprintf(f,
        "usage: dsperf serve [options] [engine options]\n\n"
        "An OpenAI-compatible server (POST /v1/completions, /v1/chat/completions, streaming or not;\n"
        "GET /v1/models, /health, /metrics with vLLM names) whose tokens come when an engine says.\n"
        "Prints one line 'dsperf serve: listening on http://HOST:PORT' on stdout when ready.\n\n"
        "server options:\n"
        "  --host ADDR              listen address (default 127.0.0.1; ::1 for IPv6 loopback). The server\n"
        "                           has no authentication: any other address prints a warning\n"
        "  --port N                 port; 0 picks a free one (default 0)\n"
        "  --model NAME             served model name (default deepseek-ai/DeepSeek-V2-Lite)\n"
        "  --engine NAME            timing engine (default fixed)\n"
        "  --speedup K              engine time runs K times faster than wall time (default 1)\n"
        "  --duration T             exit after T (default: run until SIGINT/SIGTERM)\n"
        "  --exit-after N           exit once N responses have completed: a server that dies mid-run,\n"
        "                           at a request count rather than a time (default 0 = never)\n"
        "  --default-max-tokens N   tokens when a request sets no max_tokens (default 256)\n"
        "  --log-prompts FILE       write every accepted request as one JSON line (arrival order, monotonic\n"
        "                           arrival time, the prompt tokens counted, the body as received)\n"
        "  --threads N              event loops, each on its own thread with its own socket on the port\n"
        "                           (SO_REUSEPORT) and its own engine; /metrics shows their sum. For\n"
        "                           thousands of streams; --engine fixed without --capacity (a shared\n"
        "                           queue or one simulated batch cannot be split) (default 1)\n"
        "  --max-body SIZE          largest request body accepted; a larger one is answered HTTP 413\n"
        "                           (default 4MiB)\n"
        "  --reasoning-tokens N|A..B  a reasoning model: the first R words of every chat answer stream as\n"
        "                           delta.reasoning_content, the rest as delta.content (R = N, or uniform in\n"
        "                           A..B from --seed; at most max_tokens); usage gives\n"
        "                           completion_tokens_details.reasoning_tokens (default: no reasoning)\n"
        "  --per-request-metrics    as vLLM's --enable-per-request-metrics: the final usage chunk carries\n"
        "                           metrics {queue_time_ms, time_to_first_token_ms (from scheduling),\n"
        "                           generation_time_ms, and speculative_decoding {num_spec_steps, ...} when\n"
        "                           a decode step gave more than one token} in the engine's own times\n"
        "fault injection (decided per request in arrival order from one rng seeded by --seed;\n"
        "with --threads, one rng per loop seeded by --seed + loop):\n"
        "  --seed N                 (default 1)\n"
        "  --fail-rate F            answer HTTP 500 with a JSON error\n"
        "  --status-429-rate F      answer HTTP 429\n"
        "  --drop-rate F            close the connection mid-stream, without [DONE]\n"
        "  --stall-rate F           one long gap mid-stream, of --stall T (default 2s)\n"
        "  --error-event-rate F     an error event mid-stream, then the end of the response\n"
        "  --error-style S          llamacpp: 'error: {...}' line; openai: 'data: {\"error\":...}' then [DONE]\n"
        "                           (what vLLM sends) (default llamacpp)\n"
        "Every injected fault is counted in /metrics as dsperf_injected_faults_total{kind=...}.\n\n"
        "%s"
        "  --logprobs-style S       openai: completions logprobs as tokens/token_logprobs/top_logprobs, echo and\n"
        "                           vLLM's prompt_logprobs honoured; llamacpp: chat-style logprobs.content on\n"
        "                           /v1/completions too, echo refused (HTTP 500), prompt_logprobs ignored, as\n"
        "                           llama.cpp's server does (default openai)\n\n", fixed_lm_help);
    for (int i = 0; i < N_ENGINES; i++) fprintf(f, "engine options (--engine %s):\n%s\n", engines[i].name, engines[i].help());
    fprintf(f,
        "examples:\n"
        "  dsperf serve --port 8000 --ttft 50ms --itl 10ms\n"
        "  dsperf serve --capacity 8 --prefill-per-token 20us --tokens-per-chunk 2\n"
        "  dsperf serve --itl 0 --drop-rate 0.01 --stall-rate 0.01 --stall 2s --seed 7\n"
        "  curl -N localhost:8000/v1/chat/completions -d '{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true}'\n");
}

static bool is_server_opt(const char *name, size_t len, int *has_arg) {
    for (const struct option *o = long_opts; o->name; o++)
        if (strlen(o->name) == len && !strncmp(o->name, name, len)) { *has_arg = o->has_arg; return true; }
    return false;
}

static int parse_rate(const char *opt, const char *v, double *out) {
    if (units_parse_double(v, out) < 0 || *out < 0 || *out > 1) {
        log_error("--%s wants a fraction between 0 and 1, got '%s'", opt, v);
        return -1;
    }
    return 0;
}

int cmd_serve(int argc, char **argv) {
    server_params sp;
    server_default_params(&sp);
    const char *engine_name = "fixed";
    /* split argv: server options go to getopt_long, the rest become engine key/value pairs */
    char **sargv = calloc((size_t)argc + 1, sizeof *sargv);
    serve_kv *kv = calloc((size_t)argc + 1, sizeof *kv);
    int sargc = 0, n_kv = 0, rc = EXIT_USAGE;
    engine **engs = NULL;
    server *srv = NULL;
    if (!sargv || !kv) { log_error("out of memory"); goto out; }
    sargv[sargc++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h")) { sargv[sargc++] = "--help"; continue; }
        if (strncmp(a, "--", 2) || !a[2]) {
            log_error("unexpected argument '%s'; options look like --name value (see dsperf serve --help)", a);
            goto out;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        int has_arg;
        if (is_server_opt(name, len, &has_arg)) {
            sargv[sargc++] = argv[i];
            if (has_arg == required_argument && !eq && i + 1 < argc) sargv[sargc++] = argv[++i];
            continue;
        }
        char *key = strndup(name, len);
        const char *val = eq ? eq + 1 : (i + 1 < argc && strncmp(argv[i + 1], "--", 2) ? argv[++i] : NULL);
        kv[n_kv++] = (serve_kv){ key, val };
    }
    optind = 1;
    opterr = 0;
    int c;
    long long n;
    while ((c = getopt_long(sargc, sargv, "", long_opts, NULL)) != -1) {
        const char *v = optarg;
        switch (c) {
        case O_HELP: usage(stdout); rc = EXIT_OK; goto out;
        case O_HOST: sp.host = v; break;
        case O_PORT:
            if (units_parse_int(v, 0, 65535, &n) < 0) { log_error("--port wants 0..65535, got '%s'", v); goto out; }
            sp.port = (int)n;
            break;
        case O_MODEL:
            if (!*v) { log_error("--model wants a name"); goto out; }
            sp.model = v;
            break;
        case O_ENGINE: engine_name = v; break;
        case O_SPEEDUP:
            if (units_parse_double(v, &sp.speedup) < 0 || sp.speedup <= 0) {
                log_error("--speedup wants a number > 0, got '%s'", v);
                goto out;
            }
            break;
        case O_DURATION:
            if (units_parse_duration_ns(v, &sp.duration_ns) < 0) { log_error("--duration wants a duration like 30s, got '%s'", v); goto out; }
            break;
        case O_EXIT_AFTER: {
            long long n;
            if (units_parse_int(v, 1, INT64_MAX, &n) < 0) { log_error("--exit-after wants a response count >= 1, got '%s'", v); goto out; }
            sp.exit_after = (uint64_t)n;
            break;
        }
        case O_LOG_PROMPTS: sp.log_prompts = v; break;
        case O_STALL:
            if (units_parse_duration_ns(v, &sp.stall_ns) < 0) { log_error("--stall wants a duration like 2s, got '%s'", v); goto out; }
            break;
        case O_SEED:
            if (units_parse_int(v, 0, INT64_MAX, &n) < 0) { log_error("--seed wants a non-negative integer, got '%s'", v); goto out; }
            sp.seed = (uint64_t)n;
            break;
        case O_DEFAULT_MAX:
            if (units_parse_int(v, 1, 10000000, &n) < 0) { log_error("--default-max-tokens wants 1..10000000, got '%s'", v); goto out; }
            sp.default_max_tokens = (int32_t)n;
            break;
        case O_MAX_BODY: {
            int64_t b;
            if (units_parse_bytes(v, &b) < 0 || b < 1024 || b > (1LL << 30)) {
                log_error("--max-body wants a size from 1KiB to 1GiB (e.g. 4MiB), got '%s'", v);
                goto out;
            }
            sp.max_body_bytes = b;
            break;
        }
        case O_THREADS:
            if (units_parse_int(v, 1, 64, &n) < 0) { log_error("--threads wants 1..64, got '%s'", v); goto out; }
            sp.threads = (int)n;
            break;
        case O_FAIL: if (parse_rate("fail-rate", v, &sp.fail_rate) < 0) goto out; break;
        case O_429: if (parse_rate("status-429-rate", v, &sp.status_429_rate) < 0) goto out; break;
        case O_DROP: if (parse_rate("drop-rate", v, &sp.drop_rate) < 0) goto out; break;
        case O_STALL_RATE: if (parse_rate("stall-rate", v, &sp.stall_rate) < 0) goto out; break;
        case O_ERR_RATE: if (parse_rate("error-event-rate", v, &sp.error_event_rate) < 0) goto out; break;
        case O_LP_SEED: case O_LP_NOISE: case O_LP_JITTER: {
            char e[256];
            const char *key = c == O_LP_SEED ? "logprob-seed" : c == O_LP_NOISE ? "logprob-noise" : "logprob-jitter";
            if (fixed_lm_set(&sp.lm, key, v, e, sizeof e) != 0) { log_error("%s", e); goto out; }
            break;
        }
        case O_PER_REQ_METRICS: sp.per_request_metrics = true; break;
        case O_REASONING: {
            long long lo, hi;
            const char *dots = strstr(v, "..");
            char a[32];
            bool ok = false;
            if (dots && (size_t)(dots - v) < sizeof a) {
                memcpy(a, v, (size_t)(dots - v));
                a[dots - v] = 0;
                ok = units_parse_int(a, 1, 10000000, &lo) == 0 && units_parse_int(dots + 2, 1, 10000000, &hi) == 0 && lo <= hi;
            } else if (!dots) {
                ok = units_parse_int(v, 1, 10000000, &lo) == 0;
                hi = lo;
            }
            if (!ok) { log_error("--reasoning-tokens wants N or A..B (1 <= A <= B <= 10000000 words), got '%s'", v); goto out; }
            sp.reasoning_min_tokens = (int32_t)lo;
            sp.reasoning_max_tokens = (int32_t)hi;
            break;
        }
        case O_LP_STYLE:
            if (!strcmp(v, "openai") || !strcmp(v, "vllm")) sp.logprobs_style = SERVER_LOGPROBS_OPENAI;
            else if (!strcmp(v, "llamacpp")) sp.logprobs_style = SERVER_LOGPROBS_LLAMACPP;
            else { log_error("--logprobs-style wants openai or llamacpp, got '%s'", v); goto out; }
            break;
        case O_ERR_STYLE:
            if (!strcmp(v, "llamacpp")) sp.error_style = SERVER_ERROR_STYLE_LLAMACPP;
            else if (!strcmp(v, "openai") || !strcmp(v, "vllm")) sp.error_style = SERVER_ERROR_STYLE_OPENAI;
            else { log_error("--error-style wants llamacpp or openai, got '%s'", v); goto out; }
            break;
        default:
            log_error("option %s needs a value (see dsperf serve --help)", sargv[optind - 1]);
            goto out;
        }
    }
    int ei = -1;
    for (int i = 0; i < N_ENGINES; i++) if (!strcmp(engines[i].name, engine_name)) ei = i;
    if (ei < 0) { log_error("unknown --engine '%s' (known: fixed, sim)", engine_name); goto out; }
    if (sp.threads > 1) {
        /* each loop has its own engine: only an engine with no shared state splits unchanged */
        bool capacity = false;
        for (int i = 0; i < n_kv; i++)
            if (!strcmp(kv[i].key, "capacity") && kv[i].value && strcmp(kv[i].value, "0")) capacity = true;
        if (strcmp(engine_name, "fixed") || capacity) {
            log_error("--threads %d needs --engine fixed without --capacity: every loop has its own engine, so a shared "
                      "queue or one simulated batch would be split (use --threads 1)", sp.threads);
            goto out;
        }
    }
    char err[256];
    engs = calloc((size_t)sp.threads, sizeof *engs);
    if (!engs) { log_error("out of memory"); goto out; }
    for (int i = 0; i < sp.threads; i++) {
        engs[i] = engines[ei].create(kv, n_kv, sp.seed + (uint64_t)i, sp.model, &sp, err, sizeof err);
        if (!engs[i]) { log_error("%s", err); goto out; }
    }
    if (sp.models_meta_json && sp.speedup != 1) {
        /* engine time runs `speedup` times faster than the client's clock: say so, so that what the
         * client measures is compared with the engine's predictions on one clock */
        json_t *m = json_loads(sp.models_meta_json, 0, NULL);
        if (m) {
            json_object_set_new(m, "speedup", json_real(sp.speedup));
            free((char *)sp.models_meta_json);
            sp.models_meta_json = json_dumps(m, JSON_COMPACT);
            json_decref(m);
        }
    }
    sp.handle_signals = true;
    bindaddr_warn_exposed("dsperf serve", sp.host);
    sp.lm.nonce_salt = sp.seed;   /* servers started with different --seed draw different --logprob-jitter */
    if (server_start(&srv, &sp, engs, err, sizeof err) < 0) { log_error("%s", err); rc = EXIT_RUN_FAILED; goto out; }
    bool v6 = strchr(sp.host, ':') != NULL;
    printf("dsperf serve: listening on http://%s%s%s:%d\n", v6 ? "[" : "", sp.host, v6 ? "]" : "", server_port(srv));
    fflush(stdout);
    server_run(srv);
    rc = EXIT_OK;
out:
    server_free(srv);
    for (int i = 0; engs && i < sp.threads; i++) engine_destroy(engs[i]);
    free(engs);
    for (int i = 0; i < n_kv; i++) free((char *)kv[i].key);
    free(kv);
    free(sargv);
    free((char *)sp.models_meta_json);
    return rc;
}
