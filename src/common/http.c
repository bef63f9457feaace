/* http — plain libcurl requests: headers, credentials, TLS, timeouts, bodies (see http.h). */
#include "common/http.h"
#include "common/curl_init.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_BODY (1u << 20)

int http_headers_append(struct curl_slist **list, const http_opts *o) {
    if (o->api_key && *o->api_key) {
        size_t n = strlen("Authorization: Bearer ") + strlen(o->api_key) + 1;
        char *h = malloc(n);
        if (h) snprintf(h, n, "Authorization: Bearer %s", o->api_key);
        struct curl_slist *l = h ? curl_slist_append(*list, h) : NULL;   /* libcurl copies it */
        free(h);
        if (!l) { curl_slist_free_all(*list); *list = NULL; return -1; }
        *list = l;
    }
    for (const char *const *x = o->headers; x && *x; x++) {
        struct curl_slist *l = curl_slist_append(*list, *x);
        if (!l) { curl_slist_free_all(*list); *list = NULL; return -1; }
        *list = l;
    }
    return 0;
}

/* A positive span in whole milliseconds, at least 1 (0 would mean "no limit" to libcurl). */
static long ms_of(int64_t ns) {
    long ms = (long)(ns / 1000000);
    return ms < 1 ? 1 : ms;
}

/* Sets one option; on refusal, names it in err. */
#define SET(e, opt, val)                                                                              \
    do {                                                                                              \
        CURLcode rc_ = curl_easy_setopt(e, opt, val);                                                 \
        if (rc_ != CURLE_OK) {                                                                        \
            snprintf(err, errlen, "libcurl refused " #opt ": %s", curl_easy_strerror(rc_));           \
            return rc_;                                                                               \
        }                                                                                             \
    } while (0)

CURLcode http_easy_setup(CURL *e, const http_opts *o, char *err, size_t errlen) {
    SET(e, CURLOPT_NOSIGNAL, 1L);   /* the callers are threads: no SIGALRM for DNS timeouts */
    if (o->http_1_1) SET(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    if (o->timeout_ns > 0) SET(e, CURLOPT_TIMEOUT_MS, ms_of(o->timeout_ns));
    if (o->connect_timeout_ns > 0) SET(e, CURLOPT_CONNECTTIMEOUT_MS, ms_of(o->connect_timeout_ns));
    if (o->insecure) {
        SET(e, CURLOPT_SSL_VERIFYPEER, 0L);
        SET(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (getenv("DSPERF_CURL_VERBOSE")) SET(e, CURLOPT_VERBOSE, 1L);
    return CURLE_OK;
}

struct http_get {
    CURL *e;
    struct curl_slist *hdrs;
    char *buf;
    size_t len, cap, max;
    bool discard, too_big;
};

static size_t on_body(char *p, size_t size, size_t n, void *ud) {
    http_get *g = ud;
    size_t k = size * n;
    if (g->discard) return k;
    if (g->len + k + 1 > g->max) { g->too_big = true; return 0; }
    if (g->len + k + 1 > g->cap) {
        size_t c = g->cap ? g->cap : 4096;
        while (c < g->len + k + 1) c *= 2;
        char *b = realloc(g->buf, c);
        if (!b) return 0;   /* libcurl reports a write error */
        g->buf = b;
        g->cap = c;
    }
    memcpy(g->buf + g->len, p, k);
    g->len += k;
    g->buf[g->len] = 0;
    return k;
}

static CURLcode get_setup(http_get *g, const http_opts *o, char *err, size_t errlen) {
    CURL *e = g->e;
    CURLcode rc = http_easy_setup(e, o, err, errlen);
    if (rc != CURLE_OK) return rc;
    if (http_headers_append(&g->hdrs, o) != 0) { snprintf(err, errlen, "out of memory"); return CURLE_OUT_OF_MEMORY; }
    if (g->hdrs) SET(e, CURLOPT_HTTPHEADER, g->hdrs);
    SET(e, CURLOPT_WRITEFUNCTION, on_body);
    SET(e, CURLOPT_WRITEDATA, g);
    if (o->follow_redirects) SET(e, CURLOPT_FOLLOWLOCATION, 1L);
    if (o->accept_encoding) SET(e, CURLOPT_ACCEPT_ENCODING, "");   /* every encoding this libcurl decodes */
    if (o->fresh_connection) SET(e, CURLOPT_FORBID_REUSE, 1L);
    return CURLE_OK;
}

http_get *http_get_new(const http_opts *o, char *err, size_t errlen) {
    curl_init_once();
    http_get *g = calloc(1, sizeof *g);
    if (!g || !(g->e = curl_easy_init())) {
        free(g);
        snprintf(err, errlen, "libcurl could not make a handle (out of memory?)");
        return NULL;
    }
    g->max = o->max_body_bytes ? o->max_body_bytes : DEFAULT_MAX_BODY;
    g->discard = o->discard_body;
    if (get_setup(g, o, err, errlen) != CURLE_OK) { http_get_free(g); return NULL; }
    return g;
}

CURLcode http_get_perform(http_get *g, const char *url, long *status, const char **body, size_t *len, char *err, size_t errlen) {
    *status = 0;
    g->len = 0;
    g->too_big = false;
    if (g->buf) g->buf[0] = 0;
    CURLcode rc = curl_easy_setopt(g->e, CURLOPT_URL, url);
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "libcurl refused the URL: %s", curl_easy_strerror(rc));
        return rc;
    }
    rc = curl_easy_perform(g->e);
    if (rc != CURLE_OK) {
        if (g->too_big && g->max % (1u << 20) == 0) snprintf(err, errlen, "response over %zu MiB", g->max >> 20);
        else if (g->too_big) snprintf(err, errlen, "response over %zu bytes", g->max);
        else snprintf(err, errlen, "%s", curl_easy_strerror(rc));
        return rc;
    }
    curl_easy_getinfo(g->e, CURLINFO_RESPONSE_CODE, status);
    if (body) *body = g->buf ? g->buf : "";
    if (len) *len = g->len;
    return CURLE_OK;
}

void http_get_free(http_get *g) {
    if (!g) return;
    curl_easy_cleanup(g->e);
    curl_slist_free_all(g->hdrs);
    free(g->buf);
    free(g);
}

CURLcode http_get_once(const http_opts *o, const char *url, long *status, char **body, size_t *len, char *err, size_t errlen) {
    *status = 0;
    *body = NULL;
    if (len) *len = 0;
    http_get *g = http_get_new(o, err, errlen);
    if (!g) return CURLE_FAILED_INIT;
    const char *b;
    size_t n;
    CURLcode rc = http_get_perform(g, url, status, &b, &n, err, errlen);
    if (rc == CURLE_OK) {
        /* the body is handed over as it is (the handle goes now) */
        *body = g->buf ? g->buf : calloc(1, 1);
        g->buf = NULL;
        if (!*body) { snprintf(err, errlen, "out of memory"); rc = CURLE_OUT_OF_MEMORY; *status = 0; }
        else if (len) *len = n;
    }
    http_get_free(g);
    return rc;
}
