/* cmd_monitor — `dsperf monitor`: probe a live endpoint at a low rate, forever or for a bound,
 * and export what users would feel as Prometheus metrics. Flags are checked here first (a bad flag
 * or URL is a usage error, exit 2); the run itself is run/monitor.h's, where an endpoint that does
 * not answer at start is no error. This file parses, calls it and prints. */
#include "cli/cli.h"
#include "cli/bench_opts.h"
#include "run/monitor.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/units.h"
#include "common/bindaddr.h"
#include <curl/curl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
"usage: dsperf monitor --url URL [options]\n"
"\n"
"Probe an OpenAI-compatible streaming endpoint at a low rate, forever (until SIGINT/SIGTERM) or\n"
"for --duration / --requests, and export client-side SLIs for Prometheus on --listen:\n"
"GET /metrics (TTFT, ITL, TPOT, E2EL histograms, outcomes, SLO counters and burn rates) and\n"
"GET /health. Memory stays bounded however long it runs. An endpoint that is down is probed\n"
"anyway and counted as failures (outcome=\"connect\").\n"
"\n"
"target:\n"
"  --url URL               base URL, e.g. http://10.0.0.5:8000 (required)\n"
"  --api completions|chat  endpoint: /v1/completions (default) or /v1/chat/completions\n"
"  --model NAME            model to ask for (default: the first of GET /v1/models, asked again\n"
"                          at each probe while the endpoint does not answer)\n"
"  --header 'K: V'         extra HTTP header (repeatable); OPENAI_API_KEY is sent as a Bearer token\n"
"                          unless an Authorization header is given; $ENV{VAR} in a value is replaced\n"
"                          by that variable (--header 'Authorization: Bearer $ENV{MY_KEY}')\n"
"  --header-file FILE      headers from FILE, one 'Name: value' per line (keys stay off argv)\n"
"  --insecure              do not verify TLS certificates\n"
"  --timeout T             a probe slower than this is a failure, outcome=\"timeout\" (default 60s)\n"
"probes:\n"
"  --rate R/s              mean probe rate (default 0.2/s: one every 5 s)\n"
"  --arrival KIND          poisson (default) or constant\n"
"  --dataset SPEC          prompts, as for bench (default random:in=256,out=64)\n"
"  --tokenizer PATH        the served model's tokenizer.json or GGUF (prompt lengths in tokens)\n"
"  --no-usage              do not ask for stream_options.include_usage\n"
"  --seed S                seed for arrivals and prompts (default 1)\n"
"  --max-in-flight N       probes due while N are still running are skipped and counted\n"
"                          (dsperf_probes_skipped_total) (default 64)\n"
"  --requests N            stop after N probes (default: no bound)\n"
"  --duration T            stop probing after T, e.g. 1h (default: no bound)\n"
"SLO:\n"
"  --slo ttft=500ms,tpot=50ms,e2el=10s   thresholds of a good probe (any subset; none: a good\n"
"                          probe is one that completed)\n"
"  --slo-target F          objective, fraction of good probes in (0,1) (default 0.99); burn rate\n"
"                          = (bad fraction in the window) / (1 - F), over 5m, 30m, 1h, 6h\n"
"output:\n"
"  --listen [HOST]:PORT    exporter address (default 127.0.0.1:9464; \":PORT\" is loopback; port 0\n"
"                          picks a free one; the address is printed on stdout). The exporter has\n"
"                          no authentication: any other address than loopback prints a warning\n"
"  --log FILE              append one JSON line per probe (flushed), for post-mortems\n"
"  --linger T              after the last probe of --requests/--duration, keep exporting for T\n"
"                          (or until SIGINT/SIGTERM), so a scraper reads the final numbers\n"
"  --quiet                 no informational lines on stderr\n"
"  --max-error-rate F      a run bounded by --requests/--duration whose probes failed on the\n"
"                          server side above this share exits 1 (default 1%)\n"
"history (see dsperf history --help):\n"
"  --db PATH               record a summary of the probes (dsperf.results/1, producer monitor) every\n"
"                          --db-interval, and of the last partial period at the end (default $DSPERF_DB)\n"
"  --db-interval T         the period of those summaries (default 10m; also after 100,000 probes)\n"
"  --label KEY=VALUE       a label for the recorded summaries (repeatable)\n"
"\n"
"Exit codes (as every dsperf command, see dsperf --help): 0 when it ends — SIGINT/SIGTERM is a\n"
"monitor's normal end, whatever the probes' outcomes; 1 when a bounded run (--requests or\n"
"--duration) saw server-side failures above --max-error-rate, or it cannot run (exporter address\n"
"in use, log not writable); 2 for usage errors.\n"
"\n"
"examples:\n"
"  dsperf monitor --url http://10.0.0.5:8000 --slo ttft=500ms,tpot=50ms\n"
"  dsperf monitor --url https://api.example.com --api chat --model deepseek-chat \\\n"
"                 --header 'Authorization: Bearer KEY' --rate 1/m --listen :9464 --log probes.jsonl\n"
"  dsperf monitor --url http://127.0.0.1:8000 --rate 10/s --requests 50 --listen :0 --linger 30s\n";

