/* run/serve — `dsperf serve` from options to a running server: the selected engine built from its
 * key/value options (one per event loop; adding an engine is one entry in serve.c's table), the
 * OpenAI-compatible server started on them, run until it stops (a signal, --duration,
 * --exit-after), and torn down. The CLI parses the server's own options into server_params and
 * hands the rest over as key/value pairs. */
#ifndef DSP_RUN_SERVE_H
#define DSP_RUN_SERVE_H
#include "common/result.h"
#include "server/server.h"
#include <stddef.h>

typedef struct { const char *key, *value; } run_serve_kv;

typedef struct {
    server_params server;        /* the server's options (server_default_params) */
    const char *engine;          /* "fixed" (default) or "sim" */
    const run_serve_kv *engine_opts;   /* every option the server does not take: the engine's */
    int n_engine_opts;
    /* called once the server listens (the CLI prints the one line clients wait for) */
    void (*on_listening)(void *ctx, const char *host, int port);
    void *ctx;
} run_serve_opts;

void run_serve_defaults(run_serve_opts *o);
/* Builds the engines and serves until the server stops. DS_OK; DS_EINVAL (an unknown engine, an
 * unknown engine option or a bad value), DS_ERUN (the server could not start: the port, the
 * address), DS_ENOMEM, with one line in err. Frees o->server.models_meta_json. */
ds_result run_serve(run_serve_opts *o, char *err, size_t errlen);

/* The engines, for --help: their names and option texts (i < run_serve_engine_count()). */
size_t run_serve_engine_count(void);
const char *run_serve_engine_name(size_t i);
const char *run_serve_engine_help(size_t i);
#endif
