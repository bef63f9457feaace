/* telemetry — the sampler thread and the results JSON (see telemetry.h). One thread ticks on
 * absolute deadlines of the monotonic clock; each stream (a GPU, the host, the server) stamps
 * its own rows with clock_now_ns() at the moment it was read, so rows line up with request
 * records exactly, whatever a slow NVML call or scrape did to the tick. */
#include "telemetry/telemetry.h"
#include "common/clock.h"
#include "common/log.h"
#include "telemetry/host.h"
#include "telemetry/nvml.h"
#include "telemetry/series.h"
#include "telemetry/engine_metrics.h"
#include "common/redact.h"
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define MAX_GPUS 64
#define MAX_ROWS 360000          /* 10 h at 100 ms; beyond that rows are counted as dropped */
#define EM_SCRAPE_MS EM_COL_COUNT
#define MAX_PROCS_SEEN 64

/* Server series columns: the common series plus how long each scrape took. */
static const char *em_names_ext[EM_COL_COUNT + 1];
static void em_names_init(void) {
    for (int i = 0; i < EM_COL_COUNT; i++) em_names_ext[i] = em_col_names[i];
    em_names_ext[EM_SCRAPE_MS] = "scrape_ms";
}

typedef struct {
    nvml_gpu *g;
    nvml_gpu_info info;
    series s;
    nvml_process seen[MAX_PROCS_SEEN];   /* every compute process seen during the run, max memory */
    int n_seen;
    bool lost_noted;                     /* the warning about a lost GPU was written */
} gpu_stream;

struct telemetry {
    int64_t interval_ns, scrape_timeout_ns;
    int server_pid;
    char *url;
    bool host;
    pthread_t thread;
    bool started, stopped;
    pthread_mutex_t mu;          /* guards series and stop */
    pthread_cond_t cv;
    bool stop;
    nvml *nv;
    char warning[256];
    int n_gpus;
    gpu_stream gpus[MAX_GPUS];
    host_sampler *hs;
    series host_s;
    json_t *numa;
    em_scraper *scr;
    em_engine engine;
    em_reading prev;
    bool have_prev;
    series em_s;
    long scrapes, scrape_errors;
    char scrape_error[256];
    long ticks;
    int64_t started_ns, stopped_ns, cpu_ns, last_scrape_ns;
};

void telemetry_default_opts(telemetry_opts *o) {
    memset(o, 0, sizeof *o);
    o->interval_ns = 100 * NS_PER_MS;
    o->scrape_timeout_ns = 500 * NS_PER_MS;
}

const char *telemetry_warning(const telemetry *t) { return t->warning[0] ? t->warning : NULL; }

int telemetry_parse_gpu_list(const char *s, int *idx, int max, bool *all) {
    *all = !strcmp(s, "all");
    if (*all) return 0;
    int n = 0;
    const char *p = s;
    while (*p) {
        char *e;
        long v = strtol(p, &e, 10);
        if (e == p || v < 0 || v >= MAX_GPUS || n >= max) return -1;
        for (int i = 0; i < n; i++)
            if (idx[i] == v) return -1;
        idx[n++] = (int)v;
        p = e;
        if (*p == ',') p++;
        else if (*p) return -1;
    }
    return n ? n : -1;
}

static void record_processes(gpu_stream *gs) {
    nvml_process p[64];
    int k = nvml_gpu_processes(gs->g, p, 64);
    for (int i = 0; i < k; i++) {
        int j = 0;
        while (j < gs->n_seen && gs->seen[j].pid != p[i].pid) j++;
        if (j == gs->n_seen) {
            if (gs->n_seen == MAX_PROCS_SEEN) continue;
            gs->seen[gs->n_seen++] = p[i];
        } else if (p[i].used_mib > gs->seen[j].used_mib || isnan(gs->seen[j].used_mib)) {
            gs->seen[j].used_mib = p[i].used_mib;
        }
    }
}

/* One scrape. Everything the JSON readers see is updated under the lock, so the series can be
 * read while the thread runs (live progress). */
