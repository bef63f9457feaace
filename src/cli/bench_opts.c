/* bench_opts — option parsing and validation for load runs (the options themselves, their
 * defaults and their config section are the run layer's: run/bench_opts.h). */
#include "cli/bench_opts.h"
#include "cli/cli.h"
#include "common/units.h"
#include "common/clock.h"
#include "common/log.h"
#include "results/validity.h"
#include "common/fileio.h"
#include "common/redact.h"
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char usage_text[] =
"usage: dsperf bench --url URL [options]\n"
"\n"
"Load-test one OpenAI-compatible streaming endpoint with one load setting; print a summary;\n"
"write results JSON (and per-request JSONL).\n"
"\n"
"target:\n"
"  --url URL               base URL of the server, e.g. http://127.0.0.1:8000 (required)\n"
"  --api completions|chat  endpoint: /v1/completions (default) or /v1/chat/completions\n"
"  --model NAME            model to ask for (default: the first of GET /v1/models)\n"
"  --header 'K: V'         extra HTTP header (repeatable); OPENAI_API_KEY is sent as a Bearer token\n"
"                          unless an Authorization header is given. $ENV{VAR} in a value is replaced\n"
"                          by that variable, so a key need not be on the command line:\n"
"                          --header 'Authorization: Bearer $ENV{MY_KEY}' (single quotes)\n"
"  --header-file FILE      headers from FILE, one 'Name: value' per line ('#' comments; $ENV{VAR} too)\n"
"                          Credentials never reach the results, reports or logs: they are masked\n"
"                          (e.g. [redacted sk-... #1a2b3c]; the fingerprint tells keys apart)\n"
"  --insecure              do not verify TLS certificates\n"
"  --timeout T             whole-request timeout (default 300s)\n"
"load (closed loop or open loop):\n"
"  --concurrency N         closed loop: N users, each sends when its last request finished\n"
"  --think T               closed loop: pause between a user's requests (default 0)\n"
"  --rate R/s              open loop: mean arrival rate (e.g. 20/s)\n"
"  --arrival KIND          poisson (default), gamma:K (K<1 burstier), constant, trace (dataset timestamps)\n"
"  --ramp 'A->B over T'    open loop: the rate climbs linearly from A to B over T, then holds B\n"
"                          (e.g. --ramp '0->40/s over 60s'; replaces --rate)\n"
"  --max-concurrency N     open loop: cap in-flight requests; the excess waits in a measured client queue\n"
"  --requests N            measured requests (default 100 unless --duration is given)\n"
"  --duration T            stop scheduling after T (e.g. 30s); in-flight requests then finish\n"
"  --grace T               how long in-flight requests may finish after --duration (default 30s)\n"
"  --warmup N              extra requests first, excluded from statistics (default 0)\n"
"  --seed S                seed for arrivals and prompts (default 1)\n"
"  --client-threads N      client event loops (default auto: one per 256 streams, at most half the\n"
"                          CPUs; a trace of bursts: one per 64 requests of its largest burst, at\n"
"                          most all CPUs but one; the plan is split between them)\n"
"dataset:\n"
"  --dataset SPEC          random:in=N,out=M,range=F (default random:in=1024,out=128) or jsonl:FILE\n"
"                          also prefix:groups=G,prefix=P,suffix=S,out=M and sharegpt:FILE\n"
"                          also mooncake:FILE, a production trace in Moonshot's Mooncake format\n"
"                          (timestamp ms, input_length, output_length, hash_ids): prompts share\n"
"                          exactly the blocks whose ids they share; use --arrival trace to replay its\n"
"                          times (the run sends the whole trace unless --requests/--duration says less)\n"
"                          and sessions:n=N,turns=T,first=P,user=U,out=M,think=D,system=S: N multi-turn\n"
"                          conversations, each turn sending the whole history with the server's real\n"
"                          answers; --concurrency C runs C at once, --rate R/s starts them at R/s\n"
"  --class 'NAME;weight=W;dataset=SPEC;slo=ttft=..,tpot=..'   a request class (repeatable): each\n"
"                          request draws its class by weight; every class is reported on its own\n"
"                          (dataset and slo default to --dataset and --slo)\n"
"  --tokenizer PATH        the served model's tokenizer.json or GGUF: exact prompt lengths in tokens,\n"
"                          output tokens counted exactly (default: lengths in words)\n"
"  --length-tolerance F    allowed error of a declared prompt length in a jsonl file (default 0.05)\n"
"  --trace-block-size N    tokens per hash id of a mooncake trace (default 512; --block-size is the\n"
"                          KV block in sim, plan and serve)\n"
"  --time-scale F          multiply trace timestamps by F (0.5 replays twice as fast; default 1)\n"
"  --trace-window A..B     replay only the requests from A to B after the trace's first (e.g. 10m..20m;\n"
"                          A.. or ..B leave a side open)\n"
"  --ignore-eos            ask the server to ignore EOS (always on for random datasets)\n"
"  --no-usage              do not ask for stream_options.include_usage\n"
"telemetry (sampled on the same clock as the requests, kept in the results):\n"
"  --gpu-ids all|0,1       sample these local GPUs: utilization, tensor/DRAM activity (GPM), power,\n"
"                          clocks via NVML\n"
"  --server-metrics URL    scrape the server's Prometheus /metrics (vLLM, SGLang, TGI, llama.cpp)\n"
"  --host-metrics          host CPU, memory and NUMA placement (with --server-pid: of the server)\n"
"  --server-pid PID        the server process, for its CPU and NUMA placement\n"
"  --telemetry-interval T  sampling interval (default 100ms)\n"
"many hosts (under mpirun / srun --mpi=pmix; see the README, \"Beyond one machine\"):\n"
"  --gpu-nodes H1,H2       ranks on these hosts sample their GPUs and host (--gpu-ids, --host-metrics)\n"
"                          and send no load\n"
"  --rank-timeout T        a rank silent this long is lost; the result covers the others (default 30s)\n"
"statistics and output:\n"
"  --slo ttft=200ms,tpot=50ms,e2el=10s   goodput SLOs (any subset)\n"
"  --percentiles LIST      default 50,90,95,99,99.9\n"
"  --max-error-rate F      server-side failures (not requests dsperf cancelled itself) above this\n"
"                          share of the requests that ended fail the run: exit 1 (default 1%)\n"
"  --out FILE              write results JSON (schema dsperf.results/1, vLLM-compatible names); - is\n"
"                          standard output; default a new bench-<date>-<time>.json (in\n"
"                          $DSPERF_RESULTS_DIR or here), never an earlier run's file\n"
"  --save-requests FILE    write one JSON line per request with every timestamp (- is standard output)\n"
"  --quiet                 no summary and no progress; --no-progress: no live line\n"
"history (see dsperf history --help):\n"
"  --db PATH               record the run in this results history (SQLite; default $DSPERF_DB)\n"
"  --label KEY=VALUE       a label for the run in the history (repeatable), e.g. release=v0.9.1\n"
"\n"
"examples:\n"
"  dsperf bench --url http://127.0.0.1:8000 --concurrency 32 --requests 500 --out r.json\n"
"  dsperf bench --url http://h:8000 --api chat --rate 20/s --max-concurrency 64 --duration 60s \\\n"
"               --dataset random:in=2048,out=256 --slo ttft=500ms,tpot=50ms\n"
"  mpirun --hostfile hosts -np 8 dsperf bench --url http://h:8000 --rate 400/s --duration 120s \\\n"
"               --gpu-nodes gpu1,gpu2 --gpu-ids all --out job.json   # one job over many hosts\n";

