/* send_floor — the floor under a burst's spread on this host (scripts/bench_burst.sh): N loopback
 * TCP connections, a thread that drains them (the server's side, on epoll), and N requests of the
 * client's size sent back to back from one thread with nothing else in between, each stamped just
 * before its send as the client stamps send_ns. The spread (first stamp to last) is what the sends
 * alone cost: on loopback each send also runs the receiver's TCP path in the sender's context, so
 * no client on one thread leaves a burst faster than this. Beside it, the same N sends submitted in
 * one io_uring_enter (one system call instead of N; the enter's duration, since no send of a batch
 * can be stamped on its own from user space).
 *
 *   build/send_floor [N=1024] [ROUNDS=5] [BYTES=600]
 * prints the medians over ROUNDS: "send_floor N=... each_us=... spread_us=... uring_us=..." */
#include "metrics/stats.h"
#include <liburing.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int ep;

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void *drain(void *arg) {
    (void)arg;
    struct epoll_event ev[256];
    char buf[16384];
    for (;;) {
        int n = epoll_wait(ep, ev, 256, -1);
        for (int i = 0; i < n; i++) while (read(ev[i].data.fd, buf, sizeof buf) > 0) {}
    }
    return NULL;
}

static int cmp_ll(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1024, rounds = argc > 2 ? atoi(argv[2]) : 5;
    size_t bytes = argc > 3 ? (size_t)atol(argv[3]) : 600;
    if (n < 1 || rounds < 1 || bytes < 1 || bytes > 65536) { fprintf(stderr, "usage: send_floor [N] [ROUNDS] [BYTES <= 65536]\n"); return 2; }
    int *cli = calloc((size_t)n, sizeof *cli);
    long long *stamp = calloc((size_t)n, sizeof *stamp), *spread = calloc((size_t)rounds, sizeof *spread),
              *uring = calloc((size_t)rounds, sizeof *uring);
    char *req = malloc(bytes);
    if (!cli || !stamp || !spread || !uring || !req) { fprintf(stderr, "send_floor: out of memory\n"); return 1; }
    memset(req, 'x', bytes);
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof a;
    if (l < 0 || bind(l, (struct sockaddr *)&a, al) || listen(l, 4096) || getsockname(l, (struct sockaddr *)&a, &al)) {
        fprintf(stderr, "send_floor: cannot listen on loopback: %s\n", strerror(errno));
        return 1;
    }
    ep = epoll_create1(0);
    for (int i = 0; i < n; i++) {
        int one = 1;
        cli[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (cli[i] < 0 || connect(cli[i], (struct sockaddr *)&a, al)) {
            fprintf(stderr, "send_floor: connection %d: %s (ulimit -n?)\n", i, strerror(errno));
            return 1;
        }
        setsockopt(cli[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fcntl(cli[i], F_SETFL, O_NONBLOCK);
        int s = accept(l, NULL, NULL);
        if (s < 0) { fprintf(stderr, "send_floor: accept: %s\n", strerror(errno)); return 1; }
        fcntl(s, F_SETFL, O_NONBLOCK);
        struct epoll_event e = { .events = EPOLLIN, .data.fd = s };
        epoll_ctl(ep, EPOLL_CTL_ADD, s, &e);
    }
    pthread_t th;
    pthread_create(&th, NULL, drain, NULL);
    struct io_uring ring;
    bool have_ring = io_uring_queue_init((unsigned)n, &ring, 0) == 0;
    long long each_total = 0;
    for (int r = 0; r < rounds; r++) {
        usleep(100000);   /* the drain thread asleep again, as a server between bursts */
        for (int i = 0; i < n; i++) {
            stamp[i] = now_ns();
            send(cli[i], req, bytes, MSG_NOSIGNAL);
        }
        long long end = now_ns();
        spread[r] = stamp[n - 1] - stamp[0];
        each_total += end - stamp[0];
        uring[r] = -1;
        if (!have_ring) continue;
        usleep(100000);
        for (int i = 0; i < n; i++) io_uring_prep_send(io_uring_get_sqe(&ring), cli[i], req, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
        long long t0 = now_ns();
        io_uring_submit_and_wait(&ring, (unsigned)n);
        uring[r] = now_ns() - t0;
        struct io_uring_cqe *cqe;
        unsigned head, k = 0;
        io_uring_for_each_cqe(&ring, head, cqe) k++;
        io_uring_cq_advance(&ring, k);
    }
    qsort(spread, (size_t)rounds, sizeof *spread, cmp_ll);
    qsort(uring, (size_t)rounds, sizeof *uring, cmp_ll);
    /* the medians by the project's one percentile rule (metrics/stats.h) */
    double *sd = calloc((size_t)rounds, sizeof *sd), *ud = calloc((size_t)rounds, sizeof *ud);
    if (!sd || !ud) return 1;
    for (int r = 0; r < rounds; r++) { sd[r] = (double)spread[r]; ud[r] = (double)uring[r]; }
    printf("send_floor N=%d bytes=%zu each_us=%.2f spread_us=%.0f uring_us=%.0f\n", n, bytes,
           each_total / 1e3 / rounds / n, stats_percentile_sorted(sd, (size_t)rounds, 50) / 1e3,
           have_ring ? stats_percentile_sorted(ud, (size_t)rounds, 50) / 1e3 : -1.0);
    free(sd);
    free(ud);
    return 0;
}