enum { O_URL = 256, O_API, O_MODEL, O_HEADER, O_INSECURE, O_TIMEOUT, O_RATE, O_ARRIVAL, O_DATASET, O_TOK,
       O_NO_USAGE, O_SEED, O_MAXIF, O_REQUESTS, O_DURATION, O_SLO, O_SLO_TARGET, O_LISTEN, O_LOG, O_LINGER,
       O_QUIET, O_HELP, O_HFILE, O_MAXERR, O_DB, O_LABEL, O_DB_INTERVAL };

static const struct option long_opts[] = {
    {"url", 1, 0, O_URL}, {"api", 1, 0, O_API}, {"model", 1, 0, O_MODEL}, {"header", 1, 0, O_HEADER},
    {"header-file", 1, 0, O_HFILE},
    {"insecure", 0, 0, O_INSECURE}, {"timeout", 1, 0, O_TIMEOUT}, {"rate", 1, 0, O_RATE},
    {"arrival", 1, 0, O_ARRIVAL}, {"dataset", 1, 0, O_DATASET}, {"tokenizer", 1, 0, O_TOK},
    {"no-usage", 0, 0, O_NO_USAGE}, {"seed", 1, 0, O_SEED}, {"max-in-flight", 1, 0, O_MAXIF},
    {"requests", 1, 0, O_REQUESTS}, {"duration", 1, 0, O_DURATION}, {"slo", 1, 0, O_SLO},
    {"slo-target", 1, 0, O_SLO_TARGET}, {"listen", 1, 0, O_LISTEN}, {"log", 1, 0, O_LOG},
    {"linger", 1, 0, O_LINGER}, {"quiet", 0, 0, O_QUIET}, {"help", 0, 0, O_HELP},
    {"max-error-rate", 1, 0, O_MAXERR},
    {"db", 1, 0, O_DB}, {"label", 1, 0, O_LABEL}, {"db-interval", 1, 0, O_DB_INTERVAL}, {0, 0, 0, 0},
};

static int bad(const char *flag, const char *val, const char *want) {
    log_error("bad value '%s' for --%s: %s", val, flag, want);
    return EXIT_USAGE;
}

/* "HOST:PORT", ":PORT" (loopback) or "[v6]:PORT" into host (buf) and port. 0 ok, -1 malformed. */
static int parse_listen(const char *s, char *host, size_t hostlen, int *port) {
    const char *colon = strrchr(s, ':');
    long long p;
    if (!colon || units_parse_int(colon + 1, 0, 65535, &p) < 0) return -1;
    const char *h = s;
    size_t hl = (size_t)(colon - s);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') { h++; hl -= 2; }
    if (hl >= hostlen) return -1;
    if (hl == 0) snprintf(host, hostlen, "127.0.0.1");
    else snprintf(host, hostlen, "%.*s", (int)hl, h);
    *port = (int)p;
    return 0;
}

/* The URL's syntax, by libcurl's own parser: a scheme of http or https and a host. */
static bool url_ok(const char *url) {
    if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) return false;
    CURLU *u = curl_url();
    if (!u) return false;
    char *host = NULL;
    bool ok = curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK && curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK && host && *host;
    curl_free(host);
    curl_url_cleanup(u);
    return ok;
}

/* The exporter's address on stdout, where a script waits for it. */
static void print_listening(void *ctx, const char *host, int port) {
    (void)ctx;
    bool v6 = strchr(host, ':') != NULL;
    printf("dsperf monitor: metrics on http://%s%s%s:%d/metrics\n", v6 ? "[" : "", host, v6 ? "]" : "", port);
    fflush(stdout);
}

/* The totals, and the run policy's verdict, before any linger. */
static void print_done(void *ctx, const run_monitor_result *r) {
    (void)ctx;
    const monitor_totals *t = &r->totals;
    printf("dsperf monitor: done: %zu probes, %zu ok%s\n", t->probes, t->ok, t->interrupted ? " (stopped by a signal)" : "");
    fflush(stdout);
    if (r->judged_failed) log_error("%s", r->why);
}

