/* Tests of `dsperf serve --max-body`: a request body over the cap is answered 413 without being kept
 * (announced by Content-Length or sent chunked), one under it is served, and the server goes on
 * serving afterwards. The real binary on a free loopback port, driven with libcurl. */
#include "harness.h"
#include "testutil.h"
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

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
