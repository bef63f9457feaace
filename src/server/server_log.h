/* server_log — `dsperf serve --log-prompts FILE`: one JSON line per request the server accepted,
 * with what it received, so a test (or a person) can check what a client really sent: shared
 * prompt blocks byte for byte, lengths, the order and times of arrival. Internal to src/server. */
#ifndef DSP_SERVER_LOG_H
#define DSP_SERVER_LOG_H
#include <stddef.h>
#include <stdint.h>

typedef struct prompt_log prompt_log;

/* Opens (truncates) path. NULL with a one-line err when it cannot be written. */
prompt_log *prompt_log_open(const char *path, char *err, size_t errlen);
/* {"seq": arrival order from 0, "loop": event loop, "t_ns": CLOCK_MONOTONIC at arrival,
 *  "path": "/v1/completions" | "/v1/chat/completions", "prompt_tokens": what the server counted,
 *  "request": the request body as received (re-serialised compactly)}. Safe from every loop. */
void prompt_log_write(prompt_log *l, int loop, int64_t t_ns, const char *path, int32_t prompt_tokens,
                      const char *body, size_t len);
void prompt_log_close(prompt_log *l);
#endif