enum { O_URL = 256, O_API, O_MODEL, O_HEADER, O_INSECURE, O_TIMEOUT, O_CONC, O_THINK, O_RATE, O_ARRIVAL,
       O_MAXCONC, O_REQUESTS, O_DURATION, O_GRACE, O_WARMUP, O_SEED, O_DATASET, O_IGNORE_EOS, O_NO_USAGE,
       O_SLO, O_BLOCK_OLD, O_PCT, O_OUT, O_SAVE, O_QUIET, O_NOPROG, O_HELP, O_GPU, O_SMETRICS, O_HOSTM, O_SPID, O_TINT, O_TOK, O_LENTOL, O_CTHREADS, O_RAMP, O_CLASS, O_GPUNODES, O_RANKTO, O_HFILE, O_MAXERR,
       O_BLOCK, O_TSCALE, O_TWINDOW, O_DB, O_LABEL };

static const struct option long_opts[] = {
    {"url", 1, 0, O_URL}, {"api", 1, 0, O_API}, {"model", 1, 0, O_MODEL}, {"header", 1, 0, O_HEADER},
    {"header-file", 1, 0, O_HFILE},
    {"trace-block-size", 1, 0, O_BLOCK}, {"block-size", 1, 0, O_BLOCK_OLD}, {"time-scale", 1, 0, O_TSCALE}, {"trace-window", 1, 0, O_TWINDOW},
    {"insecure", 0, 0, O_INSECURE}, {"timeout", 1, 0, O_TIMEOUT}, {"concurrency", 1, 0, O_CONC},
    {"think", 1, 0, O_THINK}, {"rate", 1, 0, O_RATE}, {"arrival", 1, 0, O_ARRIVAL},
    {"max-concurrency", 1, 0, O_MAXCONC}, {"requests", 1, 0, O_REQUESTS}, {"duration", 1, 0, O_DURATION},
    {"grace", 1, 0, O_GRACE}, {"warmup", 1, 0, O_WARMUP}, {"seed", 1, 0, O_SEED}, {"dataset", 1, 0, O_DATASET},
    {"ignore-eos", 0, 0, O_IGNORE_EOS}, {"no-usage", 0, 0, O_NO_USAGE}, {"slo", 1, 0, O_SLO},
    {"percentiles", 1, 0, O_PCT}, {"max-error-rate", 1, 0, O_MAXERR}, {"out", 1, 0, O_OUT}, {"save-requests", 1, 0, O_SAVE},
    {"gpu-ids", 1, 0, O_GPU}, {"server-metrics", 1, 0, O_SMETRICS}, {"host-metrics", 0, 0, O_HOSTM},
    {"server-pid", 1, 0, O_SPID}, {"telemetry-interval", 1, 0, O_TINT},
    {"client-threads", 1, 0, O_CTHREADS}, {"ramp", 1, 0, O_RAMP}, {"class", 1, 0, O_CLASS}, {"gpu-nodes", 1, 0, O_GPUNODES}, {"rank-timeout", 1, 0, O_RANKTO}, {"tokenizer", 1, 0, O_TOK}, {"length-tolerance", 1, 0, O_LENTOL},
    {"db", 1, 0, O_DB}, {"label", 1, 0, O_LABEL},
    {"quiet", 0, 0, O_QUIET}, {"no-progress", 0, 0, O_NOPROG}, {"help", 0, 0, O_HELP}, {0, 0, 0, 0},
};

