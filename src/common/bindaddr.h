/* bindaddr — the servers dsperf starts (serve, monitor's exporter, gpu --prom) have no
 * authentication. They bind loopback by default; binding any other address is allowed, and says
 * plainly that whoever can reach it can use it. */
#ifndef DSP_BINDADDR_H
#define DSP_BINDADDR_H
#include <stdbool.h>

/* Whether every address host names is a loopback one (127.0.0.0/8, ::1, ::ffff:127.x). NULL or
 * "" is loopback (the callers' default); a name that does not resolve is not. */
bool bindaddr_is_loopback(const char *host);
/* One warning line on stderr when host is not loopback. what: the server, e.g. "serve". */
void bindaddr_warn_exposed(const char *what, const char *host);
#endif
