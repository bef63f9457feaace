/* units — parsers for durations, rates, sizes and numbers typed on the command line. */
#include "common/units.h"
#include <ctype.h>
#include "common/clock.h"
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>

static int parse_number_prefix(const char *s, double *v, const char **rest) {
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (end == s || errno || !isfinite(x)) return -1;
    *v = x;
    *rest = end;
    return 0;
}

int units_parse_duration_ns(const char *s, int64_t *out_ns) {
    double v;
    const char *u;
    if (parse_number_prefix(s, &v, &u) < 0 || v < 0) return -1;
    double mul;
    if (!*u || !strcmp(u, "s")) mul = 1e9;
    else if (!strcmp(u, "ms")) mul = 1e6;
    else if (!strcmp(u, "us") || !strcmp(u, "µs")) mul = 1e3;
    else if (!strcmp(u, "ns")) mul = 1;
    else if (!strcmp(u, "m") || !strcmp(u, "min")) mul = 60e9;
    else if (!strcmp(u, "h")) mul = 3600e9;
    else return -1;
    double ns = v * mul;
    if (ns > 9.2e18) return -1;
    *out_ns = (int64_t)llround(ns);
    return 0;
}

int units_parse_rate_per_s(const char *s, double *out_per_s) {
    double v;
    const char *u;
    if (parse_number_prefix(s, &v, &u) < 0 || v < 0) return -1;
    double div;
    if (!*u || !strcmp(u, "/s")) div = 1;
    else if (!strcmp(u, "/m") || !strcmp(u, "/min")) div = 60;
    else if (!strcmp(u, "/h")) div = 3600;
    else return -1;
    *out_per_s = v / div;
    return 0;
}

int units_parse_int(const char *s, long long min, long long max, long long *out) {
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end || errno || v < min || v > max) return -1;
    *out = v;
    return 0;
}

int units_parse_double(const char *s, double *out) {
    double v;
    const char *u;
    if (parse_number_prefix(s, &v, &u) < 0 || *u) return -1;
    *out = v;
    return 0;
}

int units_parse_bytes(const char *s, int64_t *out_bytes) {
    double v;
    const char *u;
    if (parse_number_prefix(s, &v, &u) < 0 || v < 0) return -1;
    static const struct { const char *suffix; double mul; } tab[] = {
        {"", 1}, {"B", 1}, {"K", 1e3}, {"KB", 1e3}, {"M", 1e6}, {"MB", 1e6}, {"G", 1e9}, {"GB", 1e9},
        {"T", 1e12}, {"TB", 1e12}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
        {"TiB", 1099511627776.0},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        if (!strcasecmp(u, tab[i].suffix) && (strlen(u) < 3 || !strcmp(u, tab[i].suffix))) {
            *out_bytes = (int64_t)llround(v * tab[i].mul);
            return 0;
        }
    }
    return -1;
}

char *units_format_duration(int64_t ns, char *buf, size_t len) {
    double a = fabs((double)ns);
    if (a >= 60e9) snprintf(buf, len, "%.1fmin", ns / 60e9);
    else if (a >= 1e9) snprintf(buf, len, "%.2fs", ns / 1e9);
    else if (a >= 1e6) snprintf(buf, len, "%.1fms", ns / 1e6);
    else if (a >= 1e3) snprintf(buf, len, "%.0fus", ns / 1e3);
    else snprintf(buf, len, "%lldns", (long long)ns);
    return buf;
}

char *units_copy_trimmed(char *buf, size_t cap, const char *s, size_t len) {
    while (len && isspace((unsigned char)*s)) { s++; len--; }
    while (len && isspace((unsigned char)s[len - 1])) len--;
    if (len >= cap) len = cap - 1;
    memcpy(buf, s, len);
    buf[len] = 0;
    return buf;
}
