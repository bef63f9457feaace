/* h1 — the client's own read path: streamed completions over plain HTTP/1.1 (and HTTP/1.0
 * servers) on its own sockets, without libcurl.
 *
 * Why its own: the stamps a measurement rests on (the kernel's receive time of every chunk, the
 * moment the request bytes leave) and the reads it batches must come from the reads themselves.
 * Over libcurl they could only be had by replacing recv() and poll() for the whole process (the
 * executable's definitions come first in the dynamic lookup: libevent in `serve`, Open MPI and
 * SQLite saw them too) and by relying on libcurl 7.88's read loop, which an upgrade could change
 * silently. Here every read is the client's own recvmsg (one at a time, or a wake-up's sockets in
 * one io_uring call, rxbatch.h) with its SO_TIMESTAMPNS stamp, and no libc symbol is replaced.
 *
 * What it speaks: a POST with Content-Length; a status line and headers (1xx skipped); a body
 * chunked, with Content-Length, or up to the close (HTTP/1.0); keep-alive reuse of idle
 * connections (a reused connection the server closed meanwhile is retried once on a new one, as
 * libcurl does). The outcome of every transfer is classified exactly as the libcurl path does,
 * with libcurl's own words for the transport errors (curl_easy_strerror of the matching code), so
 * records and error classes are the same whichever path ran.
 *
 * What it does not: TLS, proxies, URLs with credentials: client.c gives those to libcurl
 * (client_read_path says which path a URL gets). */
#ifndef DSP_H1_H
#define DSP_H1_H
#include "client/client.h"

typedef struct h1 h1;

/* NULL when this URL is not for the own path (why_not says why: "https", "proxy", ...). */
const char *h1_why_not(const char *url);
/* NULL with err on failure (the host does not resolve, out of memory). */
h1 *h1_new(const client_opts *o, const char *url, recset *recs, client_done_fn done, void *ctx, char *err, size_t errlen);
void h1_free(h1 *c);
int h1_submit(h1 *c, size_t rec_index, const dataset_item *item);
/* client_submit_at (client.h): prepared now, sent at at_ns. */
int h1_submit_at(h1 *c, size_t rec_index, const dataset_item *item, int64_t at_ns);
int64_t h1_arm_lead_ns(const h1 *c);
size_t h1_armed(const h1 *c);
int h1_poll(h1 *c, int64_t wake_at_ns);
/* client_prepare_host (client.h): the host's batched-read rule measured now, where batches are on */
void h1_prepare_host(void);
size_t h1_in_flight(const h1 *c);
void h1_abort_all(h1 *c, rec_outcome outcome);

/* Counters of this thread's reads and sends (for tests and profiling): reads made, reads with a
 * kernel stamp, reads that came from a batch (rxbatch); requests sent at their armed instant on a
 * connection prepared ahead (h1_submit_at), and armed requests whose connection was not ready then;
 * armed instants reached by spinning on the clock (the sleep before ended ahead of the instant),
 * those whose sleep before the spin ended past the instant (a wake-up later than the spin's
 * length), and those already past when the loop came to wait for them (a wait that ended late, a
 * slow turn of the loop): each armed instant is counted once in one of the three, or in none when
 * spinning is off (DSPERF_CLIENT_SPIN_US=0, or past its budget) and it was slept to. */
typedef struct { unsigned long reads, stamped, batched, sent_armed, armed_unready, spun, spin_late, arm_passed; } h1_counts;
h1_counts h1_thread_counts(void);
#endif
