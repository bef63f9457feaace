/* Tests of kernel receive stamps: the stamp of a read is when the bytes arrived, not when they were
 * read. Each test holds the reader back on purpose (it does not read for 50 ms after the bytes were
 * written) and asserts by causality only: bytes cannot arrive before they are written
 * (stamp >= write start - RXSTAMP_SYNC_SLACK_NS) and a kernel stamp is taken before the held-back
 * read begins (stamp < read start); a stamp taken at read time is >= read start, so the tests fail
 * if the kernel's stamp is not the one used. No wall-clock duration is asserted. */
#include "harness.h"
#include "client/rxstamp.h"
#include "client/client.h"
#include "common/clock.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HOLD_NS (50 * NS_PER_MS)

/* A listening socket on 127.0.0.1, port 0; its port in *port. */
static int listen_loopback(int *port) {
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof a;
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 4) < 0 ||
        getsockname(l, (struct sockaddr *)&a, &al) < 0) { if (l >= 0) close(l); return -1; }
    *port = ntohs(a.sin_port);
    return l;
}

static int write_all(int fd, const char *s) {
    size_t n = strlen(s);
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w <= 0) return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* A connected loopback pair (client end stamped). The kernel turns receive stamping on for the
 * whole host from a workqueue when the first socket asks for it, so segments received just after
 * may carry no stamp: wait (bounded) until a probe byte comes stamped. A precondition of the
 * kernel, not a retry of the assertion. Keeping the pair open keeps stamping on. */
static int stamped_pair(int *cl_out, int *sv_out) {
    int port, l = listen_loopback(&port);
    if (l < 0) return -1;
    int cl = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int sv = -1;
    if (cl >= 0 && connect(cl, (struct sockaddr *)&a, sizeof a) == 0) sv = accept(l, NULL, NULL);
    close(l);
    if (sv < 0 || rxstamp_enable_socket(cl) != 0) { if (cl >= 0) close(cl); if (sv >= 0) close(sv); return -1; }
    rxstamp_thread(true);
    rxstamp_sync();
    char b;
    for (int i = 0; i < 500; i++) {   /* up to ~5 s on a busy machine */
        rxstamp_socket(cl);
        if (write(sv, "p", 1) != 1 || recv(cl, &b, 1, 0) != 1) break;
        if (rxstamp_last_ns()) { rxstamp_socket(-1); *cl_out = cl; *sv_out = sv; return 0; }
        clock_sleep_ns(10 * NS_PER_MS);
    }
    rxstamp_thread(false);
    close(cl);
    close(sv);
    return -1;
}

TEST(rxstamp_read_carries_kernel_arrival_time) {
    int cl = -1, sv = -1;
    CHECK_MSG(stamped_pair(&cl, &sv) == 0, "the kernel gave no receive stamp on a loopback TCP socket within 5 s");
    if (cl < 0) return;
    char buf[64];

    /* written, held back, then read on the stamped socket: the arrival, not the read */
    unsigned long before = rxstamp_count();
    int64_t w0 = clock_now_ns();
    CHECK(write_all(sv, "data: one\n\n") == 0);
    clock_sleep_ns(HOLD_NS);
    int64_t r0 = clock_now_ns();
    rxstamp_socket(cl);
    CHECK(recv(cl, buf, sizeof buf, 0) == 11);
    int64_t st = rxstamp_last_ns();
    CHECK_EQ_INT(rxstamp_count(), before + 1);
    CHECK_MSG(st >= w0 - RXSTAMP_SYNC_SLACK_NS, "stamp %lld ns before the write began", (long long)(w0 - st));
    CHECK_MSG(st > 0 && st < r0, "stamp %lld ns after the read began: not the kernel's", (long long)(st - r0));

    /* the same socket, but not the one marked as stamped: an ordinary read, no stamp */
    CHECK(write_all(sv, "x") == 0);
    rxstamp_socket(-1);
    CHECK(recv(cl, buf, sizeof buf, 0) == 1);
    CHECK_EQ_INT(rxstamp_last_ns(), 0);

    /* stamping off for the thread: no stamp even on the socket */
    rxstamp_thread(false);
    CHECK(write_all(sv, "y") == 0);
    rxstamp_socket(cl);
    CHECK(recv(cl, buf, sizeof buf, 0) == 1);
    CHECK_EQ_INT(rxstamp_last_ns(), 0);
    close(sv);
    close(cl);
}

/* ---- through the client: a stream whose second chunk is read late on purpose ---- */

typedef struct {
    int listen_fd;
    int go[2], told[2];        /* test → server: next step; server → test: step done */
    int64_t w1_ns;             /* just before chunk 2 was written */
} stream_server;

static void wait_byte(int fd) { char b; while (read(fd, &b, 1) < 0) {} }
static void send_byte(int fd) { char b = 1; while (write(fd, &b, 1) < 0) {} }

static const char *chunk(int i) {
    static char b[4][160];
    snprintf(b[i], sizeof b[i], "data: {\"choices\":[{\"index\":0,\"text\":\" w%d\",\"finish_reason\":%s}]}\n\n", i,
             i == 2 ? "\"length\"" : "null");
    return b[i];
}

