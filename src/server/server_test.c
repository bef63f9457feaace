/* Tests for `dsperf serve`: the real binary is started on a free loopback port (the port is read
 * from its one stdout line) and driven with libcurl; one test also runs the server in a thread
 * through server.h. Timing tolerances are derived from the configured TTFT/ITL and are wide
 * enough for a loaded 2-core machine (a token can be late, never early). */
#include "harness.h"
#include "testutil.h"
#include "server/server.h"
#include "engine/fixed.h"
#include "common/clock.h"
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

/* ---- the server process (tests/testutil) ---- */

typedef test_server srv_proc;

/* Starts `dsperf serve --port 0 ARGS`; 0 when it is listening. */
static int srv_spawn(srv_proc *p, const char *args) {
    memset(p, 0, sizeof *p);
    int rc = test_serve_start(p, args);
    CHECK_MSG(rc == 0, "server did not start (args: %s)", args);
    return rc;
}

/* Stops it, and checks that SIGTERM made it exit cleanly. */
static void srv_kill(srv_proc *p) {
    if (p->pid <= 0) return;
    int rc = test_serve_stop(p);
    CHECK_MSG(rc == 0, "server did not exit cleanly on SIGTERM (exit %d)", rc);
}

/* ---- an HTTP client that timestamps every SSE event ---- */

#define MAX_EVENTS 4096

typedef struct {
    long status;
    int curl_rc;
    char *body;                 /* whole body */
    size_t len;
    int n_events;               /* SSE events: "data: X" payloads, or "error: X" kept whole */
    char *events[MAX_EVENTS];
    double t_ms[MAX_EVENTS];    /* arrival of each event since the request started */
    size_t parsed;              /* body bytes already split into events */
    int64_t t0;
    int abort_after;            /* abort the transfer after this many events (0 = never) */
    long timeout_ms;            /* give up after this long (0 = 20 s) */
} http_result;

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud) {
    http_result *r = ud;
    size_t n = size * nmemb;
    double t = (double)(clock_now_ns() - r->t0) / 1e6;
    r->body = realloc(r->body, r->len + n + 1);
    memcpy(r->body + r->len, ptr, n);
    r->len += n;
    r->body[r->len] = 0;
    char *ev;
    while ((ev = strstr(r->body + r->parsed, "\n\n")) && r->n_events < MAX_EVENTS) {
        size_t start = r->parsed, elen = (size_t)(ev - (r->body + start));
        r->parsed = start + elen + 2;
        const char *s = r->body + start;
        if (!strncmp(s, "data: ", 6)) { s += 6; elen -= 6; }
        r->events[r->n_events] = strndup(s, elen);
        r->t_ms[r->n_events++] = t;
    }
    if (r->abort_after && r->n_events >= r->abort_after) return 0;
    return n;
}

static void http_free(http_result *r) {
    for (int i = 0; i < r->n_events; i++) free(r->events[i]);
    free(r->body);
    memset(r, 0, sizeof *r);
}

/* POST body (JSON) when body != NULL, else GET. */
static void http_do(const srv_proc *p, const char *path, const char *body, http_result *r) {
    char url[256];
    snprintf(url, sizeof url, "%s%s", p->url, path);
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, r->timeout_ms ? r->timeout_ms : 20000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (body) curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    r->t0 = clock_now_ns();
    r->curl_rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
}

/* Value of the first sample line of /metrics starting with `series` (-1 if absent). */
static double metric(const char *text, const char *series) {
    size_t n = strlen(series);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, series, n) && l[n] == ' ') return atof(l + n + 1);
    return -1;
}

/* Polls /metrics until `series` has value `want` or timeout; returns the last value seen. */
static double wait_metric(const srv_proc *p, const char *series, double want, int timeout_ms);

static double fault_count(const char *metrics, const char *kind) {
    char s[128];
    snprintf(s, sizeof s, "dsperf_injected_faults_total{kind=\"%s\"}", kind);
    return metric(metrics, s);
}


/* Index of the first event carrying generated text (a completion text or a chat content delta). */
static int is_token_event(const char *ev, const char **text) {
    json_t *j = json_loads(ev, 0, NULL);
    json_t *c0 = json_array_get(json_object_get(j, "choices"), 0);
    json_t *t = json_object_get(c0, "text");
    if (!t) t = json_object_get(json_object_get(c0, "delta"), "content");
    int yes = json_is_string(t) && json_string_length(t) > 0;
    static char buf[256];
    if (yes && text) { snprintf(buf, sizeof buf, "%s", json_string_value(t)); *text = buf; }
    json_decref(j);
    return yes;
}

