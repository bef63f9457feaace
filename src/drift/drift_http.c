/* drift_http — runs a batch of independent JSON POSTs (drift's generate and score requests) over
 * libcurl's multi interface, a bounded number at a time, collecting each status and body. drift's
 * requests are few and long (a 64k-token prompt scored in one), so this is plain multi_perform
 * with curl_multi_poll, not the streaming client's socket-action loop. */
#include "drift/drift_int.h"
#include "common/stop.h"
#include "common/curl_init.h"
#include "common/http.h"
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    drift_http_req *r;
    size_t cap;
    CURL *e;               /* while in flight */
} xfer;

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
    xfer *x = ud;
    size_t add = sz * n;
    if (x->r->resp_len + add + 1 > x->cap) {
        size_t nc = x->cap ? x->cap : 4096;
        while (x->r->resp_len + add + 1 > nc) nc *= 2;
        char *np = realloc(x->r->resp, nc);
        if (!np) return 0;   /* curl reports a write error */
        x->r->resp = np;
        x->cap = nc;
    }
    memcpy(x->r->resp + x->r->resp_len, p, add);
    x->r->resp_len += add;
    x->r->resp[x->r->resp_len] = 0;
    return add;
}

static CURL *start(drift_http_req *r, xfer *x, struct curl_slist *hdrs, const drift_http_opts *o) {
    CURL *e = curl_easy_init();
    if (!e) return NULL;
    x->r = r;
    x->cap = 0;
    x->e = e;
    /* a request without its body, headers, timeout or TLS choice is not sent (the caller's error) */
    http_opts ho = { .timeout_ns = o->timeout_ns, .connect_timeout_ns = 10 * 1000000000LL, .insecure = o->insecure };
    if (http_easy_setup(e, &ho, r->err, sizeof r->err) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_URL, r->url) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(r->body)) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_WRITEDATA, x) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_PRIVATE, x) != CURLE_OK) {
        if (!r->err[0]) snprintf(r->err, sizeof r->err, "libcurl refused an option of the request");
        curl_easy_cleanup(e);
        x->e = NULL;
        return NULL;
    }
    return e;
}

int drift_http_run(drift_http_req *reqs, size_t n, const drift_http_opts *o, ds_stop_flag *stop) {
    curl_init_once();
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    http_opts ho = { .api_key = o->api_key, .headers = o->headers };
    if (hdrs) http_headers_append(&hdrs, &ho);   /* NULL when out of memory: every request says so below */
    int conc = o->concurrency > 0 ? o->concurrency : 1;
    xfer *xs = calloc(n ? n : 1, sizeof *xs);
    CURLM *m = curl_multi_init();
    size_t next = 0, done = 0;
    int running = 0, rc = 0;
    for (size_t i = 0; i < n; i++) { reqs[i].status = 0; reqs[i].err[0] = 0; }
    if (!xs || !m) {
        for (size_t i = 0; i < n; i++) snprintf(reqs[i].err, sizeof reqs[i].err, "out of memory");
        goto out;
    }
    while (done < n) {
        while (next < n && running < conc && !(stop && *stop)) {
            CURL *e = reqs[next].body && hdrs ? start(&reqs[next], &xs[next], hdrs, o) : NULL;
            if (!e) {
                if (!reqs[next].err[0])
                    snprintf(reqs[next].err, sizeof reqs[next].err, reqs[next].body ? "out of memory" : "no request body (out of memory)");
                next++;
                done++;
                continue;
            }
            curl_multi_add_handle(m, e);
            next++;
            running++;
        }
        if (stop && *stop) { rc = -1; break; }
        if (!running) continue;
        int still;
        curl_multi_perform(m, &still);
        CURLMsg *msg;
        int q;
        while ((msg = curl_multi_info_read(m, &q))) {
            if (msg->msg != CURLMSG_DONE) continue;
            CURL *e = msg->easy_handle;
            xfer *x;
            curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&x);
            if (msg->data.result == CURLE_OK) {
                curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &x->r->status);
            } else {
                x->r->status = 0;
                snprintf(x->r->err, sizeof x->r->err, "%s", curl_easy_strerror(msg->data.result));
            }
            curl_multi_remove_handle(m, e);
            curl_easy_cleanup(e);
            x->e = NULL;
            running--;
            done++;
        }
        if (running) curl_multi_poll(m, NULL, 0, 100, NULL);
    }
out:
    /* interrupted: drop what is still in flight */
    for (size_t i = 0; xs && m && i < next && i < n; i++) {
        if (!xs[i].e) continue;
        curl_multi_remove_handle(m, xs[i].e);
        curl_easy_cleanup(xs[i].e);
        xs[i].e = NULL;
        if (!reqs[i].err[0]) snprintf(reqs[i].err, sizeof reqs[i].err, "interrupted");
    }
    if (m) curl_multi_cleanup(m);
    for (size_t i = next; i < n; i++) if (!reqs[i].err[0]) snprintf(reqs[i].err, sizeof reqs[i].err, "interrupted");
    free(xs);
    curl_slist_free_all(hdrs);
    return rc;
}

void drift_http_req_free(drift_http_req *r) {
    free(r->body);
    free(r->resp);
    r->body = r->resp = NULL;
}
