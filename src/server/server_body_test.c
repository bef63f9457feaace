/* Tests of `dsperf serve --max-body`: a request body over the cap is answered 413 without being kept
 * (announced by Content-Length or sent chunked), a refused chunked body is read to its end rather
 * than reset, one under the cap is served whole, and the server goes on serving afterwards. The
 * real binary on a free loopback port, driven with libcurl and, where the test must decide exactly
 * what is sent and when, with a raw socket. */
#include "harness.h"
#include "testutil.h"
#include <curl/curl.h>
#include <jansson.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

static size_t sink(char *p, size_t size, size_t n, void *ud) { (void)p; (void)ud; return size * n; }

/* POSTs a completions request whose prompt is `prompt_bytes` long; returns the HTTP status (0: none). */
static long post_prompt(const test_server *s, size_t prompt_bytes, int chunked) {
    const char *head = "{\"model\": \"deepseek-ai/DeepSeek-V2-Lite\", \"max_tokens\": 2, \"prompt\": \"";
    size_t hl = strlen(head), n = hl + prompt_bytes + 2;
    char *body = malloc(n + 1);
    if (!body) return 0;
    memcpy(body, head, hl);
    for (size_t i = 0; i < prompt_bytes; i++) body[hl + i] = i % 6 == 5 ? ' ' : 'a';
    memcpy(body + hl + prompt_bytes, "\"}", 3);
    char url[128];
    snprintf(url, sizeof url, "%s/v1/completions", s->url);
    CURL *e = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = curl_slist_append(h, "Expect:");
    if (chunked) h = curl_slist_append(h, "Transfer-Encoding: chunked");
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    if (!chunked) curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 20000L);
    long status = 0;
    CURLcode rc = curl_easy_perform(e);
    if (rc == CURLE_OK) curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    else harness_fail(__FILE__, __LINE__, "POST of %zu bytes: %s", n, curl_easy_strerror(rc));
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
    free(body);
    return status;
}

TEST(server_max_body_answers_413) {
    test_server s;
    if (test_serve_start(&s, "--max-body 64KiB --ttft 1ms --itl 1ms")) { CHECK_MSG(0, "server did not start"); return; }
    CHECK_EQ_INT(post_prompt(&s, 60000, 0), 200);         /* under the cap */
    CHECK_EQ_INT(post_prompt(&s, 70000, 0), 413);         /* over it, by Content-Length */
    CHECK_EQ_INT(post_prompt(&s, 5 << 20, 0), 413);       /* 5 MB: read and dropped, not kept */
    CHECK_EQ_INT(post_prompt(&s, 200000, 1), 413);        /* chunked: counted as it arrives */
    CHECK_EQ_INT(post_prompt(&s, 100, 0), 200);           /* and it still serves */
    CHECK_EQ_INT(test_serve_stop(&s), 0);
    /* the default cap (4 MiB): a 5 MB body is refused, a 1 MB prompt (a ~200k-token context) is not */
    if (test_serve_start(&s, "--ttft 1ms --itl 1ms")) { CHECK_MSG(0, "server did not start"); return; }
    CHECK_EQ_INT(post_prompt(&s, 5 << 20, 0), 413);
    CHECK_EQ_INT(post_prompt(&s, 1 << 20, 0), 200);
    CHECK_EQ_INT(test_serve_stop(&s), 0);
    char out[1024];
    CHECK_EQ_INT(test_run_into("serve --max-body 10", out, sizeof out), 2);
    CHECK(strstr(out, "--max-body wants a size from 1KiB to 1GiB") != NULL);
}

/* ---- raw HTTP/1.1 on a loopback socket ---- */

/* A connection to the server with 20 s send and receive timeouts: a server that stops reading
 * fails the test instead of hanging it. A small send buffer keeps what the client's kernel can
 * hold for a server that does not read small and known (Linux doubles it: 128 KiB). */
static int raw_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct timeval tv = { .tv_sec = 20 };
    int sndbuf_bytes = 64 << 10;
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf_bytes, sizeof sndbuf_bytes);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) { close(fd); return -1; }
    return fd;
}