static int count_words(const char *s) {
    int n = 0, in = 0;
    for (; *s; s++) { int sp = *s == ' '; if (!sp && !in) n++; in = !sp; }
    return n;
}

static void http_do(const srv_proc *p, const char *path, const char *body, http_result *r);

static double wait_metric(const srv_proc *p, const char *series, double want, int timeout_ms) {
    double v = -1;
    for (int waited = 0; waited <= timeout_ms; waited += 20) {
        http_result r = {0};
        http_do(p, "/metrics", NULL, &r);
        v = metric(r.body ? r.body : "", series);
        http_free(&r);
        if (v == want) break;
        usleep(20 * 1000);
    }
    return v;
}

/* ---- shape ---- */

TEST(server_stream_completions_shape) {
    srv_proc p;
    if (srv_spawn(&p, "--ttft 5ms --itl 1ms") < 0) return;
    http_result r = {0};
    http_do(&p, "/v1/completions", "{\"model\":\"deepseek-ai/DeepSeek-V2-Lite\",\"prompt\":\"one two  three\\nfour\","
            "\"max_tokens\":5,\"stream\":true,\"stream_options\":{\"include_usage\":true}}", &r);
    CHECK_EQ_INT(r.curl_rc, 0);
    CHECK_EQ_INT(r.status, 200);
    CHECK_EQ_INT(r.n_events, 7);             /* 5 tokens, usage, [DONE] */
    for (int i = 0; i < 5 && i < r.n_events; i++) {
        json_t *j = json_loads(r.events[i], 0, NULL);
        CHECK(j != NULL);
        json_t *c0 = json_array_get(json_object_get(j, "choices"), 0);
        const char *text = json_string_value(json_object_get(c0, "text"));
        CHECK(text && text[0] == ' ' && count_words(text) == 1);
        CHECK_STR(json_string_value(json_object_get(j, "object")), "text_completion");
        CHECK_STR(json_string_value(json_object_get(j, "model")), "deepseek-ai/DeepSeek-V2-Lite");
        json_t *fr = json_object_get(c0, "finish_reason");
        if (i < 4) CHECK(json_is_null(fr));
        else CHECK_STR(json_string_value(fr), "length");
        json_decref(j);
    }
    if (r.n_events == 7) {
        json_t *j = json_loads(r.events[5], 0, NULL);
        json_t *u = json_object_get(j, "usage");
        CHECK_EQ_INT(json_array_size(json_object_get(j, "choices")), 0);
        CHECK_EQ_INT(json_integer_value(json_object_get(u, "prompt_tokens")), 4);
        CHECK_EQ_INT(json_integer_value(json_object_get(u, "completion_tokens")), 5);
        CHECK_EQ_INT(json_integer_value(json_object_get(u, "total_tokens")), 9);
        json_decref(j);
        CHECK_STR(r.events[6], "[DONE]");
    }
    http_free(&r);
    srv_kill(&p);
}

TEST(server_stream_chat_shape) {
    srv_proc p;
    if (srv_spawn(&p, "--ttft 5ms --itl 1ms --tokens-per-chunk 3") < 0) return;
    http_result r = {0};
    http_do(&p, "/v1/chat/completions", "{\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
            "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hello there world\"}]}],"
            "\"max_completion_tokens\":7,\"stream\":true,\"stream_options\":{\"include_usage\":true}}", &r);
    CHECK_EQ_INT(r.status, 200);
    CHECK_EQ_INT(r.n_events, 1 + 3 + 2);     /* role, chunks of 3,3,1, usage, [DONE] */
    if (r.n_events == 6) {
        json_t *j = json_loads(r.events[0], 0, NULL);
        json_t *c0 = json_array_get(json_object_get(j, "choices"), 0);
        json_t *d = json_object_get(c0, "delta");
        CHECK_STR(json_string_value(json_object_get(d, "role")), "assistant");
        CHECK_STR(json_string_value(json_object_get(d, "content")), "");
        CHECK_STR(json_string_value(json_object_get(j, "object")), "chat.completion.chunk");
        json_decref(j);
        int words[3] = {3, 3, 1};
        for (int i = 0; i < 3; i++) {
            const char *text = NULL;
            CHECK(is_token_event(r.events[1 + i], &text));
            if (text) CHECK_EQ_INT(count_words(text), words[i]);
        }
        j = json_loads(r.events[3], 0, NULL);
        c0 = json_array_get(json_object_get(j, "choices"), 0);
        CHECK_STR(json_string_value(json_object_get(c0, "finish_reason")), "length");
        json_decref(j);
        j = json_loads(r.events[4], 0, NULL);
        json_t *u = json_object_get(j, "usage");
        CHECK_EQ_INT(json_integer_value(json_object_get(u, "prompt_tokens")), 5);
        CHECK_EQ_INT(json_integer_value(json_object_get(u, "completion_tokens")), 7);
        json_decref(j);
        CHECK_STR(r.events[5], "[DONE]");
    }
    http_free(&r);
    /* without include_usage there is no usage chunk */
    http_do(&p, "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":2,\"stream\":true}", &r);
    CHECK_EQ_INT(r.n_events, 1 + 1 + 1);
    CHECK(r.n_events > 0 && !strcmp(r.events[r.n_events - 1], "[DONE]"));
    http_free(&r);
    srv_kill(&p);
}