static void *serve_one(void *arg) {
    stream_server *s = arg;
    int fd = accept(s->listen_fd, NULL, NULL);
    if (fd < 0) return NULL;
    /* the request: head, then Content-Length bytes of body */
    char req[8192];
    size_t got = 0;
    long body = -1;
    char *eoh = NULL;
    while (got < sizeof req - 1) {
        ssize_t n = read(fd, req + got, sizeof req - 1 - got);
        if (n <= 0) break;
        got += (size_t)n;
        req[got] = 0;
        if (!eoh && (eoh = strstr(req, "\r\n\r\n"))) {
            char *cl = strcasestr(req, "content-length:");
            body = cl ? atol(cl + 15) : 0;
        }
        if (eoh && (long)(got - (size_t)(eoh + 4 - req)) >= body) break;
    }
    write_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n");
    write_all(fd, chunk(0));
    wait_byte(s->go[0]);
    s->w1_ns = clock_now_ns();
    write_all(fd, chunk(1));
    send_byte(s->told[1]);
    wait_byte(s->go[0]);
    write_all(fd, chunk(2));
    write_all(fd, "data: [DONE]\n\n");
    close(fd);
    return NULL;
}

/* One stream against serve_one; returns the record's chunk 2 time, the write time and the time
 * the client was let read again. */
static int run_held_stream(int64_t *chunk1_ns, int64_t *w1_ns, int64_t *resume_ns, int64_t *end_ns) {
    stream_server s = {0};
    int port;
    s.listen_fd = listen_loopback(&port);
    if (s.listen_fd < 0 || pipe(s.go) || pipe(s.told)) return -1;
    pthread_t th;
    pthread_create(&th, NULL, serve_one, &s);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    client_opts o = { .base_url = url, .api = OPENAI_COMPLETIONS, .model = "m", .timeout_ns = 60 * NS_PER_S };
    recset rs;
    recset_init(&rs);
    recset_add(&rs);
    char err[256];
    client *c = client_new(&o, &rs, NULL, NULL, err, sizeof err);
    int rc = -1;
    if (c) {
        dataset_item it = { .prompt = "hi", .in_tokens = 1, .max_tokens = 3, .timestamp_ns = -1, .group = -1, .cacheable_tokens = -1 };
        client_submit(c, 0, &it);
        int64_t deadline = clock_now_ns() + 60 * NS_PER_S;
        while (rs.v[0].n_chunks < 1 && client_in_flight(c) && clock_now_ns() < deadline) client_poll(c, clock_now_ns() + 10 * NS_PER_MS);
        send_byte(s.go[1]);          /* chunk 2 is written ... */
        wait_byte(s.told[0]);
        clock_sleep_ns(HOLD_NS);     /* ... and the client does not read for a while */
        *resume_ns = clock_now_ns();
        /* chunk 3 only once chunk 2 is read: one read of both would carry chunk 3's arrival (TCP
         * stamps a read with its last segment's) */
        while (rs.v[0].n_chunks < 2 && client_in_flight(c) && clock_now_ns() < deadline) client_poll(c, clock_now_ns() + 10 * NS_PER_MS);
        send_byte(s.go[1]);
        while (client_in_flight(c) && clock_now_ns() < deadline) client_poll(c, clock_now_ns() + 10 * NS_PER_MS);
        if (rs.v[0].n_chunks == 3 && rs.v[0].outcome == REC_OK) rc = 0;
        else fprintf(stderr, "    %u chunks, outcome %d, %s\n", rs.v[0].n_chunks, rs.v[0].outcome, rs.v[0].error ? rs.v[0].error : "");
        *chunk1_ns = rs.v[0].n_chunks > 1 ? rs.v[0].chunk_ns[1] : 0;
        *end_ns = rs.v[0].end_ns;
        client_free(c);
    } else fprintf(stderr, "    %s\n", err);
    pthread_join(th, NULL);
    *w1_ns = s.w1_ns;
    close(s.listen_fd);
    close(s.go[0]); close(s.go[1]); close(s.told[0]); close(s.told[1]);
    recset_free(&rs);
    return rc;
}

TEST(client_stamps_chunks_with_their_arrival_not_the_read) {
    int cl = -1, sv = -1;   /* held open: the kernel's stamping stays on for the client's connection */
    CHECK_MSG(stamped_pair(&cl, &sv) == 0, "the kernel gave no receive stamp on a loopback TCP socket within 5 s");
    if (cl < 0) return;
    int64_t c1, w1, resume, end;
    CHECK(run_held_stream(&c1, &w1, &resume, &end) == 0);
    CHECK_MSG(c1 >= w1 - RXSTAMP_SYNC_SLACK_NS, "chunk stamped %lld ns before it was written", (long long)(w1 - c1));
    CHECK_MSG(c1 < resume, "chunk stamped %lld ns after the client was let read: the read time, not the arrival",
              (long long)(c1 - resume));
    /* the last chunk came after the hold: the transfer's end is at or after it */
    CHECK(end >= resume - RXSTAMP_SYNC_SLACK_NS);
    close(cl);
    close(sv);
}

/* With DSPERF_CLIENT_RXSTAMP=0 the client stamps when libcurl hands the bytes over: after the
 * hold. (The comparison shows the test above tells the two apart.) */
TEST(client_without_kernel_stamps_stamps_the_read) {
    setenv("DSPERF_CLIENT_RXSTAMP", "0", 1);
    int64_t c1, w1, resume, end;
    CHECK(run_held_stream(&c1, &w1, &resume, &end) == 0);
    CHECK_MSG(c1 >= resume, "chunk stamped %lld ns before the client read it", (long long)(resume - c1));
    unsetenv("DSPERF_CLIENT_RXSTAMP");
}
