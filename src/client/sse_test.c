/* Tests for the SSE parser: split reads, CRLF/CR, comments, multi-line data, error lines, caps. */
#include "harness.h"
#include "client/sse.h"
#include <string.h>
#include <stdlib.h>

typedef struct { int n; char data[16][256]; char err[256]; char ev[64]; } collected;

static int collect(void *ctx, const sse_event *e) {
    collected *c = ctx;
    if (c->n < 16) {
        snprintf(c->data[c->n], 256, "%s", e->data ? e->data : "(none)");
        if (e->error) snprintf(c->err, sizeof c->err, "%s", e->error);
        if (e->event) snprintf(c->ev, sizeof c->ev, "%s", e->event);
    }
    c->n++;
    return 0;
}

/* Feeds the stream in every possible two-piece split and checks the result is the same. */
static void check_all_splits(const char *stream, int want_n, const char *const *want) {
    size_t len = strlen(stream);
    for (size_t cut = 0; cut <= len; cut++) {
        sse_parser p;
        sse_init(&p, 4096);
        collected c = {0};
        CHECK(sse_feed(&p, stream, cut, collect, &c) == 0);
        CHECK(sse_feed(&p, stream + cut, len - cut, collect, &c) == 0);
        CHECK(sse_finish(&p, collect, &c) == 0);
        CHECK_MSG(c.n == want_n, "cut %zu: %d events, want %d", cut, c.n, want_n);
        for (int i = 0; i < want_n && i < c.n; i++) CHECK_STR(c.data[i], want[i]);
        sse_free(&p);
    }
}

TEST(sse_basic_and_split_reads) {
    const char *want[] = { "{\"a\":1}", "{\"b\":2}", "[DONE]" };
    check_all_splits("data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n", 3, want);
}

TEST(sse_crlf_and_cr_line_endings) {
    const char *want[] = { "x", "y", "z" };
    check_all_splits("data: x\r\n\r\ndata: y\r\rdata: z\n\n", 3, want);
}

TEST(sse_comments_keepalives_and_unknown_fields) {
    const char *want[] = { "one", "two" };
    check_all_splits(": ping\n\n: keep-alive\nid: 7\nretry: 100\ndata: one\n\n:\n\ndata:two\n\n", 2, want);
}

TEST(sse_multiline_data_joined) {
    const char *want[] = { "line1\nline2\n" };
    check_all_splits("data: line1\ndata: line2\ndata\n\n", 1, want);
}

TEST(sse_error_line_llamacpp) {
    sse_parser p;
    sse_init(&p, 4096);
    collected c = {0};
    const char *s = "data: {\"x\":1}\n\nerror: {\"code\":500,\"message\":\"boom\"}\n\n";
    CHECK(sse_feed(&p, s, strlen(s), collect, &c) == 0);
    CHECK_EQ_INT(c.n, 2);
    CHECK_STR(c.data[1], "(none)");
    CHECK_STR(c.err, "{\"code\":500,\"message\":\"boom\"}");
    sse_free(&p);
}

TEST(sse_event_name_and_unterminated_last_event) {
    sse_parser p;
    sse_init(&p, 4096);
    collected c = {0};
    const char *s = "event: message\ndata: tail";
    CHECK(sse_feed(&p, s, strlen(s), collect, &c) == 0);
    CHECK_EQ_INT(c.n, 0);
    CHECK(sse_finish(&p, collect, &c) == 0);
    CHECK_EQ_INT(c.n, 1);
    CHECK_STR(c.data[0], "tail");
    CHECK_STR(c.ev, "message");
    sse_free(&p);
}

TEST(sse_bom_and_byte_at_a_time) {
    const char *s = "\xEF\xBB\xBF" "data: a\n\ndata: b\n\n";
    sse_parser p;
    sse_init(&p, 4096);
    collected c = {0};
    for (size_t i = 0; i < strlen(s); i++) CHECK(sse_feed(&p, s + i, 1, collect, &c) == 0);
    CHECK_EQ_INT(c.n, 2);
    CHECK_STR(c.data[0], "a");
    CHECK_STR(c.data[1], "b");
    sse_free(&p);
}

TEST(sse_oversized_event_is_an_error) {
    sse_parser p;
    sse_init(&p, 64);
    char big[200];
    memset(big, 'x', sizeof big);
    CHECK(sse_feed(&p, "data: ", 6, collect, NULL) == 0);
    CHECK(sse_feed(&p, big, sizeof big, collect, NULL) == -1);
    sse_free(&p);
}
