/* cmd_serve — `dsperf serve`: an OpenAI-compatible streaming server with known timing and
 * seeded faults. The server's own options are parsed here; every other `--key value` is handed
 * to the selected engine's option setter by the run layer (run/serve.h), which builds the engines
 * and runs the server. */
#include "cli/cli.h"
#include "run/serve.h"
#include "common/units.h"
#include "common/log.h"
#include "common/bindaddr.h"
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    for (size_t i = 0; i < run_serve_engine_count(); i++)
        fprintf(f, "engine options (--engine %s):\n%s\n", run_serve_engine_name(i), run_serve_engine_help(i));
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

static void print_listening(void *ctx, const char *host, int port) {
    (void)ctx;
    bool v6 = strchr(host, ':') != NULL;
    printf("dsperf serve: listening on http://%s%s%s:%d\n", v6 ? "[" : "", host, v6 ? "]" : "", port);
    fflush(stdout);
}

int cmd_serve(int argc, char **argv) {
    run_serve_opts so;
    run_serve_defaults(&so);
    server_params sp = so.server;
    const char *engine_name = "fixed";
    /* split argv: server options go to getopt_long, the rest become engine key/value pairs */
    char **sargv = calloc((size_t)argc + 1, sizeof *sargv);
    run_serve_kv *kv = calloc((size_t)argc + 1, sizeof *kv);
    int sargc = 0, n_kv = 0, rc = EXIT_USAGE;
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
        kv[n_kv++] = (run_serve_kv){ key, val };
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
    bool known = false;
    for (size_t i = 0; i < run_serve_engine_count(); i++) known |= !strcmp(run_serve_engine_name(i), engine_name);
    if (!known) { log_error("unknown --engine '%s' (known: fixed, sim)", engine_name); goto out; }
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
    so.server = sp;
    so.engine = engine_name;
    so.engine_opts = kv;
    so.n_engine_opts = n_kv;
    so.on_listening = print_listening;
    char err[256];
    ds_result r = run_serve(&so, err, sizeof err);
    sp.models_meta_json = NULL;   /* run_serve freed it */
    if (r != DS_OK) log_error("%s", err);
    rc = ds_exit_code(r);
out:
    for (int i = 0; i < n_kv; i++) free((char *)kv[i].key);
    free(kv);
    free(sargv);
    free((char *)sp.models_meta_json);
    return rc;
}