TEST(server_nonstream_bodies) {
    srv_proc p;
    if (srv_spawn(&p, "--ttft 2ms --itl 1ms --model tiny") < 0) return;
    http_result r = {0};
    http_do(&p, "/v1/completions", "{\"model\":\"tiny\",\"prompt\":[1,2,3,4,5,6],\"max_tokens\":4,\"ignore_eos\":true}", &r);
    CHECK_EQ_INT(r.status, 200);
    json_t *j = json_loads(r.body ? r.body : "", 0, NULL);
    json_t *c0 = json_array_get(json_object_get(j, "choices"), 0);
    CHECK_EQ_INT(count_words(json_string_value(json_object_get(c0, "text")) ?: ""), 4);
    CHECK_STR(json_string_value(json_object_get(c0, "finish_reason")), "length");
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(j, "usage"), "prompt_tokens")), 6);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(j, "usage"), "completion_tokens")), 4);
    json_decref(j);
    http_free(&r);
    http_do(&p, "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"a b\"}],\"max_tokens\":3}", &r);
    j = json_loads(r.body ? r.body : "", 0, NULL);
    c0 = json_array_get(json_object_get(j, "choices"), 0);
    CHECK_STR(json_string_value(json_object_get(j, "object")), "chat.completion");
    CHECK_STR(json_string_value(json_object_get(json_object_get(c0, "message"), "role")), "assistant");
    CHECK_EQ_INT(count_words(json_string_value(json_object_get(json_object_get(c0, "message"), "content")) ?: ""), 3);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(j, "usage"), "total_tokens")), 5);
    json_decref(j);
    http_free(&r);
    srv_kill(&p);
}

TEST(server_endpoints_and_errors) {
    srv_proc p;
    if (srv_spawn(&p, "--ttft 1ms --itl 1ms") < 0) return;
    http_result r = {0};
    http_do(&p, "/v1/models", NULL, &r);
    CHECK_EQ_INT(r.status, 200);
    json_t *j = json_loads(r.body ? r.body : "", 0, NULL);
    CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(j, "data"), 0), "id")),
              "deepseek-ai/DeepSeek-V2-Lite");
    json_decref(j);
    http_free(&r);
    http_do(&p, "/health", NULL, &r);
    CHECK_EQ_INT(r.status, 200);
    http_free(&r);
    struct { const char *path, *body; long status; } cases[] = {
        {"/v1/completions", "{\"model\":\"nope\",\"prompt\":\"x\"}", 404},
        {"/v1/completions", "{\"prompt\": ", 400},
        {"/v1/completions", "{\"max_tokens\":3}", 400},
        {"/v1/completions", "{\"prompt\":\"x\",\"max_tokens\":0}", 400},
        {"/v1/chat/completions", "{\"messages\":[]}", 400},
        {"/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream\":\"yes\"}", 400},
        {"/v2/anything", "{}", 404},
        {"/v1/completions", NULL, 405},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        http_do(&p, cases[i].path, cases[i].body, &r);
        CHECK_MSG(r.status == cases[i].status, "%s %s: status %ld, want %ld", cases[i].path,
                  cases[i].body ? cases[i].body : "(GET)", r.status, cases[i].status);
        j = json_loads(r.body ? r.body : "", 0, NULL);
        json_t *e = json_object_get(j, "error");
        CHECK_MSG(json_is_string(json_object_get(e, "message")) && json_is_string(json_object_get(e, "type")) &&
                  json_integer_value(json_object_get(e, "code")) == cases[i].status, "error body: %s", r.body);
        json_decref(j);
        http_free(&r);
    }
    /* three streams of 4 tokens, then the counters and histograms add up */
    for (int i = 0; i < 3; i++) {
        http_do(&p, "/v1/completions", "{\"prompt\":\"a b\",\"max_tokens\":4,\"stream\":true}", &r);
        http_free(&r);
    }
    http_do(&p, "/metrics", NULL, &r);
    const char *m = r.body ? r.body : "";
    CHECK(strstr(m, "# TYPE vllm:time_to_first_token_seconds histogram") != NULL);
    CHECK(strstr(m, "# HELP vllm:num_requests_running") != NULL);
    CHECK(strstr(m, "vllm:kv_cache_usage_perc") == NULL);     /* the fixed engine does not model it */
    const char *ml = "{model_name=\"deepseek-ai/DeepSeek-V2-Lite\"}";
    char s[256];
    snprintf(s, sizeof s, "vllm:generation_tokens_total%s", ml);
    CHECK_NEAR(metric(m, s), 12, 0);
    snprintf(s, sizeof s, "vllm:prompt_tokens_total%s", ml);
    CHECK_NEAR(metric(m, s), 6, 0);
    snprintf(s, sizeof s, "vllm:time_to_first_token_seconds_count%s", ml);
    CHECK_NEAR(metric(m, s), 3, 0);
    snprintf(s, sizeof s, "vllm:inter_token_latency_seconds_count%s", ml);
    CHECK_NEAR(metric(m, s), 9, 0);
    snprintf(s, sizeof s, "vllm:num_requests_running%s", ml);
    CHECK_NEAR(metric(m, s), 0, 0);
    CHECK_NEAR(metric(m, "vllm:request_success_total{finished_reason=\"length\",model_name=\"deepseek-ai/DeepSeek-V2-Lite\"}"), 3, 0);
    CHECK_NEAR(metric(m, "dsperf_http_responses_total{code=\"404\"}"), 2, 0);
    CHECK_NEAR(metric(m, "dsperf_http_responses_total{code=\"400\"}"), 5, 0);
    http_free(&r);
    srv_kill(&p);
}

