/* log — the edge where result codes become one clear line for a person. Inside, functions return
 * codes; the command front-ends call these to say what went wrong and how to fix it. */
#ifndef DSP_LOG_H
#define DSP_LOG_H

enum { EXIT_OK = 0, EXIT_RUN_FAILED = 1, EXIT_USAGE = 2 };

/* "dsperf: <message>" on stderr, one line. */
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Silences log_info (for --quiet and for tests). */
void log_set_quiet(int quiet);
#endif
