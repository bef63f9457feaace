/* log — the edge where result codes become one clear line for a person. Inside, functions return
 * codes; the command front-ends call these to say what went wrong and how to fix it. */
#ifndef DSP_LOG_H
#define DSP_LOG_H

enum { EXIT_OK = 0, EXIT_RUN_FAILED = 1, EXIT_USAGE = 2 };

/* "dsperf: <message>" on stderr, one line. */
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* 1 silences log_info (for --quiet and for tests); 2 silences every line (the followers of a
 * multi-host job while they parse the same options rank 0 reports on). */
void log_set_quiet(int quiet);
/* Words after "dsperf: " on every line (e.g. "rank 3 (host-b): " in a multi-host job); NULL none. */
void log_set_prefix(const char *prefix);
#endif
