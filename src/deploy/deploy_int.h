/* deploy_int — what the deploy module's files share; not part of its interface (deploy.h). */
#ifndef DSP_DEPLOY_INT_H
#define DSP_DEPLOY_INT_H
#include "deploy/deploy.h"

/* Marks a field known, with its source (printf-style); assumed: no source stated it. */
void deploy_set(deploy_src *s, bool assumed, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#endif
