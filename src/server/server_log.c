/* server_log — the --log-prompts file (server_log.h). */
#include "server/server_log.h"
#include <jansson.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct prompt_log {
    FILE *f;
    pthread_mutex_t lock;      /* the loops write one whole line at a time */
    uint64_t seq;
};

prompt_log *prompt_log_open(const char *path, char *err, size_t errlen) {
    prompt_log *l = calloc(1, sizeof *l);
    if (!l) { snprintf(err, errlen, "out of memory"); return NULL; }
    /* "-" is standard output, as in every output flag; a live log is appended line by line, so it
     * is opened in place (through a symlink, onto a FIFO) rather than written atomically */
    if (!(l->f = strcmp(path, "-") ? fopen(path, "w") : stdout)) {
        snprintf(err, errlen, "--log-prompts %s: %s", path, strerror(errno));
        free(l);
        return NULL;
    }
    pthread_mutex_init(&l->lock, NULL);
    return l;
}

void prompt_log_write(prompt_log *l, int loop, int64_t t_ns, const char *path, int32_t prompt_tokens,
                      const char *body, size_t len) {
    if (!l) return;
    /* the body is valid JSON (it parsed); written compactly so that one request is one line */
    json_t *req = json_loadb(body, len, 0, NULL);
    char *text = req ? json_dumps(req, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(req);
    pthread_mutex_lock(&l->lock);
    fprintf(l->f, "{\"seq\":%llu,\"loop\":%d,\"t_ns\":%lld,\"path\":\"%s\",\"prompt_tokens\":%d,\"request\":%s}\n",
            (unsigned long long)l->seq++, loop, (long long)t_ns, path, (int)prompt_tokens, text ? text : "null");
    fflush(l->f);
    pthread_mutex_unlock(&l->lock);
    free(text);
}

void prompt_log_close(prompt_log *l) {
    if (!l) return;
    if (l->f == stdout) fflush(l->f);
    else fclose(l->f);
    pthread_mutex_destroy(&l->lock);
    free(l);
}