/* 0, or the errno of the send that failed (EPIPE/ECONNRESET: the server reset the connection). */
static int send_all(int fd, const char *p, size_t len_bytes) {
    while (len_bytes > 0) {
        ssize_t n = send(fd, p, len_bytes, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n < 0 ? errno : EPIPE;
        p += n;
        len_bytes -= (size_t)n;
    }
    return 0;
}

/* One chunk of a chunked body, in one send: "<hex size>\r\n<data>\r\n". */
static int send_chunk(int fd, const char *data, size_t len_bytes) {
    char *c = malloc(len_bytes + 32);
    if (!c) return ENOMEM;
    int hl = snprintf(c, 32, "%zx\r\n", len_bytes);
    memcpy(c + hl, data, len_bytes);
    memcpy(c + hl + len_bytes, "\r\n", 2);
    int err = send_all(fd, c, (size_t)hl + len_bytes + 2);
    free(c);
    return err;
}

static const char *PROMPT_HEAD = "{\"model\": \"deepseek-ai/DeepSeek-V2-Lite\", \"max_tokens\": 2, \"prompt\": \"";

/* A completions body whose prompt is prompt_bytes of five-letter words (malloc'd, NUL-terminated). */
static char *prompt_body(size_t prompt_bytes, size_t *len_out) {
    size_t hl = strlen(PROMPT_HEAD), n = hl + prompt_bytes + 2;
    char *b = malloc(n + 1);
    if (!b) return NULL;
    memcpy(b, PROMPT_HEAD, hl);
    for (size_t i = 0; i < prompt_bytes; i++) b[hl + i] = i % 6 == 5 ? ' ' : 'a';
    memcpy(b + hl + prompt_bytes, "\"}", 3);
    *len_out = n;
    return b;
}

/* Reads one response (head, then a Content-Length body) into a malloc'd string; *status gets its
 * status code. NULL when the connection ended or failed before the response was whole. */
static char *read_response(int fd, int *status) {
    size_t cap = 1 << 16, n = 0, need = 0;
    char *r = malloc(cap + 1);
    *status = 0;
    while (r) {
        r[n] = 0;
        char *end = strstr(r, "\r\n\r\n");
        if (end && !need) {
            const char *cl = strcasestr(r, "\r\nContent-Length:");
            need = (size_t)(end + 4 - r) + (cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0);
            sscanf(r, "HTTP/1.%*d %d", status);
            if (need > cap) {
                char *g = realloc(r, need + 1);
                if (!g) break;
                r = g;
                cap = need;
            }
        }
        if (need && n >= need) return r;
        ssize_t got = recv(fd, r + n, (need ? need : cap) - n, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        n += (size_t)got;
    }
    free(r);
    return NULL;
}

/* POSTs body (Content-Length, or chunked in pieces of chunk_bytes) on a kept-alive connection and
 * returns the response's usage.prompt_tokens as the server counted them (-1: no 200 with usage). */
static long raw_post_prompt_tokens(int fd, int port, const char *body, size_t len_bytes, size_t chunk_bytes) {
    char head[256];
    if (chunk_bytes)
        snprintf(head, sizeof head, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                 "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", port);
    else
        snprintf(head, sizeof head, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                 "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n", port, len_bytes);
    int err = send_all(fd, head, strlen(head));
    for (size_t off = 0; chunk_bytes && !err && off < len_bytes; off += chunk_bytes)
        err = send_chunk(fd, body + off, len_bytes - off < chunk_bytes ? len_bytes - off : chunk_bytes);
    if (!err) err = send_all(fd, chunk_bytes ? "0\r\n\r\n" : body, chunk_bytes ? 5 : len_bytes);
    if (err) { harness_fail(__FILE__, __LINE__, "sending the request: %s", strerror(err)); return -1; }
    int status;
    char *r = read_response(fd, &status);
    long tokens = -1;
    const char *json = r ? strstr(r, "\r\n\r\n") : NULL;
    json_t *o = json && status == 200 ? json_loads(json + 4, 0, NULL) : NULL;
    json_t *pt = json_object_get(json_object_get(o, "usage"), "prompt_tokens");
    if (json_is_integer(pt)) tokens = (long)json_integer_value(pt);
    else harness_fail(__FILE__, __LINE__, "no usage.prompt_tokens in a 200: status %d, %.300s", status, r ? r : "(no response)");
    json_decref(o);
    free(r);
    return tokens;
}

/* The most a Linux TCP receive buffer grows to by itself (tcp_rmem's third field). */
static size_t tcp_rmem_max_bytes(void) {
    long lo = 0, def = 0, max = 0;
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_rmem", "r");
    if (f && fscanf(f, "%ld %ld %ld", &lo, &def, &max) != 3) max = 0;
    if (f) fclose(f);
    return max > 0 ? (size_t)max : (size_t)6 << 20;   /* Linux's default */
}

/* Sends a chunked body far over the 64 KiB cap on fd (whose earlier requests, if any, have been
 * answered), then reads the answer to its end. A server that answers and closes without reading
 * the rest resets the connection, and the client fails to send (or to read) before it sees its
 * 413. To make that certain rather than likely, the body is longer than everything the kernels can
 * hold for a server that has stopped reading (its receive buffer grows to tcp_rmem's maximum at
 * most; the client's send buffer is 128 KiB): the client can only finish sending if the server
 * reads it all. The pauses after the cap is passed let such a server answer and close while the
 * client is still sending, as curl saw in CI; they are not needed for the outcome. */
static void refused_chunked_body_is_drained(int fd, int port, const char *what) {
    const size_t cap_bytes = 64 << 10, chunk_bytes = 16 << 10;
    size_t total_bytes = tcp_rmem_max_bytes() + ((size_t)1 << 20), sent_bytes = 0;
    char head[256];
    snprintf(head, sizeof head, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
             "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", port);
    char *chunk = malloc(chunk_bytes);
    if (!chunk) { CHECK_MSG(0, "out of memory"); return; }
    memset(chunk, 'a', chunk_bytes);
    memcpy(chunk, PROMPT_HEAD, strlen(PROMPT_HEAD));
    int err = send_all(fd, head, strlen(head));
    for (int paced = 0; !err && sent_bytes < total_bytes;) {
        if ((err = send_chunk(fd, chunk, chunk_bytes))) break;
        sent_bytes += chunk_bytes;
        if (sent_bytes > cap_bytes && paced < 8) {
            paced++;
            nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000 * 1000 }, NULL);
        }
    }
    if (!err) err = send_all(fd, "0\r\n\r\n", 5);
    free(chunk);
    CHECK_MSG(!err, "%s: the client could not send its body (%s after %zu of %zu bytes were sent): the server "
              "stopped reading and reset the connection", what, strerror(err), sent_bytes, total_bytes);
    int status;
    char *r = read_response(fd, &status);
    CHECK_MSG(r != NULL, "%s: no whole response (%s)", what, strerror(errno));
    CHECK_EQ_INT(status, 413);
    CHECK_MSG(r && strstr(r, "\r\nConnection: close\r\n"), "%s: no Connection: close in %.300s", what, r ? r : "");
    CHECK_MSG(r && strstr(r, "<H1>Request Entity Too Large</H1>"), "%s: not evhttp's 413 page: %.300s", what, r ? r : "");
    free(r);
    /* then an orderly end of the connection (FIN), not a reset */
    char c;
    ssize_t got;
    while ((got = recv(fd, &c, 1, 0)) < 0 && errno == EINTR) {}
    CHECK_MSG(got == 0, "%s: after the 413 the connection ended with %s", what, got < 0 ? strerror(errno) : "more data");
}

