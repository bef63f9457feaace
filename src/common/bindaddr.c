/* bindaddr — loopback or not, and the warning for a server that has no authentication. */
#include "common/bindaddr.h"
#include "common/log.h"
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

static bool addr_loopback(const struct sockaddr *sa) {
    if (sa->sa_family == AF_INET) return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family != AF_INET6) return false;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

bool bindaddr_is_loopback(const char *host) {
    if (!host || !*host) return true;
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL;
    if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res) return false;
    bool loop = true;
    for (struct addrinfo *ai = res; ai && loop; ai = ai->ai_next) loop = addr_loopback(ai->ai_addr);
    freeaddrinfo(res);
    return loop;
}

void bindaddr_warn_exposed(const char *what, const char *host) {
    if (bindaddr_is_loopback(host)) return;
    log_warn("%s listens on %s, which is not loopback, and has no authentication: anyone who can reach this "
             "machine can use it (the default, 127.0.0.1, keeps it to this machine)", what, host);
}