static int bad(const char *flag, const char *val, const char *want) {
    log_error("bad value '%s' for --%s: %s", val, flag, want);
    return EXIT_USAGE;
}


int bench_opts_parse_window(const char *s, int64_t *lo, int64_t *hi) {
    const char *dots = strstr(s, "..");
    if (!dots || dots[2] == '.' ) return -1;
    char a[64];
    size_t n = (size_t)(dots - s);
    if (n >= sizeof a) return -1;
    memcpy(a, s, n);
    a[n] = 0;
    *lo = 0;
    *hi = 0;
    if (n && units_parse_duration_ns(a, lo) < 0) return -1;
    if (dots[2] && units_parse_duration_ns(dots + 2, hi) < 0) return -1;
    if (!n && !dots[2]) return -1;
    return dots[2] && *hi <= *lo ? -1 : 0;
}

/* "NAME;weight=W;dataset=SPEC;slo=ttft=200ms,tpot=50ms" — ';' separates, as SPEC and slo use ','. */
static int parse_class(bench_opts *b, bench_class *c, const char *spec) {
    memset(c, 0, sizeof *c);
    c->spec_copy = strdup(spec);
    c->weight = 1;
    c->dataset_spec = b->dataset_spec;
    c->summary = b->summary;
    char *save = NULL;
    char *name = strtok_r(c->spec_copy, ";", &save);
    if (!name || !*name || strchr(name, '=')) return -1;
    c->name = name;
    for (char *f = strtok_r(NULL, ";", &save); f; f = strtok_r(NULL, ";", &save)) {
        if (!strncmp(f, "weight=", 7)) { if (units_parse_double(f + 7, &c->weight) < 0 || !(c->weight > 0)) return -1; }
        else if (!strncmp(f, "dataset=", 8)) { if (!f[8]) return -1; c->dataset_spec = f + 8; }
        else if (!strncmp(f, "slo=", 4)) { if (summary_parse_slo(&c->summary, f + 4) < 0) return -1; }
        else return -1;
    }
    return 0;
}


