/* testutil — helpers for integration tests: run the dsperf binary as a child process (a server
 * in the background, or a command to completion), read its results, and a scripted raw-socket
 * HTTP server that replays byte-exact responses (for real-server quirks). Loopback only. */
#ifndef DSP_TESTUTIL_H
#define DSP_TESTUTIL_H
#include <sys/types.h>
#include <jansson.h>
#include <stddef.h>

typedef struct {
    pid_t pid;
    int port;
    char url[64];
} test_server;

/* Starts `dsperf serve --port 0 <args>` and waits for its "listening on" line. 0 ok. */
int test_serve_start(test_server *s, const char *args);
/* SIGTERM, then SIGKILL after 2 s. Returns the server's exit code (0: it stopped cleanly), or -1
 * when it had to be killed or was not running. */
int test_serve_stop(test_server *s);

/* Runs `dsperf <args>` to completion (args split on spaces; single quotes group). Captures stdout
 * and stderr into malloc'd strings when the pointers are non-NULL. Returns the exit code; a
 * command still running after $DSPERF_TEST_CMD_TIMEOUT seconds (default 240) is killed and
 * reported as 124, like timeout(1). */
int test_run(const char *args, char **out, char **err);
/* Same, but sends SIGINT after delay_ms. */
int test_run_interrupt(const char *args, int delay_ms, char **out, char **err);
/* Same, but sends SIGINT as soon as `path` exists and is not empty (a file the command writes
 * part-way, such as a sweep file after its first level, or a server's log once it listens): no
 * guess at how long a busy machine takes to get there. */
int test_run_interrupt_when_file(const char *args, const char *path, char **out, char **err);
/* The same, keeping a copy of PATH as it was when it appeared (before the interrupt) in COPY_TO. */
int test_run_interrupt_when_file_kept(const char *args, const char *path, const char *copy_to, char **out, char **err);
/* Same, but sends SIGINT once the `dsperf serve` s has answered at least min_done requests and has
 * at least min_running in flight (its /metrics, polled): the run is interrupted in the state the
 * test needs however slowly a busy machine gets there. */
int test_run_interrupt_when_served(const char *args, const test_server *s, int min_done, int min_running, char **out,
                                   char **err);

/* Runs `dsperf <args>` through the shell (quotes and redirections work), stdout and stderr merged
 * into out (NUL-terminated, truncated to cap). Returns the exit code (-1 if it did not run). */
int test_run_into(const char *args, char *out, size_t cap);
/* The same, returning the whole merged output (malloc'd) and the exit code in *status. */
char *test_run_merged(const char *args, int *status);

/* qsort comparator for doubles, and numpy's linear-interpolation quantile of sorted values. */
int test_cmp_double(const void *a, const void *b);
double test_quantile_sorted(const double *v, size_t n, double q);

/* Loads a JSON file (NULL on failure). */
json_t *test_load_json(const char *path);
double test_num(const json_t *o, const char *key);   /* NAN when absent */

/* GET url → body (malloc'd) or NULL. */
char *test_http_get(const char *url);
/* Value of a Prometheus sample line "name{labels} value" whose text starts with prefix; NAN if absent. */
double test_prom_value(const char *text, const char *line_prefix);

/* A scripted server: answers GET /v1/models with one model, and every POST with `response`
 * (raw bytes: status line, headers, body), written in pieces of `piece` bytes with a short pause
 * between pieces so the client sees split reads. Runs in a thread until test_script_stop. */
typedef struct test_script test_script;
test_script *test_script_start(const char *response, size_t len, size_t piece, int *port);
void test_script_stop(test_script *s);
/* Every request the scripted server has read so far (heads and bodies, in order, at most 1 MiB),
 * malloc'd: what the client really sent. */
char *test_script_requests(test_script *s);
/* Answers requests whose head starts with request_prefix ("GET /props", "GET /metrics",
 * "GET /v1/models") with response (raw bytes) instead: a real server's other endpoints, replayed. */
void test_script_route(test_script *s, const char *request_prefix, const char *response, size_t len);
#endif
