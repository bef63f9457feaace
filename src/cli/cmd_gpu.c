/* cmd_gpu — `dsperf gpu`: NVML + GPM readings of every GPU at an interval, as a dmon-like
 * table, CSV or JSON lines, and optionally a Prometheus exporter on loopback; --record runs the
 * telemetry sampler through run/gpu_record.h and writes what it returns. */
#include "common/clock.h"
#include "common/log.h"
#include "common/units.h"
#include "common/fileio.h"
#include "cli/cli.h"
#include "telemetry/nvml.h"
#include "run/gpu_record.h"
#include "common/bindaddr.h"
#include <jansson.h>
#include <event2/event.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#define GPU_MAX 64

typedef enum { OUT_TABLE, OUT_CSV, OUT_JSON } out_fmt;

typedef struct {
    nvml *nv;
    int n;
    nvml_gpu *g[GPU_MAX];
    nvml_gpu_info info[GPU_MAX];
    double last[GPU_MAX][GPU_COL_COUNT];
    bool have_last;
    out_fmt fmt;
    long long count, done;
    int64_t start_ns, end_ns;      /* end_ns 0: no --duration */
    struct event_base *base;
} gpu_ctx;

static void usage(FILE *f) {
    fprintf(f,
        "usage: dsperf gpu [--gpu-ids all|0,1] [--interval 100ms] [--duration T] [--count N]\n"
        "                  [--csv | --json] [--prom [HOST]:PORT]\n"
        "       dsperf gpu --record FILE --duration T [--no-gpu] [--host-metrics] [--server-pid PID]\n"
        "                  [--server-metrics URL]\n\n"
        "GPU telemetry from NVML (and GPM on Hopper and newer): utilisation, SM/tensor/DRAM activity,\n"
        "memory, clocks, power, energy, temperature, PCIe/NVLink traffic, throttling.\n\n"
        "  --gpu-ids LIST   GPUs to show: all (default) or indices, e.g. 0,1\n"
        "  --interval D     sampling interval (default 100ms; GPM needs >= 100ms)\n"
        "  --duration D     stop after D (e.g. 30s); default: until Ctrl-C\n"
        "  --count N        stop after N samples per GPU\n"
        "  --csv            CSV with a header row (t_s,gpu,<columns>)\n"
        "  --json           one JSON object per GPU sample per line\n"
        "  --prom ADDR      also serve Prometheus text on http://ADDR/metrics (\":9400\" binds 127.0.0.1;\n"
        "                   no authentication: an address other than loopback prints a warning)\n"
        "  --record FILE    run the telemetry sampler (the one bench uses) for --duration and write its\n"
        "                   series + summary JSON to FILE; with --server-metrics URL, --host-metrics,\n"
        "                   --server-pid PID it also records the server and the host\n\n"
        "columns: sm%% = GPM SM activity, tc%% = any tensor-core activity, dram%% = DRAM bandwidth\n"
        "utilisation (GPM); util%% = NVML 'a kernel was running'; '-' = not available here.\n\n"
        "examples:\n"
        "  dsperf gpu                          # live table, all GPUs, 100 ms\n"
        "  dsperf gpu --interval 1s --count 10 --csv > gpu.csv\n"
        "  dsperf gpu --gpu-ids 0 --json --duration 30s\n"
        "  dsperf gpu --prom :9400 --interval 1s\n"
        "  dsperf gpu --record tel.json --duration 60s --host-metrics --server-metrics http://127.0.0.1:8000/metrics\n");
}

static void fmt_val(char *buf, size_t len, double v, int prec) {
    if (isnan(v)) snprintf(buf, len, "-");
    else snprintf(buf, len, "%.*f", prec, v);
}