void bench_opts_defaults(bench_opts *b, int argc, char **argv) {
    bench_opts_init(b);
    b->command_line = cli_command_line(argc, argv);
    b->headers = calloc((size_t)argc + 1, sizeof *b->headers);
    b->headers_cap = (size_t)argc;
}

/* One header, its $ENV{VAR} references replaced (the value is then only in memory, never in
 * argv); kept, and its credential registered for masking. where: what to blame in an error. */
static int add_header(bench_opts *b, const char *h, const char *where) {
    const char *colon = strchr(h, ':');
    if (!colon || colon == h) {   /* only the name is quoted back: the rest may be a key */
        log_error("%s: '%.*s...' is not a header; use 'Name: value'", where, (int)strcspn(h, " \t:"), h);
        return EXIT_USAGE;
    }
    size_t cap = strlen(h) + 1, n = 0;
    char *out = malloc(cap);
    for (const char *p = h; out && *p;) {
        const char *v = strncmp(p, "$ENV{", 5) ? NULL : p + 5, *end = v ? strchr(v, '}') : NULL;
        const char *val = NULL;
        size_t len = 1;
        if (end) {
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(end - v) < 255 ? (int)(end - v) : 255, v);
            if (!(val = getenv(name))) {
                log_error("%s: $ENV{%s} is not set; export %s=... first", where, name, name);
                free(out);
                return EXIT_USAGE;
            }
            len = strlen(val);
        }
        if (n + len + 1 > cap) {
            char *o = realloc(out, cap = (n + len + 1) * 2);
            if (!o) { free(out); out = NULL; break; }
            out = o;
        }
        memcpy(out + n, val ? val : p, len);
        n += len;
        p = end ? end + 1 : p + 1;
    }
    if (out) out[n] = 0;
    if (out && b->n_headers == b->headers_cap) {   /* --header-file can hold more than argc */
        const char **hs = realloc(b->headers, (b->headers_cap * 2 + 9) * sizeof *hs);
        if (hs) { b->headers = hs; b->headers_cap = b->headers_cap * 2 + 8; }
    }
    if (!out || !b->headers || b->n_headers == b->headers_cap) {
        log_error("out of memory reading headers");
        free(out);
        return EXIT_USAGE;
    }
    redact_add_header(out);
    /* an explicit Authorization replaces the OPENAI_API_KEY one rather than adding a second */
    if ((size_t)(colon - h) == 13 && !strncasecmp(h, "authorization", 13)) b->client.api_key = NULL;
    b->headers[b->n_headers++] = out;
    b->headers[b->n_headers] = NULL;
    return 0;
}

