/* bench_result_queue.c: llama-server's result queue (c392e50 examples/server/server.cpp,
 * server_response) replicated, to time what the simulator's ggml_wake_s stands for. B streams each
 * wait on one condition variable for their own result (recv: lock, wait until the queue is not
 * empty, scan it for their task id); a step's main thread samples each sequence (50 us of work) and
 * sends its token (send: lock, push, notify_all). Prints the main thread's time per step beyond the
 * sampling, per B, and that over B x B (the streams woken a step).
 *
 *   cc -O2 -pthread scripts/bench_result_queue.c -o /tmp/bench_result_queue && /tmp/bench_result_queue
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_B = 64, STEPS = 200 };
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int queue[MAX_B * 4], n_queue, stop;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void *stream(void *arg) {
    int id = (int)(long)arg;
    for (;;) {
        pthread_mutex_lock(&mu);
        while (!n_queue && !stop) pthread_cond_wait(&cv, &mu);
        if (stop) { pthread_mutex_unlock(&mu); return NULL; }
        for (int i = 0; i < n_queue; i++)
            if (queue[i] == id) {   /* its token: take it, then write the chunk (a little work) */
                memmove(queue + i, queue + i + 1, (size_t)(n_queue - i - 1) * sizeof *queue);
                n_queue--;
                break;
            }
        pthread_mutex_unlock(&mu);
    }
}

static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

int main(void) {
    static const int bs[] = {1, 2, 4, 8, 16, 32};
    for (size_t k = 0; k < sizeof bs / sizeof bs[0]; k++) {
        int B = bs[k];
        pthread_t th[MAX_B];
        stop = 0, n_queue = 0;
        for (int i = 0; i < B; i++) pthread_create(&th[i], NULL, stream, (void *)(long)i);
        struct timespec gpu = {0, 10 * 1000 * 1000}, settle = {0, 100 * 1000 * 1000};
        nanosleep(&settle, NULL);
        double t[STEPS], mean = 0;
        for (int s = 0; s < STEPS; s++) {
            double a = now_s(), sampling = 0;
            for (int b = 0; b < B; b++) {
                double s0 = now_s();
                while (now_s() - s0 < 50e-6) {}   /* sampling this sequence */
                sampling += now_s() - s0;
                pthread_mutex_lock(&mu);
                queue[n_queue++] = b;
                pthread_cond_broadcast(&cv);
                pthread_mutex_unlock(&mu);
            }
            t[s] = now_s() - a - sampling;
            mean += t[s] / STEPS;
            nanosleep(&gpu, NULL);   /* the next step's decode: the streams drain */
        }
        pthread_mutex_lock(&mu);
        stop = 1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
        for (int i = 0; i < B; i++) pthread_join(th[i], NULL);
        qsort(t, STEPS, sizeof *t, cmp);
        printf("B %2d: the queue's time a step mean %8.1f us, median %8.1f us; mean / B^2 %6.2f us\n", B, mean * 1e6,
               t[STEPS / 2] * 1e6, mean * 1e6 / (B * B));
    }
    return 0;
}