static void scrape_once(telemetry *t) {
    double row[EM_COL_COUNT + 1];
    for (int i = 0; i <= EM_COL_COUNT; i++) row[i] = NAN;
    const char *text;
    size_t len;
    char err[256];
    int64_t t0 = clock_now_ns();
    t->last_scrape_ns = t0;              /* only this thread scrapes */
    int rc = em_scrape(t->scr, &text, &len, err, sizeof err);
    int64_t t1 = clock_now_ns(), tm = t0 + (t1 - t0) / 2;   /* the server state is of mid-request */
    em_engine engine = t->engine;
    if (!rc) {
        prom_doc doc;
        if (prom_parse_flags(text, len, &doc, PROM_SKIP_BUCKETS) == 0) {
            if (engine == EM_ENGINE_UNKNOWN) engine = em_detect_engine(&doc);
            em_reading cur;
            em_read(&doc, engine, tm, &cur);
            em_derive(t->have_prev ? &t->prev : NULL, &cur, row);
            t->prev = cur;               /* only this thread touches prev */
            t->have_prev = true;
            prom_doc_free(&doc);
        }
        row[EM_SCRAPE_MS] = (double)(t1 - t0) / 1e6;
    }
    pthread_mutex_lock(&t->mu);
    t->scrapes++;
    t->engine = engine;
    if (rc) {
        t->scrape_errors++;
        snprintf(t->scrape_error, sizeof t->scrape_error, "%s", err);
    }
    series_append(&t->em_s, tm, row);
    pthread_mutex_unlock(&t->mu);
}

static void tick(telemetry *t) {
    for (int i = 0; i < t->n_gpus; i++) {
        gpu_stream *gs = &t->gpus[i];
        double row[GPU_COL_COUNT];
        int64_t now = clock_now_ns();
        nvml_gpu_sample(gs->g, now, row);
        pthread_mutex_lock(&t->mu);
        series_append(&gs->s, now, row);
        record_processes(gs);
        if (nvml_gpu_lost(gs->g) && !gs->lost_noted) {
            gs->lost_noted = true;
            size_t l = strlen(t->warning);
            snprintf(t->warning + l, sizeof t->warning - l, "%sGPU %d was lost (NVML: GPU is lost) %.1f s into the run; its samples from then on are null",
                     l ? "; " : "", gs->info.index, (double)(now - t->started_ns) / 1e9);
        }
        pthread_mutex_unlock(&t->mu);
    }
    if (t->hs) {
        double row[HOST_COL_COUNT];
        int64_t now = clock_now_ns();
        host_sample(t->hs, now, row);
        pthread_mutex_lock(&t->mu);
        series_append(&t->host_s, now, row);
        pthread_mutex_unlock(&t->mu);
    }
    if (t->scr) scrape_once(t);
    pthread_mutex_lock(&t->mu);
    t->ticks++;
    pthread_cond_broadcast(&t->cv);   /* telemetry_start waits for the first */
    pthread_mutex_unlock(&t->mu);
}

