/* The client's two read paths (src/client/h1.h: its own HTTP/1.1 reads for plain http://; libcurl
 * for TLS, proxies and the rest) on the same wire: HTTP/1.0 servers with close-delimited bodies,
 * Content-Length bodies, chunked bodies whose chunk edges cut events (with extensions and trailers),
 * an interim 100 Continue, a stream cut mid-chunk, an error status, a server that answers nothing;
 * each served in small pieces so reads split everywhere. Each case gives the same counts and the
 * same error class on both paths, and the counts the response holds. A proxy takes the run to
 * libcurl, and the request really goes through it. */
#include "harness.h"
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EV(t, fin) "data: {\"choices\":[{\"index\":0,\"text\":\"" t "\",\"finish_reason\":" fin "}]}\n\n"
#define BODY3 EV(" a", "null") EV(" b", "null") EV(" c", "\"length\"") "data: [DONE]\n\n"

static json_t *bench_against(int port, const char *host, const char *name, const char *path) {
    char out[512], cmd[1024];
    snprintf(out, sizeof out, "%s/%s-%s.json", harness_tmpdir(), name, path);
    snprintf(cmd, sizeof cmd, "bench --url http://%s:%d --quiet --concurrency 1 --requests 3 --api completions "
             "--dataset random:in=5,out=3 --timeout 10s --out %s", host, port, out);
    setenv("DSPERF_CLIENT_PATH", path, 1);
    int rc = test_run(cmd, NULL, NULL);
    unsetenv("DSPERF_CLIENT_PATH");
    return rc <= 1 ? test_load_json(out) : NULL;
}

static double errs(const json_t *r, const char *cls) { return test_num(json_object_get(r, "errors"), cls); }