/* --header-file: one header per line; blank lines and '#' comments skipped. */
static int add_header_file(bench_opts *b, const char *path) {
    char *text = NULL;
    if (fileio_read_all(path, &text, NULL) < 0) {
        log_error("--header-file %s: %s", path, strerror(errno));
        return EXIT_USAGE;
    }
    int rc = 0, line = 0;
    char *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l && !rc; l = strtok_r(NULL, "\n", &save)) {
        line++;
        size_t n = strlen(l);
        while (n && (l[n - 1] == '\r' || l[n - 1] == ' ' || l[n - 1] == '\t')) l[--n] = 0;
        while (*l == ' ' || *l == '\t') l++;
        if (!*l || *l == '#') continue;
        char where[300];
        snprintf(where, sizeof where, "--header-file %.200s line %d", path, line);
        rc = add_header(b, l, where);
    }
    free(text);
    return rc;
}
int bench_opts_shared(bench_opts *b, const char *name, const char *a) {
    long long v;
    int64_t ns;
    if (!strcmp(name, "url")) b->client.base_url = a;
    else if (!strcmp(name, "api")) {
        if (!strcmp(a, "completions")) b->client.api = OPENAI_COMPLETIONS;
        else if (!strcmp(a, "chat")) b->client.api = OPENAI_CHAT;
        else return bad("api", a, "use completions or chat");
    } else if (!strcmp(name, "model")) b->client.model = a;
    else if (!strcmp(name, "header")) return add_header(b, a, "--header");
    else if (!strcmp(name, "header-file")) return add_header_file(b, a);
    else if (!strcmp(name, "insecure")) b->client.insecure = true;
    else if (!strcmp(name, "timeout")) {
        if (units_parse_duration_ns(a, &ns) < 0 || ns <= 0) return bad("timeout", a, "a duration such as 30s or 5m");
        b->client.timeout_ns = ns;
    } else if (!strcmp(name, "dataset")) b->dataset_spec = a;
    else if (!strcmp(name, "tokenizer")) b->tokenizer_path = a;
    else if (!strcmp(name, "no-usage")) b->client.include_usage = false;
    else if (!strcmp(name, "seed")) {
        if (units_parse_int(a, 0, INT64_MAX, &v) < 0) return bad("seed", a, "a non-negative integer");
        b->plan.seed = (uint64_t)v;
    } else if (!strcmp(name, "slo")) {
        if (summary_parse_slo(&b->summary, a) < 0) return bad("slo", a, "use ttft=200ms,tpot=50ms,e2el=10s (any subset)");
    } else if (!strcmp(name, "max-error-rate")) {
        if (validity_parse_rate(a, &b->max_error_rate) < 0) return bad("max-error-rate", a, "a share such as 1% or 0.01, within [0, 1]");
    } else if (!strcmp(name, "quiet")) { b->quiet = true; log_set_quiet(1); }
    else {
        bool taken;
        if (history_opts_apply(&b->hist, name, a, &taken) != DS_OK) return EXIT_USAGE;
        if (!taken) return 1;
    }
    return 0;
}