static void *run(void *arg) {
    telemetry *t = arg;
    int64_t next = clock_now_ns();
    for (;;) {
        pthread_mutex_lock(&t->mu);
        bool stop = t->stop;
        pthread_mutex_unlock(&t->mu);
        if (stop) {
            /* a last reading of the server's counters, begun after the run ended, so their
             * increase covers the whole run (the first was taken before it started). A tick's
             * reading begun before the end may predate the last requests' counting (llama-server
             * counts a request's tokens after sending its last chunk, and answered one such
             * scrape without them: 80 of 96 tokens), so it does not stand in for this one; when
             * it is that recent, this one waits a tenth of an interval after it (two readings a
             * fraction of a millisecond apart make a rate of noise and share a time) */
            if (t->scr) {
                int64_t wait = t->last_scrape_ns + t->interval_ns / 10 - clock_now_ns();
                if (wait > 0) clock_sleep_ns(wait);
                scrape_once(t);
            }
            break;
        }
        tick(t);
        next += t->interval_ns;
        int64_t now = clock_now_ns();
        if (next < now) next = now + t->interval_ns / 2;   /* fell behind (slow scrape): skip, don't burst */
        struct timespec ts = {next / NS_PER_S, next % NS_PER_S};
        pthread_mutex_lock(&t->mu);
        while (!t->stop && clock_now_ns() < next)
            if (pthread_cond_timedwait(&t->cv, &t->mu, &ts) == ETIMEDOUT) break;
        pthread_mutex_unlock(&t->mu);
    }
    struct timespec cpu;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    pthread_mutex_lock(&t->mu);
    t->cpu_ns = clock_ts_ns(cpu);
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

static int open_gpus(telemetry *t, const char *spec, char *err, size_t errlen) {
    int idx[MAX_GPUS], n;
    bool all;
    if ((n = telemetry_parse_gpu_list(spec, idx, MAX_GPUS, &all)) < 0) {
        snprintf(err, errlen, "--gpu-ids '%s': expected all or indices like 0,1", spec);
        return -1;
    }
    char why[200];
    t->nv = nvml_open(why, sizeof why);
    if (!t->nv) {
        snprintf(t->warning, sizeof t->warning, "%s: GPU telemetry off", why);
        return 0;
    }
    int count = nvml_device_count(t->nv);
    if (all) {
        n = count < MAX_GPUS ? count : MAX_GPUS;
        for (int i = 0; i < n; i++) idx[i] = i;
        if (!n) snprintf(t->warning, sizeof t->warning, "NVML found no GPUs: GPU telemetry off");
    }
    for (int i = 0; i < n; i++) {
        if (idx[i] >= count) {
            snprintf(err, errlen, "--gpu-ids %d: no such GPU (NVML sees %d)", idx[i], count);
            return -1;
        }
        gpu_stream *gs = &t->gpus[t->n_gpus];
        nvml_gpu_info_get(t->nv, idx[i], &gs->info);
        if (!(gs->g = nvml_gpu_open(t->nv, idx[i]))) {
            snprintf(err, errlen, "GPU %d: NVML handle unavailable", idx[i]);
            return -1;
        }
        series_init(&gs->s, GPU_COL_COUNT, gpu_col_names, MAX_ROWS);
        t->n_gpus++;
    }
    return 0;
}

static json_t *numa_now(const telemetry *t) {
    const char *bus[MAX_GPUS];
    for (int i = 0; i < t->n_gpus; i++) bus[i] = t->gpus[i].info.bus_id;
    return host_numa_json("", "/proc", t->server_pid, bus, t->n_gpus);
}

telemetry *telemetry_start(const telemetry_opts *o, char *err, size_t errlen) {
    if (o->interval_ns < 10 * NS_PER_MS) {
        snprintf(err, errlen, "telemetry interval must be at least 10ms");
        return NULL;
    }
    const char *url = o->server_metrics_url;
    if (url && strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) {
        snprintf(err, errlen, "--server-metrics '%s': expected an http:// or https:// URL", url);
        return NULL;
    }
    if (o->server_pid > 0) {
        char path[64];
        struct stat st;
        snprintf(path, sizeof path, "/proc/%d", o->server_pid);
        if (stat(path, &st)) {
            snprintf(err, errlen, "--server-pid %d: no such process", o->server_pid);
            return NULL;
        }
    }
    telemetry *t = calloc(1, sizeof *t);
    if (!t) { snprintf(err, errlen, "out of memory"); return NULL; }
    t->interval_ns = o->interval_ns;
    t->scrape_timeout_ns = o->scrape_timeout_ns > 0 ? o->scrape_timeout_ns : 500 * NS_PER_MS;
    t->server_pid = o->server_pid;
    t->host = o->host || o->server_pid > 0;
    pthread_mutex_init(&t->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cv, &ca);
    pthread_condattr_destroy(&ca);
    series_init(&t->host_s, HOST_COL_COUNT, host_col_names, MAX_ROWS);
    static pthread_once_t names_once = PTHREAD_ONCE_INIT;
    pthread_once(&names_once, em_names_init);
    series_init(&t->em_s, EM_COL_COUNT + 1, em_names_ext, MAX_ROWS);
    if (o->gpus && open_gpus(t, o->gpus, err, errlen)) goto fail;
    if (t->warning[0]) log_warn("%s", t->warning);
    if (t->host) {
        if (!(t->hs = host_sampler_new("/proc", o->server_pid))) { snprintf(err, errlen, "out of memory"); goto fail; }
        t->numa = numa_now(t);
    }
    if (url) {
        if (!(t->url = strdup(url)) || !(t->scr = em_scraper_new(url, t->scrape_timeout_ns))) {
            snprintf(err, errlen, "cannot set up the scraper for %s", url);
            goto fail;
        }
    }
    t->started_ns = clock_now_ns();
    if (pthread_create(&t->thread, NULL, run, t)) {
        snprintf(err, errlen, "cannot start the telemetry thread");
        goto fail;
    }
    t->started = true;
    /* the first samples are the run's baseline: taken before the caller's first request, so a
     * counter's increase over the series is the run's (bounded: a server that does not answer
     * its /metrics within 5 s does not hold the run back) */
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);   /* the condition variable's clock */
    until.tv_sec += 5;
    pthread_mutex_lock(&t->mu);
    while (t->ticks < 1)
        if (pthread_cond_timedwait(&t->cv, &t->mu, &until) == ETIMEDOUT) break;
    pthread_mutex_unlock(&t->mu);
    return t;
fail:
    telemetry_free(t);
    return NULL;
}