TEST(client_paths_agree_on_framings_and_failures) {
    /* a chunked body whose chunks cut events and lines anywhere, with an extension and a trailer */
    char chunked[4096];
    {
        const char *b = BODY3;
        size_t n = strlen(b), off = 0, k = 0;
        int w = snprintf(chunked, sizeof chunked, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
        static const size_t sizes[] = { 5, 40, 1, 77, 3 };
        while (off < n) {
            size_t s = sizes[k++ % 5];
            if (s > n - off) s = n - off;
            w += snprintf(chunked + w, sizeof chunked - (size_t)w, k == 2 ? "%zx;ext=1\r\n" : "%zX\r\n", s);
            memcpy(chunked + w, b + off, s);
            w += (int)s;
            w += snprintf(chunked + w, sizeof chunked - (size_t)w, "\r\n");
            off += s;
        }
        snprintf(chunked + w, sizeof chunked - (size_t)w, "0\r\nX-Trailer: 1\r\n\r\n");
    }
    char clen[2048];
    snprintf(clen, sizeof clen, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %zu\r\n\r\n%s", strlen(BODY3), BODY3);
    char cont[2048];
    snprintf(cont, sizeof cont, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %zu\r\n\r\n%s",
             strlen(BODY3), BODY3);
    char cut[2048];   /* chunked, the connection closes inside the second event's chunk */
    snprintf(cut, sizeof cut, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%zx\r\n%s\r\n30\r\n: keep-al",
             strlen(EV(" a", "null")), EV(" a", "null"));
    static const char e500[] = "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: 43\r\n\r\n"
                               "{\"error\":{\"message\":\"the engine fell over\"}}";
    const struct {
        const char *name, *resp;
        size_t piece;
        double completed, tokens;   /* per run of 3 */
        const char *cls;            /* the error class all 3 land in (NULL: none fail) */
    } cases[] = {
        { "http10_close", "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" BODY3, 9, 3, 9, NULL },
        { "content_length", clen, 13, 3, 9, NULL },
        { "chunked", chunked, 7, 3, 9, NULL },
        { "continue_100", cont, 11, 3, 9, NULL },
        { "cut_mid_chunk", cut, 17, 0, 0, "truncated" },
        { "http_500", e500, 0, 0, 0, "http" },
        { "nothing", "", 0, 0, 0, "connect" },
        { "not_http", "SSH-2.0-OpenSSH_9.2\r\n\r\n", 0, 0, 0, "connect" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int port;
        test_script *s = test_script_start(cases[i].resp, strlen(cases[i].resp), cases[i].piece, &port);
        json_t *r[2] = { bench_against(port, "127.0.0.1", cases[i].name, "own"), bench_against(port, "127.0.0.1", cases[i].name, "curl") };
        test_script_stop(s);
        for (int p = 0; p < 2; p++) {
            const char *pn = p ? "libcurl" : "own";
            CHECK_MSG(r[p] != NULL, "%s on the %s path: no results", cases[i].name, pn);
            if (!r[p]) continue;
            json_t *cl = json_object_get(r[p], "client");
            CHECK_MSG(!strcmp(json_string_value(json_object_get(cl, "read_path")), pn), "%s: read by %s, want %s", cases[i].name,
                      json_string_value(json_object_get(cl, "read_path")), pn);
            CHECK_MSG(test_num(r[p], "completed") == cases[i].completed, "%s on the %s path: completed %g, want %g", cases[i].name, pn,
                      test_num(r[p], "completed"), cases[i].completed);
            if (cases[i].completed)
                CHECK_MSG(test_num(r[p], "total_output_tokens") == cases[i].tokens, "%s on the %s path: %g tokens, want %g", cases[i].name, pn,
                          test_num(r[p], "total_output_tokens"), cases[i].tokens);
            if (cases[i].cls)
                CHECK_MSG(errs(r[p], cases[i].cls) == 3, "%s on the %s path: %g %s errors, want 3", cases[i].name, pn, errs(r[p], cases[i].cls), cases[i].cls);
        }
        if (r[0] && r[1]) {
            /* the same error classes, and the same first message, whichever path read */
            char *a = json_dumps(json_object_get(r[0], "errors"), JSON_SORT_KEYS), *b = json_dumps(json_object_get(r[1], "errors"), JSON_SORT_KEYS);
            CHECK_MSG(a && b && !strcmp(a, b), "%s: errors differ between paths: own %s, libcurl %s", cases[i].name, a, b);
            free(a);
            free(b);
            json_t *ea = json_object_get(r[0], "error_examples"), *eb = json_object_get(r[1], "error_examples");
            char *xa = json_dumps(ea, JSON_SORT_KEYS), *xb = json_dumps(eb, JSON_SORT_KEYS);
            CHECK_MSG((!xa && !xb) || (xa && xb && !strcmp(xa, xb)), "%s: error examples differ: own %s, libcurl %s", cases[i].name, xa, xb);
            free(xa);
            free(xb);
        }
        json_decref(r[0]);
        json_decref(r[1]);
    }
}

/* With http_proxy set the run goes to libcurl, and libcurl sends it through the proxy: the scripted
 * server plays the proxy (and the origin behind it) for a host name that does not resolve, so only
 * a request through the proxy can succeed; the request line it got is the proxy form. */
TEST(client_proxy_runs_on_libcurl_through_the_proxy) {
    static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
    char full[2048];
    snprintf(full, sizeof full, "%s%zx\r\n%s\r\n0\r\n\r\n", resp, strlen(BODY3), BODY3);
    int port;
    test_script *s = test_script_start(full, strlen(full), 0, &port);
    static const char models[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 56\r\nConnection: close\r\n\r\n"
                                 "{\"object\":\"list\",\"data\":[{\"id\":\"m\",\"object\":\"model\"}]}  ";
    test_script_route(s, "GET http://proxied.invalid", models, strlen(models));
    char proxy[64];
    snprintf(proxy, sizeof proxy, "http://127.0.0.1:%d", port);
    setenv("http_proxy", proxy, 1);
    unsetenv("DSPERF_CLIENT_PATH");   /* the proxy alone decides (a run of the suite on the libcurl path sets it) */
    unsetenv("no_proxy");
    unsetenv("NO_PROXY");
    char out[512], cmd[1024];
    snprintf(out, sizeof out, "%s/proxy.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "bench --url http://proxied.invalid:8000 --quiet --concurrency 1 --requests 3 --api completions "
             "--dataset random:in=5,out=3 --timeout 10s --out %s", out);
    int rc = test_run(cmd, NULL, NULL);
    unsetenv("http_proxy");
    json_t *r = rc <= 1 ? test_load_json(out) : NULL;
    char *reqs = test_script_requests(s);
    test_script_stop(s);
    CHECK_MSG(r != NULL, "no results through the proxy (exit %d)", rc);
    if (r) {
        json_t *cl = json_object_get(r, "client");
        CHECK(!strcmp(json_string_value(json_object_get(cl, "read_path")), "libcurl"));
        CHECK(strstr(json_string_value(json_object_get(cl, "read_path_why")), "proxy") != NULL);
        CHECK_EQ_INT(test_num(r, "completed"), 3);
        CHECK_EQ_INT(test_num(r, "total_output_tokens"), 9);
    }
    CHECK_MSG(reqs && strstr(reqs, "POST http://proxied.invalid:8000/v1/completions HTTP/1.1"), "the proxy did not get the proxy-form request");
    free(reqs);
    json_decref(r);
}