static void print_table_row(int gpu, const double *c, bool header) {
    static const struct { const char *h; gpu_col col; int w, prec; } cols[] = {
        {"util%", GPU_UTIL_GPU_PCT, 5, 0}, {"sm%", GPU_SM_UTIL_PCT, 5, 0}, {"occ%", GPU_SM_OCCUPANCY_PCT, 5, 0},
        {"tc%", GPU_TENSOR_UTIL_PCT, 5, 0}, {"dram%", GPU_DRAM_BW_UTIL_PCT, 5, 0}, {"pwr_W", GPU_POWER_W, 6, 0},
        {"temp", GPU_TEMP_C, 4, 0}, {"smclk", GPU_SM_CLOCK_MHZ, 5, 0}, {"mclk", GPU_MEM_CLOCK_MHZ, 5, 0},
        {"memMiB", GPU_MEM_USED_MIB, 7, 0}, {"pcieRx", GPU_GPM_PCIE_RX_MB_S, 7, 0}, {"pcieTx", GPU_GPM_PCIE_TX_MB_S, 7, 0},
        {"nvlRx", GPU_NVLINK_RX_MB_S, 7, 0}, {"nvlTx", GPU_NVLINK_TX_MB_S, 7, 0}, {"thr", GPU_THROTTLED, 3, 0}};
    size_t n = sizeof cols / sizeof cols[0];
    if (header) {
        printf("# gpu");
        for (size_t i = 0; i < n; i++) printf(" %*s", cols[i].w, cols[i].h);
        printf("\n");
        return;
    }
    printf("%5d", gpu);
    for (size_t i = 0; i < n; i++) {
        char b[32];
        double v = c[cols[i].col];
        /* Without GPM, PCIe comes from NVML's own counter. */
        if (isnan(v) && cols[i].col == GPU_GPM_PCIE_RX_MB_S) v = c[GPU_PCIE_RX_MB_S];
        if (isnan(v) && cols[i].col == GPU_GPM_PCIE_TX_MB_S) v = c[GPU_PCIE_TX_MB_S];
        fmt_val(b, sizeof b, v, cols[i].prec);
        printf(" %*s", cols[i].w, b);
    }
    printf("\n");
}

static void on_tick(evutil_socket_t fd, short ev, void *arg) {
    (void)fd; (void)ev;
    gpu_ctx *c = arg;
    int64_t now = clock_now_ns();
    double t_s = (double)(now - c->start_ns) / 1e9;
    if (c->fmt == OUT_TABLE && c->done % 20 == 0) print_table_row(0, NULL, true);
    for (int i = 0; i < c->n; i++) {
        bool was_lost = nvml_gpu_lost(c->g[i]);
        nvml_gpu_sample(c->g[i], clock_now_ns(), c->last[i]);
        if (!was_lost && nvml_gpu_lost(c->g[i]))
            log_warn("GPU %d was lost (NVML: GPU is lost, %.1f s in); its columns stay empty", c->info[i].index, t_s);
        const double *v = c->last[i];
        if (c->fmt == OUT_TABLE) {
            print_table_row(c->info[i].index, v, false);
        } else if (c->fmt == OUT_CSV) {
            printf("%.3f,%d", t_s, c->info[i].index);
            for (int k = 0; k < GPU_COL_COUNT; k++) isnan(v[k]) ? printf(",") : printf(",%.6g", v[k]);
            printf("\n");
        } else {
            printf("{\"t_s\":%.3f,\"gpu\":%d", t_s, c->info[i].index);
            for (int k = 0; k < GPU_COL_COUNT; k++)
                isnan(v[k]) ? printf(",\"%s\":null", gpu_col_names[k]) : printf(",\"%s\":%.6g", gpu_col_names[k], v[k]);
            printf("}\n");
        }
    }
    fflush(stdout);
    c->have_last = true;
    c->done++;
    if ((c->count > 0 && c->done >= c->count) || (c->end_ns && clock_now_ns() >= c->end_ns))
        event_base_loopbreak(c->base);
}

static void on_metrics(struct evhttp_request *req, void *arg) {
    gpu_ctx *c = arg;
    struct evbuffer *b = evbuffer_new();
    for (int k = 0; c->have_last && k < GPU_COL_COUNT; k++) {
        evbuffer_add_printf(b, "# TYPE dsperf_gpu_%s gauge\n", gpu_col_names[k]);
        for (int i = 0; i < c->n; i++) {
            if (isnan(c->last[i][k])) continue;   /* unknown: absent, never 0 */
            char name[200];
            size_t o = 0;
            for (const char *p = c->info[i].name; *p && o < sizeof name - 2; p++) {   /* label escapes */
                if (*p == '"' || *p == '\\') name[o++] = '\\';
                name[o++] = *p;
            }
            name[o] = 0;
            evbuffer_add_printf(b, "dsperf_gpu_%s{gpu=\"%d\",name=\"%s\"} %.6g\n", gpu_col_names[k], c->info[i].index,
                                name, c->last[i][k]);
        }
    }
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; version=0.0.4");
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
}

static void on_signal(evutil_socket_t fd, short ev, void *arg) {
    (void)fd; (void)ev;
    event_base_loopbreak(arg);
}