void telemetry_stop(telemetry *t) {
    if (!t || !t->started || t->stopped) return;
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
    t->stopped = true;
    t->stopped_ns = clock_now_ns();
    if (t->host && t->server_pid > 0) {      /* pages are placed by now: measure again */
        json_decref(t->numa);
        t->numa = numa_now(t);
    }
}

void telemetry_free(telemetry *t) {
    if (!t) return;
    telemetry_stop(t);
    for (int i = 0; i < t->n_gpus; i++) {
        nvml_gpu_close(t->gpus[i].g);
        series_free(&t->gpus[i].s);
    }
    nvml_close(t->nv);
    host_sampler_free(t->hs);
    series_free(&t->host_s);
    series_free(&t->em_s);
    em_scraper_free(t->scr);
    json_decref(t->numa);
    free(t->url);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t);
}

static json_t *gpu_json(const gpu_stream *gs, int64_t t0_ns) {
    const nvml_gpu_info *in = &gs->info;
    json_t *procs = json_array();
    for (int i = 0; i < gs->n_seen; i++)
        json_array_append_new(procs, json_pack("{s:i,s:o}", "pid", (int)gs->seen[i].pid, "used_mib", json_num(gs->seen[i].used_mib)));
    uint64_t ints = 1ULL << GPU_CLOCK_EVENT_REASONS | 1ULL << GPU_THROTTLED | 1ULL << GPU_N_PROCESSES |
                    1ULL << GPU_PCIE_LINK_GEN | 1ULL << GPU_PCIE_LINK_WIDTH;
    json_t *g = json_pack("{s:i,s:s,s:s,s:s,s:b,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "index", in->index, "name", in->name,
                          "uuid", in->uuid, "bus_id", in->bus_id, "gpm", in->gpm_supported,
                          "mem_total_mib", json_num(in->mem_total_mib), "sm_clock_max_mhz", json_num(in->sm_clock_max_mhz),
                          "mem_clock_max_mhz", json_num(in->mem_clock_max_mhz), "power_limit_w", json_num(in->power_limit_w),
                          "processes", procs, "dropped_rows", json_integer((json_int_t)gs->s.dropped),
                          "series", series_json(&gs->s, t0_ns, ints));
    /* the link's capacity (what diagnose compares PCIe traffic with), when NVML says */
    if (in->pcie_gen_max > 0 || in->pcie_gen_curr > 0) {
        double cap = nvml_pcie_link_mb_s(in->pcie_gen_max, in->pcie_width_max);
        json_object_set_new(g, "pcie", json_pack("{s:o,s:o,s:o,s:o,s:o}",
            "gen_max", in->pcie_gen_max > 0 ? json_integer(in->pcie_gen_max) : json_null(),
            "width_max", in->pcie_width_max > 0 ? json_integer(in->pcie_width_max) : json_null(),
            "gen_at_start", in->pcie_gen_curr > 0 ? json_integer(in->pcie_gen_curr) : json_null(),
            "width_at_start", in->pcie_width_curr > 0 ? json_integer(in->pcie_width_curr) : json_null(),
            "link_mb_s_per_direction", json_num(cap)));
    }
    return g;
}