/* ---- timing ---- */

/* The server's timing over HTTP, as far as it holds on any machine: a token is written at its
 * deadline or later, never earlier, and bytes arrive after they are written, so token k arrives at
 * least 52 + 10 k ms after the request (50 ms + 20 prompt words x 100 us, then 10 ms apart). That
 * the deadlines are absolute (no drift) is engine_fixed_absolute_deadlines, in engine time; how
 * punctually a busy machine meets them is `make bench` (and dsperf_emit_lateness_seconds). */
TEST(server_timing_single_stream) {
    srv_proc p;
    if (srv_spawn(&p, "--ttft 50ms --itl 10ms --prefill-per-token 100us") < 0) return;
    http_result r = {0};
    http_do(&p, "/v1/completions", "{\"prompt\":\"w w w w w w w w w w w w w w w w w w w w\",\"max_tokens\":30,\"stream\":true}", &r);
    CHECK_EQ_INT(r.n_events, 31);
    if (r.n_events == 31) {
        int early = 0;
        for (int k = 0; k < 30; k++)
            if (r.t_ms[k] < 52.0 + 10.0 * k - 0.05) {
                if (early++ < 3) fprintf(stderr, "    token %d at %.3f ms, deadline %.1f\n", k, r.t_ms[k], 52.0 + 10.0 * k);
            }
        CHECK_MSG(early == 0, "%d tokens arrived before their deadline", early);
        CHECK(!strcmp(r.events[30], "[DONE]"));
    }
    http_free(&r);
    srv_kill(&p);
}

typedef struct { const srv_proc *p; const char *body; http_result r; } req_thread;

static void *run_req(void *arg) {
    req_thread *t = arg;
    http_do(t->p, "/v1/completions", t->body, &t->r);
    return NULL;
}

TEST(server_capacity_queues_fifo) {
    srv_proc p;
    if (srv_spawn(&p, "--ttft 50ms --itl 10ms --capacity 1") < 0) return;
    const char *body = "{\"prompt\":\"x\",\"max_tokens\":10,\"stream\":true}";
    req_thread t[2] = {{&p, body, {0}}, {&p, body, {0}}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, run_req, &t[i]);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    CHECK_EQ_INT(t[0].r.n_events, 11);
    CHECK_EQ_INT(t[1].r.n_events, 11);
    if (t[0].r.n_events == 11 && t[1].r.n_events == 11) {
        /* whichever got in first: E2E ~ 50 + 9 x 10 = 140 ms; the other waits for it, then its own 50 ms */
        double first_abs[2];
        for (int i = 0; i < 2; i++) first_abs[i] = (double)t[i].r.t0 / 1e6 + t[i].r.t_ms[0];
        int a = first_abs[0] < first_abs[1] ? 0 : 1, b = 1 - a;
        /* both measured from the send of the request served first */
        double first_e2e = t[a].r.t_ms[9], second_ttft = first_abs[b] - (double)t[a].r.t0 / 1e6;
        /* tokens can be late under load, never early: the bounds are one-sided. The second request
         * enters service when the engine finishes the first (140 ms), however late that write; without
         * the queue its first token would come at 50 ms, far below the bound. */
        CHECK_MSG(t[a].r.t_ms[0] >= 49.95, "first TTFT %.2f", t[a].r.t_ms[0]);
        CHECK_MSG(first_e2e >= 139.95, "first E2E %.2f, want 140", first_e2e);
        CHECK_MSG(second_ttft >= 189.95, "second first token at %.2f ms, want 140 + 50", second_ttft);
    }
    http_free(&t[0].r);
    http_free(&t[1].r);
    srv_kill(&p);
}