/* --record: the sampler's document (run/gpu_record.h) written to path. */
static int record_main(const char *path, const gpu_record_opts *o) {
    char err[256];
    json_t *doc;
    if (gpu_record(o, &doc, err, sizeof err) != DS_OK) {
        log_error("%s", err);
        return EXIT_USAGE;
    }
    char *text = json_dumps(doc, JSON_INDENT(1));
    json_decref(doc);
    int rc = text && !fileio_write_atomic(path, text, strlen(text)) ? EXIT_OK : EXIT_RUN_FAILED;
    if (rc) log_error("cannot write %s: %s", fileio_display(path), strerror(errno));
    else if (!fileio_is_stdout(path)) log_info("telemetry written to %s", path);
    free(text);
    return rc;
}

/* The selected indices (all: every GPU NVML sees); -1 when malformed. */
static int parse_gpus(const char *s, int count, int *idx) {
    bool all;
    int n = telemetry_parse_gpu_list(s, idx, GPU_MAX, &all);
    if (n < 0 || !all) return n;
    for (int i = 0; i < count && i < GPU_MAX; i++) idx[i] = i;
    return count < GPU_MAX ? count : GPU_MAX;
}

int cmd_gpu(int argc, char **argv) {
    static const struct option opts[] = {
        {"gpu-ids", required_argument, 0, 'g'}, {"interval", required_argument, 0, 'i'},
        {"duration", required_argument, 0, 'd'}, {"count", required_argument, 0, 'n'},
        {"csv", no_argument, 0, 'c'}, {"json", no_argument, 0, 'j'}, {"prom", required_argument, 0, 'p'},
        {"record", required_argument, 0, 'r'}, {"server-metrics", required_argument, 0, 'u'},
        {"host-metrics", no_argument, 0, 'H'}, {"server-pid", required_argument, 0, 'P'}, {"no-gpu", no_argument, 0, 'N'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *gpus = "all", *prom = NULL, *record = NULL, *url = NULL;
    bool host = false, no_gpu = false;
    long long pid = 0;
    int64_t interval_ns = 100 * NS_PER_MS, duration_ns = 0;
    long long count = 0;
    out_fmt fmt = OUT_TABLE;
    int c;
    optind = 1;
    opterr = 0;     /* cli_bad_option says it, in one line */
    cli_option_table("gpu", opts);   /* DSPERF_OPTION_TABLE: the table, for completion */
    while ((c = getopt_long(argc, argv, "g:i:d:n:cjp:h", opts, NULL)) != -1) {
        switch (c) {
        case 'g': gpus = optarg; break;
        case 'i':
            if (units_parse_duration_ns(optarg, &interval_ns) || interval_ns < 10 * NS_PER_MS) {
                log_error("--interval '%s': expected a duration of at least 10ms, e.g. 100ms", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'd':
            if (units_parse_duration_ns(optarg, &duration_ns) || duration_ns <= 0) {
                log_error("--duration '%s': expected a duration, e.g. 30s", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'n':
            if (units_parse_int(optarg, 1, 1000000000, &count)) {
                log_error("--count '%s': expected a positive integer", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'c': fmt = OUT_CSV; break;
        case 'j': fmt = OUT_JSON; break;
        case 'p': prom = optarg; break;
        case 'r': record = optarg; break;
        case 'u': url = optarg; break;
        case 'H': host = true; break;
        case 'N': no_gpu = true; break;
        case 'P':
            if (units_parse_int(optarg, 1, 1 << 30, &pid)) {
                log_error("--server-pid '%s': expected a process id", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'h': usage(stdout); return EXIT_OK;
        default: return cli_bad_option("gpu", opts, argc, argv, optind, optopt);
        }
    }
    if (optind < argc) {
        log_error("unexpected argument '%s'; see dsperf gpu --help", argv[optind]);
        return EXIT_USAGE;
    }
    if (record) {
        if (!duration_ns && !count) {
            log_error("--record needs --duration (or --count)");
            return EXIT_USAGE;
        }
        if (!duration_ns) duration_ns = count * interval_ns;
        if (cli_check_output("--record", record)) return EXIT_USAGE;   /* before the sampling, not after */
        gpu_record_opts ro;
        gpu_record_defaults(&ro);
        ro.tel.gpus = no_gpu ? NULL : gpus;
        ro.tel.interval_ns = interval_ns;
        ro.tel.server_metrics_url = url;
        ro.tel.host = host;
        ro.tel.server_pid = (int)pid;
        ro.duration_ns = duration_ns;
        return record_main(record, &ro);
    }
    if (url || host || pid || no_gpu) {
        log_error("--server-metrics, --host-metrics, --server-pid and --no-gpu go with --record");
        return EXIT_USAGE;
    }
    char host_addr[128] = "127.0.0.1";
    long long port = 0;
    if (prom) {
        const char *colon = strrchr(prom, ':');
        if (!colon || units_parse_int(colon + 1, 1, 65535, &port) || (size_t)(colon - prom) >= sizeof host_addr) {
            log_error("--prom '%s': expected [HOST]:PORT, e.g. :9400", prom);
            return EXIT_USAGE;
        }
        if (colon > prom) snprintf(host_addr, sizeof host_addr, "%.*s", (int)(colon - prom), prom);
        bindaddr_warn_exposed("the GPU exporter (--prom)", host_addr);
    }
    char err[256];
    int check_idx[GPU_MAX];
    bool check_all;
    if (!no_gpu && telemetry_parse_gpu_list(gpus, check_idx, GPU_MAX, &check_all) < 0) {
        log_error("--gpu-ids '%s': expected all or indices like 0,1 (the GPU type is --gpu in plan, sim, serve and diagnose)", gpus);
        return EXIT_USAGE;
    }
    gpu_ctx ctx = {.fmt = fmt, .count = count};
    if (!(ctx.nv = nvml_open(err, sizeof err))) {
        log_error("%s", err);
        return EXIT_RUN_FAILED;
    }
    int total = nvml_device_count(ctx.nv), idx[GPU_MAX];
    int n = parse_gpus(gpus, total, idx);
    if (n < 0) {
        log_error("--gpu-ids '%s': expected all or indices like 0,1", gpus);
        nvml_close(ctx.nv);
        return EXIT_USAGE;
    }
    int rc = EXIT_OK;
    for (int i = 0; i < n; i++) {
        if (idx[i] >= total) {
            log_error("--gpu-ids %d: no such GPU (NVML sees %d)", idx[i], total);
            rc = EXIT_USAGE;
            goto out;
        }
        nvml_gpu_info_get(ctx.nv, idx[i], &ctx.info[i]);
        if (!(ctx.g[i] = nvml_gpu_open(ctx.nv, idx[i]))) { log_error("GPU %d: no NVML handle", idx[i]); rc = EXIT_RUN_FAILED; goto out; }
        ctx.n++;
    }
    if (!n) { log_error("NVML sees no GPUs"); rc = EXIT_RUN_FAILED; goto out; }
    if (fmt == OUT_CSV) {
        printf("t_s,gpu");
        for (int k = 0; k < GPU_COL_COUNT; k++) printf(",%s", gpu_col_names[k]);
        printf("\n");
    } else if (fmt == OUT_TABLE) {
        for (int i = 0; i < ctx.n; i++)
            printf("# gpu %d: %s  %.0f MiB  GPM %s\n", ctx.info[i].index, ctx.info[i].name, ctx.info[i].mem_total_mib,
                   ctx.info[i].gpm_supported ? "yes" : "no (sm%/tc%/dram% not available)");
    }
    ctx.base = event_base_new();
    ctx.start_ns = clock_now_ns();
    ctx.end_ns = duration_ns ? ctx.start_ns + duration_ns : 0;
    struct evhttp *http = NULL;
    if (prom) {
        http = evhttp_new(ctx.base);
        if (!http || !evhttp_bind_socket_with_handle(http, host_addr, (ev_uint16_t)port)) {
            log_error("--prom: cannot listen on %s:%lld (in use?)", host_addr, port);
            rc = EXIT_RUN_FAILED;
            goto loop_out;
        }
        evhttp_set_cb(http, "/metrics", on_metrics, &ctx);
        log_info("Prometheus metrics on http://%s:%lld/metrics", host_addr, port);
    }
    struct timeval tv = {(time_t)(interval_ns / NS_PER_S), (suseconds_t)(interval_ns % NS_PER_S / 1000)};
    struct event *tick = event_new(ctx.base, -1, EV_PERSIST, on_tick, &ctx);
    struct event *sig = evsignal_new(ctx.base, SIGINT, on_signal, ctx.base);
    struct event *sigt = evsignal_new(ctx.base, SIGTERM, on_signal, ctx.base);
    event_add(sig, NULL);
    event_add(sigt, NULL);
    on_tick(-1, 0, &ctx);   /* first row now, not after one interval */
    if (!((count > 0 && ctx.done >= count) || (ctx.end_ns && clock_now_ns() >= ctx.end_ns))) {
        event_add(tick, &tv);
        event_base_dispatch(ctx.base);
    }
    event_free(tick);
    event_free(sig);
    event_free(sigt);
loop_out:
    if (http) evhttp_free(http);
    event_base_free(ctx.base);
out:
    for (int i = 0; i < ctx.n; i++) nvml_gpu_close(ctx.g[i]);
    nvml_close(ctx.nv);
    return rc;
}