json_t *telemetry_series_json(const telemetry *t, int64_t t0_ns) {
    telemetry *m = (telemetry *)t;          /* the lock is not part of the logical state */
    pthread_mutex_lock(&m->mu);
    int64_t end = t->stopped ? t->stopped_ns : clock_now_ns();
    double wall_s = (double)(end - t->started_ns) / 1e9;
    json_t *o = json_object();
    json_object_set_new(o, "interval_s", json_real((double)t->interval_ns / 1e9));
    json_object_set_new(o, "sampler", json_pack("{s:i,s:o,s:o,s:o}", "ticks", (json_int_t)t->ticks,
        "wall_s", json_real(wall_s), "cpu_s", t->stopped ? json_real((double)t->cpu_ns / 1e9) : json_null(),
        "cpu_pct_of_core", t->stopped && wall_s > 0 ? json_real(100.0 * (double)t->cpu_ns / 1e9 / wall_s) : json_null()));
    if (t->warning[0]) json_object_set_new(o, "warning", json_string(t->warning));
    if (t->nv || t->n_gpus) {
        char drv[80];
        /* which driver the GPUs ran on: a run's identity in the results history */
        if (t->nv && nvml_driver_version(t->nv, drv, sizeof drv) == 0) json_object_set_new(o, "driver_version", json_string(drv));
        json_t *g = json_array();
        for (int i = 0; i < t->n_gpus; i++) json_array_append_new(g, gpu_json(&t->gpus[i], t0_ns));
        json_object_set_new(o, "gpu", g);
    }
    if (t->hs) {
        json_t *h = json_object();
        json_object_set_new(h, "numa", t->numa ? json_incref(t->numa) : json_null());
        json_object_set_new(h, "series", series_json(&t->host_s, t0_ns, 0));
        json_object_set_new(o, "host", h);
    }
    if (t->scr) {
        json_t *s = json_pack("{s:o,s:s,s:i,s:i,s:o,s:o}", "url", redact_json(t->url), "source", em_engine_name(t->engine),
            "scrapes", (json_int_t)t->scrapes, "scrape_errors", (json_int_t)t->scrape_errors,
            "last_error", t->scrape_error[0] ? json_string(t->scrape_error) : json_null(),
            "series", series_json(&t->em_s, t0_ns, 0));
        json_object_set_new(o, "server", s);
    }
    pthread_mutex_unlock(&m->mu);
    return o;
}

/* Energy over the window: the energy counter's increase between the first and last rows that
 * read it inside the window (it is read once a second), plus the trapezoid integral of
 * instantaneous power over the edges before and after those rows. Without the counter, the
 * power integral over the whole window. NaN if neither is known. */
static double power_integral(const series *s, int64_t from, int64_t to) {
    double sum = 0;
    size_t prev = (size_t)-1;
    for (size_t i = 0; i < s->n; i++) {
        if (s->t_ns[i] < from || s->t_ns[i] > to) continue;
        if (prev != (size_t)-1) {
            double p0 = series_at(s, prev, GPU_POWER_W), p1 = series_at(s, i, GPU_POWER_W);
            if (!isnan(p0) && !isnan(p1)) sum += (p0 + p1) / 2 * (double)(s->t_ns[i] - s->t_ns[prev]) / 1e9;
        }
        prev = i;
    }
    return sum;
}

static double window_energy_j(const series *s, int64_t from, int64_t to) {
    size_t first = (size_t)-1, last = (size_t)-1, n_power = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (s->t_ns[i] < from || s->t_ns[i] > to) continue;
        if (!isnan(series_at(s, i, GPU_POWER_W))) n_power++;
        if (isnan(series_at(s, i, GPU_ENERGY_J))) continue;
        if (first == (size_t)-1) first = i;
        last = i;
    }
    if (first == (size_t)-1) return n_power >= 2 ? power_integral(s, from, to) : NAN;
    double e = series_at(s, last, GPU_ENERGY_J) - series_at(s, first, GPU_ENERGY_J);
    return e + power_integral(s, from, s->t_ns[first]) + power_integral(s, s->t_ns[last], to);
}

