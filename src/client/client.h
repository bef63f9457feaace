/* client — the streaming HTTP client: many concurrent OpenAI-style streams over libcurl's multi
 * interface driven by the socket-action API on one epoll loop (scales to thousands of streams).
 * Each transfer fills one record in a recset: send time (libcurl's pre-request hook, just before
 * the request bytes are written), the arrival of every content chunk, usage, and the outcome
 * class. The load runner decides *when* to submit; the client only sends and measures. */
#ifndef DSP_CLIENT_H
#define DSP_CLIENT_H
#include "client/openai.h"
#include "metrics/record.h"
#include "dataset/dataset.h"
#include <stdint.h>
#include <stdbool.h>
#include <jansson.h>

typedef struct {
    const char *base_url;        /* "http://127.0.0.1:8000" (a trailing /v1 is accepted) */
    openai_api api;
    const char *model;           /* resolved model name */
    const char *const *headers;  /* extra "Name: value" headers, NULL-terminated, or NULL */
    const char *api_key;         /* sent as Authorization: Bearer (NULL: none) */
    int64_t timeout_ns;          /* whole-request timeout (0 none) */
    bool insecure;               /* skip TLS verification */
    bool ignore_eos;
    bool include_usage;          /* stream_options.include_usage */
    size_t max_connections;      /* connection cache size (>= peak concurrency) */
    token_counter counter;       /* counts tokens in generated text */
    bool keep_text;              /* keep each response's generated text in its record (r->text):
                                  * a multi-turn session's next turn sends it back */
} client_opts;

typedef struct client client;
/* Called when a transfer has finished (any outcome); the record at rec_index is complete. */
typedef void (*client_done_fn)(void *ctx, size_t rec_index);

/* NULL with err on failure (bad URL, out of memory, epoll). */
client *client_new(const client_opts *o, recset *recs, client_done_fn done, void *ctx, char *err, size_t errlen);
void client_free(client *c);
/* Starts the request for recs->v[rec_index] now (its sched_ns already set). 0 ok, -1 OOM. */
int client_submit(client *c, size_t rec_index, const dataset_item *item);
/* Hands over a request to be sent at send_at_ns (absolute, monotonic), at most
 * client_arm_lead_ns ahead: everything but the send is done now (the request bytes built, a
 * connection taken or opened), and at the instant the sends of every request due then go out back
 * to back, each stamped as it is sent (send_ns), so a burst scheduled at one instant leaves within
 * the time its sends take. A time already passed is client_submit. 0 ok, -1 OOM. */
int client_submit_at(client *c, size_t rec_index, const dataset_item *item, int64_t send_at_ns);
/* How far ahead client_submit_at takes requests: 0 when this client only sends what is due (the
 * libcurl path; DSPERF_CLIENT_ARM_US=0); 100 ms by default (DSPERF_CLIENT_ARM_US sets it, in µs). */
int64_t client_arm_lead_ns(const client *c);
/* Requests handed over with client_submit_at whose time has not come (included in in_flight). */
size_t client_armed(const client *c);
/* Waits for network events until wake_at_ns (absolute, monotonic) or until at least one transfer
 * finished, whichever is first; processes them. Returns the number of transfers that finished. */
int client_poll(client *c, int64_t wake_at_ns);
size_t client_in_flight(const client *c);
/* Ends every in-flight transfer now, marking its record with outcome (e.g. REC_ERR_CANCELLED). */
void client_abort_all(client *c, rec_outcome outcome);

/* Which path reads this client's responses: "own" (plain HTTP/1.1, h1.h: kernel receive stamps,
 * batched and gathered reads) or "libcurl" (TLS, proxies, ...: stamped when libcurl hands the
 * bytes over); and why libcurl (NULL for the own path). */
const char *client_read_path(const client *c);
const char *client_read_path_why(const client *c);
/* The same decided from the options alone, before a client exists: NULL for the own path, else why
 * libcurl (what a run's results say, "client": {"read_path", "read_path_why"}). */
const char *client_read_path_of(const client_opts *o);

/* What the client measures of the host once per process (the own path: from how many ready
 * sockets a batched read pays, rxbatch.h; ~0.5 ms, the first time also the kernel's switching on
 * of receive stamps), done now: a run calls it before it starts counting its CPU, so the one-time
 * cost is not spread over the run's chunks. Otherwise the first client does it. */
void client_prepare_host(const client_opts *o);

/* Pre-flight: GET {base}/v1/models. On success *model_out (malloc'd) is the first model id.
 * Returns 0; CLIENT_UNREACHABLE when nothing answered (refused, timed out, no route: the endpoint
 * may just be down); or -1 when something answered wrongly (not an OpenAI server, credentials).
 * Both failures put a one-line diagnosis in err. */
#define CLIENT_UNREACHABLE (-2)
int client_preflight(const client_opts *o, char **model_out, char ***all_models, char *err, size_t errlen);

/* GET {base}{path} (with the run's headers and credentials): the JSON object it answers with, or
 * NULL when it does not answer 200 with a JSON object (a server without that endpoint). For what a
 * server says about itself at preflight (/v1/models, llama.cpp's /props). */
json_t *client_get_json(const client_opts *o, const char *path);

/* Joins base URL and path, tolerating a trailing "/" or "/v1" on the base. malloc'd. */
char *client_url(const char *base_url, const char *path);
#endif
