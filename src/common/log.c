/* log — one-line messages on stderr, prefixed with the program name. */
#include "common/log.h"
#include "common/redact.h"
#include <stdio.h>
#include <stdarg.h>

static int quiet;
static char prefix[96];

void log_set_quiet(int q) { quiet = q; }
void log_set_prefix(const char *p) { snprintf(prefix, sizeof prefix, "%s", p ? p : ""); }

/* Messages quote URLs, headers and server commands: the credentials in them are masked here. */
static void vsay(const char *tag, const char *fmt, va_list ap) {
    char line[2048], safe[2048];
    vsnprintf(line, sizeof line, fmt, ap);
    fprintf(stderr, "dsperf: %s%s%s\n", prefix, tag, redact_into(safe, sizeof safe, line));
}

void log_error(const char *fmt, ...) {
    if (quiet >= 2) return;
    va_list ap; va_start(ap, fmt); vsay("error: ", fmt, ap); va_end(ap);
}
void log_warn(const char *fmt, ...) {
    if (quiet >= 2) return;
    va_list ap; va_start(ap, fmt); vsay("warning: ", fmt, ap); va_end(ap);
}
void log_info(const char *fmt, ...) {
    if (quiet) return;
    va_list ap; va_start(ap, fmt); vsay("", fmt, ap); va_end(ap);
}