json_t *telemetry_summary_json(const telemetry *t, int64_t from_ns, int64_t to_ns, double output_tokens) {
    telemetry *m = (telemetry *)t;
    pthread_mutex_lock(&m->mu);
    json_t *o = json_object();
    json_object_set_new(o, "window_s", json_real((double)(to_ns - from_ns) / 1e9));
    if (t->n_gpus) {
        json_t *arr = json_array();
        static const gpu_col cols[] = {GPU_UTIL_GPU_PCT, GPU_SM_UTIL_PCT, GPU_SM_OCCUPANCY_PCT, GPU_TENSOR_UTIL_PCT,
                                       GPU_DRAM_BW_UTIL_PCT, GPU_POWER_W, GPU_MEM_USED_MIB, GPU_SM_CLOCK_MHZ};
        double sum_mean[GPU_COL_COUNT] = {0}, energy = 0;
        int n_mean[GPU_COL_COUNT] = {0};
        bool energy_known = true;
        for (int i = 0; i < t->n_gpus; i++) {
            const series *s = &t->gpus[i].s;
            json_t *g = json_pack("{s:i}", "index", t->gpus[i].info.index);
            for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++) {
                series_stat st = series_window(s, cols[k], from_ns, to_ns);
                json_object_set_new(g, gpu_col_names[cols[k]], series_stat_json(st));
                if (st.n) { sum_mean[cols[k]] += st.mean; n_mean[cols[k]]++; }
            }
            series_stat th = series_window(s, GPU_THROTTLED, from_ns, to_ns);
            json_object_set_new(g, "throttled_frac", th.n ? json_real(th.mean) : json_null());
            double e = window_energy_j(s, from_ns, to_ns);
            json_object_set_new(g, "energy_j", json_num(e));
            if (isnan(e)) energy_known = false; else energy += e;
            json_array_append_new(arr, g);
        }
        json_object_set_new(o, "gpus", arr);
        static const gpu_col avg[] = {GPU_UTIL_GPU_PCT, GPU_SM_UTIL_PCT, GPU_TENSOR_UTIL_PCT, GPU_DRAM_BW_UTIL_PCT};
        for (size_t k = 0; k < sizeof avg / sizeof avg[0]; k++) {
            char key[64];
            snprintf(key, sizeof key, "%s_mean", gpu_col_names[avg[k]]);
            json_object_set_new(o, key, n_mean[avg[k]] ? json_real(sum_mean[avg[k]] / n_mean[avg[k]]) : json_null());
        }
        json_object_set_new(o, "power_w_mean_total", n_mean[GPU_POWER_W] ? json_real(sum_mean[GPU_POWER_W]) : json_null());
        json_object_set_new(o, "energy_j", energy_known ? json_real(energy) : json_null());
        json_object_set_new(o, "energy_j_per_output_token",
                            energy_known && output_tokens > 0 ? json_real(energy / output_tokens) : json_null());
    }
    if (t->scr) {
        const series *s = &t->em_s;
        series_stat kv = series_window(s, EM_KV_USAGE_PCT, from_ns, to_ns);
        series_stat pre = series_window(s, EM_PREEMPTIONS, from_ns, to_ns);
        series_stat run = series_window(s, EM_RUNNING, from_ns, to_ns);
        series_stat wait = series_window(s, EM_WAITING, from_ns, to_ns);
        series_stat hits = series_window(s, EM_PREFIX_HITS, from_ns, to_ns);
        series_stat q = series_window(s, EM_PREFIX_QUERIES, from_ns, to_ns);
        series_stat rate = series_window(s, EM_PREFIX_HIT_RATE_PCT, from_ns, to_ns);
        series_stat prompt = series_window(s, EM_PROMPT_TOKENS, from_ns, to_ns);
        series_stat kvcap = series_window(s, EM_KV_CAPACITY_TOKENS, from_ns, to_ns);
        double hr = q.n && q.sum > 0 ? 100.0 * hits.sum / q.sum : rate.n ? rate.mean : NAN;
        json_object_set_new(o, "server", json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "source", em_engine_name(t->engine),
            "prompt_tokens", prompt.n ? json_real(prompt.sum) : json_null(),
            "kv_capacity_tokens", kvcap.n ? json_real(kvcap.max) : json_null(),
            "kv_usage_pct_max", kv.n ? json_real(kv.max) : json_null(),
            "kv_usage_pct_mean", kv.n ? json_real(kv.mean) : json_null(),
            "preemptions", pre.n ? json_real(pre.sum) : json_null(),
            "running_max", run.n ? json_real(run.max) : json_null(),
            "waiting_max", wait.n ? json_real(wait.max) : json_null(),
            "prefix_cache_hit_rate_pct", json_num(hr)));
    }
    if (t->hs) {
        json_object_set_new(o, "host", json_pack("{s:o,s:o,s:o,s:o,s:o}",
            "cpu_util_pct", series_stat_json(series_window(&t->host_s, HOST_CPU_UTIL_PCT, from_ns, to_ns)),
            "server_cpu_pct", series_stat_json(series_window(&t->host_s, HOST_SERVER_CPU_PCT, from_ns, to_ns)),
            "steal_pct", series_stat_json(series_window(&t->host_s, HOST_STEAL_PCT, from_ns, to_ns)),
            "server_runq_pct", series_stat_json(series_window(&t->host_s, HOST_SERVER_RUNQ_PCT, from_ns, to_ns)),
            "cross_numa", t->numa && json_object_get(t->numa, "cross_numa") ? json_incref(json_object_get(t->numa, "cross_numa")) : json_null()));
    }
    pthread_mutex_unlock(&m->mu);
    return o;
}