TEST(server_speedup_scales_engine_time) {
    srv_proc p;
    /* configured times 400x what the test waits for: a loaded host makes tokens late by far less
     * than the factor it separates (50 ms scaled against 20 s unscaled) */
    if (srv_spawn(&p, "--ttft 20s --itl 2s --speedup 400") < 0) return;
    http_result r = {0};
    http_do(&p, "/v1/completions", "{\"prompt\":\"x\",\"max_tokens\":5,\"stream\":true}", &r);
    CHECK_EQ_INT(r.n_events, 6);
    if (r.n_events == 6) {
        /* 50 ms (20 s / 400) is a floor; without the speedup the first token would come at 20 s
         * and the last at 28 s, so a ceiling of half that separates the two on any machine */
        CHECK_MSG(r.t_ms[0] >= 49.95 && r.t_ms[0] < 10000, "TTFT %.2f ms, want 50 (20 s / 400)", r.t_ms[0]);
        CHECK_MSG(r.t_ms[4] >= 69.95 && r.t_ms[4] < 14000, "last token at %.2f ms, want 70 (28 s / 400)", r.t_ms[4]);
    }
    http_free(&r);
    srv_kill(&p);
}

/* ---- faults ---- */

TEST(server_faults_every_request) {
    srv_proc p;
    http_result r = {0};
    const char *body = "{\"prompt\":\"x\",\"max_tokens\":8,\"stream\":true}";
    if (srv_spawn(&p, "--ttft 2ms --itl 1ms --fail-rate 1") == 0) {
        http_do(&p, "/v1/completions", body, &r);
        CHECK_EQ_INT(r.status, 500);
        CHECK(r.body && strstr(r.body, "\"error\""));
        http_free(&r);
        srv_kill(&p);
    }
    if (srv_spawn(&p, "--ttft 2ms --itl 1ms --status-429-rate 1") == 0) {
        http_do(&p, "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", &r);
        CHECK_EQ_INT(r.status, 429);
        http_free(&r);
        srv_kill(&p);
    }
    if (srv_spawn(&p, "--ttft 2ms --itl 1ms --drop-rate 1") == 0) {
        for (int i = 0; i < 3; i++) {
            http_do(&p, "/v1/completions", body, &r);
            CHECK_EQ_INT(r.status, 200);
            CHECK(r.curl_rc != 0);                 /* the chunked body never ended */
            CHECK(r.n_events >= 1 && r.n_events < 8);
            for (int k = 0; k < r.n_events; k++) CHECK(strcmp(r.events[k], "[DONE]"));
            http_free(&r);
        }
        http_do(&p, "/metrics", NULL, &r);
        CHECK_NEAR(fault_count(r.body ? r.body : "", "drop"), 3, 0);
        http_free(&r);
        srv_kill(&p);
    }
    if (srv_spawn(&p, "--ttft 2ms --itl 2ms --stall-rate 1 --stall 200ms") == 0) {
        http_do(&p, "/v1/completions", body, &r);
        CHECK_EQ_INT(r.n_events, 9);
        /* one gap holds the 200 ms stall: the token after it cannot arrive before 2 + 2 k + 200 ms,
         * and however late the token before it came, one gap is longer than half the stall */
        int long_gaps = 0, stall_at = -1;
        for (int k = 1; k < r.n_events - 1; k++)
            if (r.t_ms[k] - r.t_ms[k - 1] > 100) { long_gaps++; stall_at = k; }
        CHECK_EQ_INT(long_gaps, 1);
        if (stall_at > 0) CHECK_MSG(r.t_ms[stall_at] >= 2 + 2.0 * stall_at + 200 - 0.05, "token %d after the stall at %.1f ms", stall_at, r.t_ms[stall_at]);
        http_free(&r);
        srv_kill(&p);
    }
    if (srv_spawn(&p, "--ttft 2ms --itl 1ms --error-event-rate 1") == 0) {
        http_do(&p, "/v1/completions", body, &r);
        CHECK_EQ_INT(r.curl_rc, 0);
        CHECK(r.n_events >= 2);
        if (r.n_events >= 2) {
            CHECK(!strncmp(r.events[r.n_events - 1], "error: {", 8));
            CHECK(is_token_event(r.events[r.n_events - 2], NULL));
        }
        http_free(&r);
        srv_kill(&p);
    }
    if (srv_spawn(&p, "--ttft 2ms --itl 1ms --error-event-rate 1 --error-style openai") == 0) {
        http_do(&p, "/v1/completions", body, &r);
        CHECK(r.n_events >= 3);
        if (r.n_events >= 3) {
            CHECK_STR(r.events[r.n_events - 1], "[DONE]");
            CHECK(!strncmp(r.events[r.n_events - 2], "{\"error\":{", 10));
        }
        http_free(&r);
        srv_kill(&p);
    }
}