int bench_opts_parse(bench_opts *b, int argc, char **argv) {
    bench_opts_defaults(b, argc, argv);
    double rate = 0;
    const char *ramp = NULL;
    const char *class_specs[BENCH_MAX_CLASSES];
    long long v;
    int64_t ns;
    int gpu_idx[64];
    bool gpu_all;
    optind = 1;
    opterr = 0;
    cli_option_table("bench", long_opts);   /* DSPERF_OPTION_TABLE: the table, for completion */
    for (;;) {
        int li = -1;
        int c = getopt_long(argc, argv, "", long_opts, &li);
        if (c == -1) break;
        const char *a = optarg;
        /* "--gpu-ids --server-metrics URL": a missing value must not swallow the next option */
        if (a && li >= 0 && a[0] == '-' && a[1] == '-' && a[2]) {
            log_error("--%s needs a value, but the next word is the option '%s'; see dsperf bench --help", long_opts[li].name, a);
            return EXIT_USAGE;
        }
        if (c != '?' && c != ':' && li >= 0) {
            int r = bench_opts_shared(b, long_opts[li].name, a);
            if (r == 0) continue;
            if (r != 1) return r;
        }
        switch (c) {
        case O_CONC: if (units_parse_int(a, 1, 1000000, &v) < 0) return bad("concurrency", a, "an integer >= 1"); b->plan.concurrency = (int)v; break;
        case O_THINK: if (units_parse_duration_ns(a, &ns) < 0) return bad("think", a, "a duration such as 500ms"); b->plan.think_ns = ns; break;
        case O_RATE: if (units_parse_rate_per_s(a, &rate) < 0 || rate <= 0) return bad("rate", a, "a rate such as 20/s"); break;
        case O_ARRIVAL: b->arrival_spec = a; break;
        case O_MAXCONC: if (units_parse_int(a, 1, 1000000, &v) < 0) return bad("max-concurrency", a, "an integer >= 1"); b->plan.max_concurrency = (int)v; break;
        case O_REQUESTS: if (units_parse_int(a, 1, 100000000, &v) < 0) return bad("requests", a, "an integer >= 1"); b->plan.requests = (size_t)v; b->requests_given = true; break;
        case O_BLOCK_OLD:   /* the old spelling: one meaning per flag, --block-size is the KV block elsewhere */
            log_warn("--block-size here is deprecated: it is --trace-block-size (tokens per hash id of a trace); "
                     "--block-size means the KV block in sim, plan and serve");
            /* fall through */
        case O_BLOCK: if (units_parse_int(a, 1, 1 << 20, &v) < 0) return bad("trace-block-size", a, "tokens per hash id, e.g. 512"); b->block_tokens = (int32_t)v; break;
        case O_TSCALE: if (units_parse_double(a, &b->time_scale) < 0 || !(b->time_scale > 0) || b->time_scale > 1e6) return bad("time-scale", a, "a factor > 0 such as 0.5 (twice as fast) or 2"); break;
        case O_TWINDOW: if (bench_opts_parse_window(a, &b->window_start_ns, &b->window_end_ns) < 0) return bad("trace-window", a, "START..END with durations, e.g. 10m..20m, 30s.. or ..5m"); break;
        case O_DURATION: if (units_parse_duration_ns(a, &ns) < 0 || ns <= 0) return bad("duration", a, "a duration such as 30s"); b->plan.duration_ns = ns; break;
        case O_GRACE: if (units_parse_duration_ns(a, &ns) < 0) return bad("grace", a, "a duration such as 30s"); b->plan.grace_ns = ns; break;
        case O_WARMUP: if (units_parse_int(a, 0, 100000000, &v) < 0) return bad("warmup", a, "an integer >= 0"); b->plan.warmup = (size_t)v; break;
        case O_IGNORE_EOS: b->ignore_eos = true; break;
        case O_PCT: if (summary_parse_percentiles(&b->summary, a) < 0) return bad("percentiles", a, "a list such as 50,90,99,99.9 within (0,100]"); break;
        case O_OUT: b->out_path = a; break;
        case O_SAVE: b->requests_path = a; break;
        case O_GPU:
            if (telemetry_parse_gpu_list(a, gpu_idx, 64, &gpu_all) < 0) return bad("gpu-ids", a, "all, or GPU indices such as 0,1 (the GPU type is --gpu in plan, sim, serve and diagnose)");
            b->telemetry.gpus = a;
            b->telemetry_on = true;
            break;
        case O_SMETRICS: b->telemetry.server_metrics_url = a; b->telemetry_on = true; break;
        case O_HOSTM: b->telemetry.host = true; b->telemetry_on = true; break;
        case O_SPID: if (units_parse_int(a, 1, 1 << 30, &v) < 0) return bad("server-pid", a, "a process id"); b->telemetry.server_pid = (int)v; b->telemetry.host = true; b->telemetry_on = true; break;
        case O_TINT: if (units_parse_duration_ns(a, &ns) < 0 || ns < 10 * NS_PER_MS) return bad("telemetry-interval", a, "a duration of at least 10ms"); b->telemetry.interval_ns = ns; break;
        case O_RAMP: ramp = a; break;
        case O_CLASS:
            if (b->n_classes == BENCH_MAX_CLASSES) { log_error("at most %d --class options", BENCH_MAX_CLASSES); return EXIT_USAGE; }
            class_specs[b->n_classes++] = a;
            break;
        case O_CTHREADS: if (units_parse_int(a, 1, 64, &v) < 0) return bad("client-threads", a, "an integer from 1 to 64"); b->plan.client_threads = (int)v; break;
        case O_LENTOL: if (units_parse_double(a, &b->length_tolerance) < 0 || b->length_tolerance < 0 || b->length_tolerance >= 1) return bad("length-tolerance", a, "a fraction such as 0.05"); break;
        case O_NOPROG: b->no_progress = true; break;
        case O_GPUNODES: b->dist_o.gpu_nodes = a; break;
        case O_RANKTO: if (units_parse_duration_ns(a, &ns) < 0 || ns < 100 * NS_PER_MS) return bad("rank-timeout", a, "a duration of at least 100ms such as 30s"); b->dist_o.rank_timeout_ns = ns; break;
        case O_HELP: fputs(usage_text, stdout); return EXIT_OK;
        default:
            return cli_bad_option(argc > 0 ? argv[0] : "bench", long_opts, argc, argv, optind, optopt);
        }
    }
    if (optind < argc) { log_error("unexpected argument '%s'; see dsperf bench --help", argv[optind]); return EXIT_USAGE; }
    if (!b->client.base_url) { log_error("--url is required (e.g. --url http://127.0.0.1:8000); see dsperf bench --help"); return EXIT_USAGE; }
    arrival ramp_arr = {0};
    if (ramp) {
        if (arrival_parse_ramp(ramp, &ramp_arr) < 0) return bad("ramp", ramp, "use 'A->B over T', e.g. '0->40/s over 60s'");
        if (rate > 0) { log_error("--ramp sets the rate; drop --rate"); return EXIT_USAGE; }
        if (b->plan.concurrency) { log_error("--ramp is an open-loop plan; it excludes --concurrency"); return EXIT_USAGE; }
        rate = ramp_arr.rate_per_s;
    }
    if (b->plan.concurrency && rate > 0) { log_error("--concurrency (closed loop) and --rate (open loop) exclude each other; pick one"); return EXIT_USAGE; }
    if (!b->plan.concurrency && rate <= 0) {
        if (!strcmp(b->arrival_spec, "trace")) rate = 1;   /* the dataset's timestamps set the pace */
        else { log_error("give a load: --concurrency N (closed loop) or --rate R/s (open loop)"); return EXIT_USAGE; }
    }
    if (b->plan.max_concurrency && b->plan.concurrency) { log_error("--max-concurrency applies to open loop (--rate); with --concurrency the cap is the user count"); return EXIT_USAGE; }
    if (!b->plan.concurrency) {
        if (!strcmp(b->arrival_spec, "trace")) { b->plan.trace = true; b->plan.arr.rate_per_s = rate; }
        else if (arrival_parse(b->arrival_spec, rate, &b->plan.arr) < 0) return bad("arrival", b->arrival_spec, "use poisson, gamma:K (K > 0), constant or trace");
        if (ramp) {
            if (b->plan.trace) { log_error("--ramp and --arrival trace exclude each other"); return EXIT_USAGE; }
            b->plan.arr.ramp_from_per_s = ramp_arr.ramp_from_per_s;
            b->plan.arr.ramp_ns = ramp_arr.ramp_ns;
        }
        /* a ramp has no single intended rate: the lag check then rests on queue time alone */
        b->summary.intended_rate_per_s = ramp ? 0 : rate;
        b->summary.max_concurrency = b->plan.max_concurrency;
    }
    if (!b->plan.requests && !b->plan.duration_ns) b->plan.requests = 100;
    for (int i = 0; i < b->n_classes; i++)
        if (parse_class(b, &b->classes[i], class_specs[i]) < 0)
            return bad("class", class_specs[i], "use 'NAME;weight=W;dataset=SPEC;slo=ttft=200ms,tpot=50ms' (weight > 0; dataset and slo optional)");
    for (int i = 0; i < b->n_classes; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(b->classes[i].name, b->classes[j].name)) { log_error("two --class options are named '%s'", b->classes[i].name); return EXIT_USAGE; }
    b->client.headers = b->headers;
    return -1;
}


