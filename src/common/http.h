/* http — the one place dsperf sets up a plain libcurl request: the credentials header
 * (Authorization: Bearer, built here only), extra headers, TLS verification, timeouts, and GETs
 * that collect their body within a size limit. The preflight, identify and deploy GETs, the
 * telemetry scraper, tune's health checks and drift's POSTs all use it; the streaming client
 * keeps its own pooled handles but takes its headers and shared options from here. Every option
 * is set checked: a libcurl that refuses one fails the request with the option named, never a
 * request sent without its timeout or its credentials. */
#ifndef DSP_HTTP_H
#define DSP_HTTP_H
#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *api_key;            /* sent as "Authorization: Bearer <key>" when set and not "" */
    const char *const *headers;     /* extra "Name: value" lines, NULL-terminated; may be NULL */
    int64_t timeout_ns;             /* the whole transfer; 0: none */
    int64_t connect_timeout_ns;     /* the connection; 0: libcurl's own (300 s) */
    bool insecure;                  /* no TLS peer and host verification (--insecure) */
    bool http_1_1;                  /* HTTP/1.1 even where TLS could negotiate HTTP/2 (as the runs' requests) */
    /* GETs only */
    size_t max_body_bytes;          /* a longer body fails the GET ("response over N MiB"); 0: 1 MiB */
    bool discard_body;              /* the status is all that is wanted */
    bool follow_redirects;
    bool accept_encoding;           /* ask for gzip/deflate and decode it */
    bool fresh_connection;          /* each GET on a new connection (FORBID_REUSE) */
} http_opts;

/* Appends the Authorization header (when o->api_key is set) and then o->headers to *list. 0, or
 * -1 out of memory (*list is then freed and NULL). */
int http_headers_append(struct curl_slist **list, const http_opts *o);

/* Sets on e what every request shares: no signals (threads), the timeouts, TLS verification and
 * DSPERF_CURL_VERBOSE. CURLE_OK, or the code of the first option libcurl refused, named in err. */
CURLcode http_easy_setup(CURL *e, const http_opts *o, char *err, size_t errlen);

/* A handle kept for repeated GETs (its connection is reused unless fresh_connection). */
typedef struct http_get http_get;

/* NULL with err when libcurl cannot make the handle or refuses an option. */
http_get *http_get_new(const http_opts *o, char *err, size_t errlen);
/* GET url. CURLE_OK when a response came, whatever its status (*status): its body, NUL-terminated,
 * in *body and *len (owned by g until its next GET; "" when discard_body). Otherwise libcurl's code
 * and err says why (curl's words, or "response over N MiB"); *status is then 0. */
CURLcode http_get_perform(http_get *g, const char *url, long *status, const char **body, size_t *len, char *err, size_t errlen);
void http_get_free(http_get *g);

/* One GET on a handle of its own: as http_get_perform, with the body malloc'd into *body (the
 * caller frees it; NULL on failure). */
CURLcode http_get_once(const http_opts *o, const char *url, long *status, char **body, size_t *len, char *err, size_t errlen);
#endif