/* With fractional rates every request is classified by what the client saw, and the counts
 * equal what the server says it injected. A stall is told by causality, not by a gap: a stalled
 * request's last event cannot arrive before the 400 ms stall has passed, and a clean one of 1 + 6
 * x 1 ms would have to be held back 390 ms by a busy machine to look like one (a gap threshold
 * fails both ways there: a late token before the stall shortens its gap). */
TEST(server_faults_seeded_counts_match) {
    srv_proc p;
    if (srv_spawn(&p, "--ttft 1ms --itl 1ms --seed 7 --fail-rate 0.15 --status-429-rate 0.1 --drop-rate 0.15 "
                      "--error-event-rate 0.15 --stall-rate 0.2 --stall 400ms") < 0) return;
    int seen[5] = {0}, clean = 0;   /* 500, 429, drop, error_event, stall */
    http_result r = {0};
    for (int i = 0; i < 40; i++) {
        http_do(&p, "/v1/completions", "{\"prompt\":\"x\",\"max_tokens\":6,\"stream\":true}", &r);
        bool done = r.n_events && !strcmp(r.events[r.n_events - 1], "[DONE]");
        bool err_ev = r.n_events && !strncmp(r.events[r.n_events - 1], "error:", 6);
        double last_ms = r.n_events ? r.t_ms[r.n_events - 1] : 0;
        if (r.status == 500) seen[0]++;
        else if (r.status == 429) seen[1]++;
        else if (!done && !err_ev && r.curl_rc != 0) seen[2]++;
        else if (err_ev) seen[3]++;
        else if (done && last_ms >= 400 - 0.05) seen[4]++;
        else if (done) clean++;
        http_free(&r);
    }
    http_do(&p, "/metrics", NULL, &r);
    const char *m = r.body ? r.body : "";
    const char *kinds[5] = {"http_500", "http_429", "drop", "error_event", "stall"};
    int injected = 0;
    for (int k = 0; k < 5; k++) {
        CHECK_MSG(fault_count(m, kinds[k]) == seen[k], "%s: server injected %.0f, client saw %d", kinds[k],
                  fault_count(m, kinds[k]), seen[k]);
        injected += seen[k];
    }
    CHECK_EQ_INT(injected + clean, 40);
    CHECK(injected > 5 && clean > 5);          /* the seed gives a mix */
    http_free(&r);
    srv_kill(&p);
}

TEST(server_client_disconnect_cancels) {
    srv_proc p;
    if (srv_spawn(&p, "--ttft 5ms --itl 5ms") < 0) return;
    http_result r = {0};
    r.abort_after = 3;
    http_do(&p, "/v1/completions", "{\"prompt\":\"x\",\"max_tokens\":200,\"stream\":true}", &r);
    CHECK(r.curl_rc != 0);
    http_free(&r);
    /* the server notices on its next writes (every 5 ms) */
    CHECK_NEAR(wait_metric(&p, "dsperf_client_disconnects_total", 1, 2000), 1, 0);
    http_do(&p, "/metrics", NULL, &r);
    const char *m = r.body ? r.body : "";
    CHECK_NEAR(metric(m, "vllm:num_requests_running{model_name=\"deepseek-ai/DeepSeek-V2-Lite\"}"), 0, 0);
    CHECK_NEAR(metric(m, "dsperf_streams_open"), 0, 0);
    CHECK(metric(m, "vllm:generation_tokens_total{model_name=\"deepseek-ai/DeepSeek-V2-Lite\"}") < 100);
    http_free(&r);
    srv_kill(&p);
}

/* Runs a multi handle until every transfer on it has ended. */
static void multi_run(CURLM *m) {
    int running = 1;
    while (running) {
        curl_multi_perform(m, &running);
        if (running) curl_multi_poll(m, NULL, 0, 100, NULL);
    }
}

