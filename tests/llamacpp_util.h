/* llamacpp_util — the real llama.cpp llama-server in tests: where `make real-engine` put it and
 * its models (build-engine/, or $DSPERF_ENGINE_DIR), starting it on a loopback port the kernel
 * picks, waiting until its model is loaded, and stopping it. Tests that need it start with
 * LLAMA_REQUIRE(): without the engine they skip, and under CI=true that skip fails unless the
 * shared engine source itself is absent (then no test can build it). */
#ifndef DSP_LLAMACPP_UTIL_H
#define DSP_LLAMACPP_UTIL_H
#include <sys/types.h>

typedef struct {
    pid_t pid;
    int port;
    char url[64];        /* http://127.0.0.1:PORT */
    char log_path[512];  /* the server's stdout and stderr */
} test_llama;

/* The engine folder ($DSPERF_ENGINE_DIR, default build-engine). */
const char *test_llama_dir(void);
/* Path of build-engine/models/NAME.gguf (static; copy before the next call), NULL when absent. */
const char *test_llama_model(const char *name);
/* 1 when llama-server and the tiny model are there. Otherwise 0 and *why says what is missing;
 * *shared_absent is 1 when ../shared/engines itself is missing (nothing here could build it). */
int test_llama_available(const char **why, int *shared_absent);

/* Starts `llama-server -m MODEL --host 127.0.0.1 --port 0 ARGS` (args split on spaces), waits for
 * its port and for /health to answer 200 (model loaded), at most 180 s. 0 ok, -1 on failure (the
 * log's tail is printed to stderr). */
int test_llama_start(test_llama *s, const char *model_name, const char *args);
/* SIGTERM (this version aborts after its clean-up: exit 134 is expected), SIGKILL after 10 s. */
void test_llama_stop(test_llama *s);

#define LLAMA_REQUIRE() do { const char *_why; int _absent; \
    if (!test_llama_available(&_why, &_absent)) { \
        if (_absent) { SKIP_NO_SHARED_DATA("../engines/llama.cpp-c392e50-src.tar.gz"); } \
        else { SKIP(_why); } } } while (0)
#endif