TEST(server_body_refused_chunked_is_drained) {
    test_server s;
    if (test_serve_start(&s, "--max-body 64KiB --ttft 1ms --itl 1ms")) { CHECK_MSG(0, "server did not start"); return; }
    /* the first request of a connection */
    int fd = raw_connect(s.port);
    CHECK_MSG(fd >= 0, "connect: %s", strerror(errno));
    if (fd >= 0) refused_chunked_body_is_drained(fd, s.port, "first request");
    if (fd >= 0) close(fd);
    /* a later one, after a served request on the same kept-alive connection */
    fd = raw_connect(s.port);
    CHECK_MSG(fd >= 0, "connect: %s", strerror(errno));
    size_t len;
    char *body = prompt_body(600, &len);
    if (fd >= 0 && body) {
        CHECK_EQ_INT(raw_post_prompt_tokens(fd, s.port, body, len, 0), 100);
        refused_chunked_body_is_drained(fd, s.port, "after a served request");
    }
    free(body);
    if (fd >= 0) close(fd);
    CHECK_EQ_INT(post_prompt(&s, 100, 0), 200);           /* and it still serves */
    CHECK_EQ_INT(test_serve_stop(&s), 0);
}

/* A chunked body under the cap reaches the handler whole: its prompt counts the same tokens as the
 * same body sent with Content-Length (a lost or repeated chunk changes the count, or the JSON). */
TEST(server_body_chunked_under_cap_served_whole) {
    test_server s;
    if (test_serve_start(&s, "--max-body 64KiB --ttft 1ms --itl 1ms")) { CHECK_MSG(0, "server did not start"); return; }
    int fd = raw_connect(s.port);
    CHECK_MSG(fd >= 0, "connect: %s", strerror(errno));
    size_t len;
    char *body = prompt_body(60000, &len);     /* 10000 words; the body is just under 64 KiB */
    if (fd >= 0 && body) {
        long by_length = raw_post_prompt_tokens(fd, s.port, body, len, 0);
        CHECK_EQ_INT(by_length, 10000);
        CHECK_EQ_INT(raw_post_prompt_tokens(fd, s.port, body, len, 4096), by_length);   /* 15 chunks */
        CHECK_EQ_INT(raw_post_prompt_tokens(fd, s.port, body, len, 1000), by_length);   /* 61, unaligned */
    }
    free(body);
    if (fd >= 0) close(fd);
    CHECK_EQ_INT(test_serve_stop(&s), 0);
}