/* --itl 0: tokens back to back; many concurrent streams all complete with exact counts. */
TEST(server_itl0_many_streams) {
    srv_proc p;
    if (srv_spawn(&p, "--ttft 0 --itl 0") < 0) return;
    enum { N = 64, TOK = 200 };
    http_result *r = calloc(N, sizeof *r);
    CURLM *m = curl_multi_init();
    char url[128];
    snprintf(url, sizeof url, "%s/v1/completions", p.url);
    const char *body = "{\"prompt\":\"x\",\"max_tokens\":200,\"stream\":true,\"stream_options\":{\"include_usage\":true}}";
    for (int i = 0; i < N; i++) {
        CURL *c = curl_easy_init();
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &r[i]);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
        curl_multi_add_handle(m, c);
    }
    multi_run(m);
    CURLMsg *msg;
    int q;
    while ((msg = curl_multi_info_read(m, &q))) {
        curl_multi_remove_handle(m, msg->easy_handle);
        curl_easy_cleanup(msg->easy_handle);
    }
    curl_multi_cleanup(m);
    int complete = 0;
    for (int i = 0; i < N; i++) {
        complete += r[i].n_events == TOK + 2 && !strcmp(r[i].events[TOK + 1], "[DONE]");
        http_free(&r[i]);
    }
    CHECK_EQ_INT(complete, N);
    free(r);
    http_result mr = {0};
    http_do(&p, "/metrics", NULL, &mr);
    CHECK_NEAR(metric(mr.body ? mr.body : "", "vllm:generation_tokens_total{model_name=\"deepseek-ai/DeepSeek-V2-Lite\"}"), N * TOK, 0);
    http_free(&mr);
    srv_kill(&p);
}

/* A client that gives up while its request waits in the queue is noticed without any write. */
TEST(server_disconnect_while_queued) {
    srv_proc p;
    if (srv_spawn(&p, "--ttft 5ms --itl 5ms --capacity 1") < 0) return;
    req_thread a = {&p, "{\"prompt\":\"x\",\"max_tokens\":400,\"stream\":true}", {0}};
    pthread_t th;
    pthread_create(&th, NULL, run_req, &a);
    /* B goes only once A holds the one slot, however long a busy machine takes to get A there */
    CHECK_NEAR(wait_metric(&p, "vllm:num_requests_running{model_name=\"deepseek-ai/DeepSeek-V2-Lite\"}", 1, 20000), 1, 0);
    http_result r = {0};
    r.timeout_ms = 60;
    http_do(&p, "/v1/completions", "{\"prompt\":\"x\",\"max_tokens\":5,\"stream\":true}", &r);
    CHECK(r.curl_rc != 0);
    CHECK_EQ_INT(r.n_events, 0);
    http_free(&r);
    /* the sweep looks every 100 ms; A is still running (2 s) */
    CHECK_NEAR(wait_metric(&p, "dsperf_client_disconnects_total", 1, 20000), 1, 0);
    http_do(&p, "/metrics", NULL, &r);
    const char *m = r.body ? r.body : "";
    CHECK_NEAR(metric(m, "vllm:num_requests_waiting{model_name=\"deepseek-ai/DeepSeek-V2-Lite\"}"), 0, 0);
    http_free(&r);
    pthread_join(th, NULL);
    CHECK_EQ_INT(a.r.n_events, 401);
    http_free(&a.r);
    srv_kill(&p);
}

/* Many clients that give up while queued are all noticed, however many sweeps it takes: with
 * DSPERF_SERVE_SWEEP_BUDGET_NS=0 a sweep looks at 63 streams and the next resumes after them (the
 * budget that keeps one sweep from holding the loop at 100,000 streams), so 150 take several,
 * and streams freed meanwhile (the one a sweep stopped at included) do not break the walk. */
