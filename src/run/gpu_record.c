/* run/gpu_record — `dsperf gpu --record`'s sampling (see gpu_record.h). A signal ends the sampling
 * early and the document still covers what was sampled: a recording cut short is kept, not lost. */
#include "run/gpu_record.h"
#include "common/clock.h"
#include "common/stop.h"
#include <signal.h>

void gpu_record_defaults(gpu_record_opts *o) {
    telemetry_default_opts(&o->tel);
    o->tel.gpus = "all";
    o->duration_ns = 0;
}

static ds_stop_flag record_stop;
static void on_record_signal(int sig) { (void)sig; record_stop = 1; }

ds_result gpu_record(const gpu_record_opts *o, json_t **doc, char *err, size_t errlen) {
    *doc = NULL;
    int64_t t0 = clock_now_ns();
    telemetry *t = telemetry_start(&o->tel, err, errlen);
    if (!t) return DS_EINVAL;
    signal(SIGINT, on_record_signal);
    signal(SIGTERM, on_record_signal);
    int64_t end = t0 + o->duration_ns;
    while (!record_stop && clock_now_ns() < end) clock_sleep_ns(20 * NS_PER_MS);
    int64_t t1 = clock_now_ns();
    telemetry_stop(t);
    *doc = json_pack("{s:o,s:o}", "telemetry", telemetry_series_json(t, t0), "summary", telemetry_summary_json(t, t0, t1, 0));
    telemetry_free(t);
    return DS_OK;
}
