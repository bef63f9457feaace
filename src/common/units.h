/* units — parsing and printing of the quantities users type: durations ("500ms", "30s", "5m",
 * "2h", "20us"; a bare number is seconds), rates ("20/s", "1200/m", "3.5"), counts, fractions.
 * Every parser returns 0 on success and -1 on malformed input, leaving *out untouched. */
#ifndef DSP_UNITS_H
#define DSP_UNITS_H
#include <stdint.h>
#include <stddef.h>

int units_parse_duration_ns(const char *s, int64_t *out_ns);
int units_parse_rate_per_s(const char *s, double *out_per_s);
int units_parse_int(const char *s, long long min, long long max, long long *out);
int units_parse_double(const char *s, double *out);
int units_parse_bytes(const char *s, int64_t *out_bytes);   /* "80GB", "141GiB", "4096" */
/* "123.4ms", "2.10s", "950us" — picks a readable unit. Writes into buf, returns buf. */
char *units_format_duration(int64_t ns, char *buf, size_t len);
/* One item of a list the user typed (s[0..len), e.g. a gate rule between commas) copied into buf
 * (cut to cap - 1 bytes) without its surrounding white space; returns buf. */
char *units_copy_trimmed(char *buf, size_t cap, const char *s, size_t len);
#endif