TEST(server_sweep_resumes_and_sees_every_queued_disconnect) {
    enum { N = 150 };
    setenv("DSPERF_SERVE_SWEEP_BUDGET_NS", "0", 1);
    srv_proc p;
    int rc = srv_spawn(&p, "--ttft 5ms --itl 5ms --capacity 1");
    unsetenv("DSPERF_SERVE_SWEEP_BUDGET_NS");
    if (rc < 0) return;
    req_thread a = {&p, "{\"prompt\":\"x\",\"max_tokens\":1000,\"stream\":true}", {0}};
    pthread_t th;
    pthread_create(&th, NULL, run_req, &a);
    CHECK_NEAR(wait_metric(&p, "vllm:num_requests_running{model_name=\"deepseek-ai/DeepSeek-V2-Lite\"}", 1, 20000), 1, 0);
    http_result *r = calloc(N, sizeof *r);
    CURLM *m = curl_multi_init();
    char url[128];
    snprintf(url, sizeof url, "%s/v1/completions", p.url);
    for (int i = 0; i < N; i++) {
        CURL *c = curl_easy_init();
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, "{\"prompt\":\"x\",\"max_tokens\":5,\"stream\":true}");
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &r[i]);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 1000L);   /* queued behind A (5 s): every one gives up */
        curl_multi_add_handle(m, c);
    }
    multi_run(m);
    CURLMsg *msg;
    int q, gave_up = 0;
    while ((msg = curl_multi_info_read(m, &q))) {
        gave_up += msg->data.result != CURLE_OK;
        curl_multi_remove_handle(m, msg->easy_handle);
        curl_easy_cleanup(msg->easy_handle);
    }
    curl_multi_cleanup(m);
    for (int i = 0; i < N; i++) http_free(&r[i]);
    free(r);
    CHECK_EQ_INT(gave_up, N);
    CHECK_NEAR(wait_metric(&p, "dsperf_client_disconnects_total", N, 20000), N, 0);
    http_result mr = {0};
    http_do(&p, "/metrics", NULL, &mr);
    CHECK_NEAR(metric(mr.body ? mr.body : "", "vllm:num_requests_waiting{model_name=\"deepseek-ai/DeepSeek-V2-Lite\"}"), 0, 0);
    http_free(&mr);
    pthread_join(th, NULL);
    CHECK_EQ_INT(a.r.n_events, 1001);
    http_free(&a.r);
    srv_kill(&p);
}

/* ---- command line and the in-process API ---- */

/* the exit code of `dsperf serve <args>`, output discarded */
static int run_status(const char *args) {
    char full[512];
    snprintf(full, sizeof full, "serve %s", args);
    return test_run(full, NULL, NULL);
}

TEST(server_cli_usage_errors) {
    CHECK_EQ_INT(run_status("--itl fast"), 2);
    CHECK_EQ_INT(run_status("--no-such-option 3"), 2);
    CHECK_EQ_INT(run_status("--engine warp"), 2);
    CHECK_EQ_INT(run_status("--drop-rate 1.5"), 2);
    CHECK_EQ_INT(run_status("--port 99999"), 2);
    CHECK_EQ_INT(run_status("--threads 2 --capacity 4"), 2);   /* a shared queue cannot be split */
    CHECK_EQ_INT(run_status("--threads 2 --engine sim"), 2);
    CHECK_EQ_INT(run_status("--threads 0"), 2);
    CHECK_EQ_INT(run_status("--help"), 0);
    CHECK_EQ_INT(run_status("--duration 100ms"), 0);     /* exits by itself, cleanly */
}

typedef struct { server *s; } thread_arg;
static void *run_server(void *arg) { server_run(((thread_arg *)arg)->s); return NULL; }

TEST(server_in_thread_api) {
    fixed_params fp;
    fixed_default_params(&fp);
    fp.ttft_ns = 1000000;
    fp.itl_ns = 1000000;
    char err[256];
    engine *e = engine_fixed_create(&fp, err, sizeof err);
    server_params sp;
    server_default_params(&sp);
    sp.model = "m";
    server *s = NULL;
    CHECK_EQ_INT(server_start(&s, &sp, &e, err, sizeof err), 0);
    if (!s) { engine_destroy(e); return; }
    srv_proc p = { .port = server_port(s) };
    snprintf(p.url, sizeof p.url, "http://127.0.0.1:%d", p.port);
    thread_arg ta = { s };
    pthread_t th;
    pthread_create(&th, NULL, run_server, &ta);
    http_result r = {0};
    http_do(&p, "/v1/chat/completions", "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":3,\"stream\":true}", &r);
    CHECK_EQ_INT(r.n_events, 5);
    http_free(&r);
    server_stop(s);
    pthread_join(th, NULL);
    server_free(s);
    engine_destroy(e);
}

TEST(server_ipv6_loopback) {
    srv_proc p;
    memset(&p, 0, sizeof p);
    if (test_serve_start(&p, "--host ::1 --ttft 1ms --itl 1ms") != 0) SKIP("no IPv6 loopback here");
    CHECK(!strncmp(p.url, "http://[::1]:", 13));
    http_result r = {0};
    http_do(&p, "/v1/completions", "{\"prompt\":\"x\",\"max_tokens\":2,\"stream\":true}", &r);
    CHECK_EQ_INT(r.n_events, 3);
    http_free(&r);
    srv_kill(&p);
}