int cmd_monitor(int argc, char **argv) {
    bench_opts b;
    bench_opts_defaults(&b, argc, argv);   /* client, dataset and tokenizer handling as bench's */
    run_monitor_opts ro;
    run_monitor_defaults(&ro, &b);
    monitor_opts *mo = &ro.mon;
    double rate = mo->arr.rate_per_s;
    const char *listen_spec = "127.0.0.1:9464";
    char listen_host[256];
    int64_t ns;
    long long v;
    double d;
    int rc = EXIT_USAGE;
    optind = 1;
    opterr = 0;
    cli_option_table("monitor", long_opts);   /* DSPERF_OPTION_TABLE: the table, for completion */
    for (;;) {
        int li = -1;
        int c = getopt_long(argc, argv, "", long_opts, &li);
        if (c == -1) break;
        const char *a = optarg;
        if (c != '?' && c != ':' && li >= 0) {   /* target, requests, SLO: parsed as bench parses them */
            int r = bench_opts_shared(&b, long_opts[li].name, a);
            if (r == 0) continue;
            if (r != 1) goto out;
        }
        switch (c) {
        case O_RATE:
            if (units_parse_rate_per_s(a, &rate) < 0 || !(rate > 0) || rate > 10000) { rc = bad("rate", a, "a rate such as 0.2/s or 12/m (at most 10000/s)"); goto out; }
            break;
        case O_ARRIVAL:
            if (strcmp(a, "poisson") && strcmp(a, "constant")) { rc = bad("arrival", a, "use poisson or constant"); goto out; }
            b.arrival_spec = a;
            break;
        case O_MAXIF:
            if (units_parse_int(a, 1, 100000, &v) < 0) { rc = bad("max-in-flight", a, "an integer from 1 to 100000"); goto out; }
            mo->max_in_flight = (int)v;
            break;
        case O_REQUESTS:
            if (units_parse_int(a, 1, INT64_MAX, &v) < 0) { rc = bad("requests", a, "an integer >= 1"); goto out; }
            mo->requests = (size_t)v;
            break;
        case O_DURATION:
            if (units_parse_duration_ns(a, &ns) < 0 || ns <= 0) { rc = bad("duration", a, "a duration such as 1h"); goto out; }
            mo->duration_ns = ns;
            break;
        case O_SLO_TARGET:
            if (units_parse_double(a, &d) < 0 || !(d > 0 && d < 1)) { rc = bad("slo-target", a, "a fraction in (0,1) such as 0.99"); goto out; }
            mo->slo.target = d;
            break;
        case O_LISTEN: listen_spec = a; break;
        case O_LOG: mo->log_path = a; break;
        case O_LINGER:
            if (units_parse_duration_ns(a, &ns) < 0 || ns < 0) { rc = bad("linger", a, "a duration such as 30s"); goto out; }
            ro.linger_ns = ns;
            break;
        case O_DB_INTERVAL:
            if (units_parse_duration_ns(a, &ns) < 0 || ns < NS_PER_S) { rc = bad("db-interval", a, "a duration of at least 1s, such as 10m"); goto out; }
            ro.db_interval_ns = ns;
            break;
        case O_HELP: fputs(usage_text, stdout); rc = EXIT_OK; goto out;
        default:
            cli_bad_option("monitor", long_opts, argc, argv, optind, optopt);
            goto out;
        }
    }
    if (optind < argc) { log_error("unexpected argument '%s'; see dsperf monitor --help", argv[optind]); goto out; }
    if (!b.client.base_url) { log_error("--url is required (e.g. --url http://127.0.0.1:8000); see dsperf monitor --help"); goto out; }
    if (!url_ok(b.client.base_url)) {
        log_error("bad --url '%s': expected http://HOST[:PORT] or https://HOST[:PORT] (e.g. http://127.0.0.1:8000)", b.client.base_url);
        goto out;
    }
    if (parse_listen(listen_spec, listen_host, sizeof listen_host, &mo->listen_port) < 0) {
        rc = bad("listen", listen_spec, "use [HOST]:PORT, e.g. 127.0.0.1:9464 or :9464");
        goto out;
    }
    mo->listen_host = listen_host;
    bindaddr_warn_exposed("the exporter (--listen)", listen_host);
    if (arrival_parse(b.arrival_spec, rate, &mo->arr) < 0) { rc = bad("arrival", b.arrival_spec, "use poisson or constant"); goto out; }
    if (history_opts_check(&b.hist) != DS_OK) { rc = EXIT_USAGE; goto out; }
    ro.on_listening = print_listening;
    ro.on_done = print_done;
    run_monitor_result res;
    char err[1024];
    ds_result r = run_monitor(&ro, &res, err, sizeof err);
    if (r != DS_OK && err[0]) log_error("%s", err);
    rc = r != DS_OK ? ds_exit_code(r) : res.judged_failed ? EXIT_RUN_FAILED : EXIT_OK;
out:
    bench_opts_free(&b);
    return rc;
}
