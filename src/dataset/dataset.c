/* dataset — random prompts of controlled length from real words, and JSONL files of prompts or
 * chat messages. Lengths are counted with the client's counter (words for now), so a prompt of
 * N units is N words joined by single spaces. */
#include "dataset/dataset.h"
#include "dataset/words.h"
#include "common/rng.h"
#include "common/fileio.h"
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <errno.h>
#include <ctype.h>
#include <math.h>

int32_t dataset_count_words(const char *text, size_t len) {
    int32_t n = 0;
    bool in = false;
    for (size_t i = 0; i < len; i++) {
        bool sp = isspace((unsigned char)text[i]);
        if (!sp && !in) n++;
        in = !sp;
    }
    return n;
}

static dataset *ds_new(const char *spec, size_t n) {
    dataset *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->items = calloc(n ? n : 1, sizeof *d->items);
    d->spec = strdup(spec);
    d->length_unit = "words";
    if (!d->items || !d->spec) { dataset_free(d); return NULL; }
    return d;
}

void dataset_free(dataset *d) {
    if (!d) return;
    for (size_t i = 0; i < d->n; i++) { free(d->items[i].prompt); free(d->items[i].messages_json); }
    free(d->items);
    free(d->spec);
    free(d);
}

/* "in=1024,out=128,range=0.1" */
static int parse_random(const char *args, long *in, long *out, double *range, char *err, size_t errlen) {
    *in = 1024; *out = 128; *range = 0;
    char *copy = strdup(args), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        char *end = NULL;
        if (!eq) { rc = -1; break; }
        *eq = 0;
        const char *v = eq + 1;
        errno = 0;
        if (!strcmp(tok, "in")) { *in = strtol(v, &end, 10); if (*end || *in < 1 || *in > 10000000) rc = -1; }
        else if (!strcmp(tok, "out")) { *out = strtol(v, &end, 10); if (*end || *out < 1 || *out > 10000000) rc = -1; }
        else if (!strcmp(tok, "range")) { *range = strtod(v, &end); if (*end || *range < 0 || *range >= 1) rc = -1; }
        else rc = -1;
        if (rc) break;
    }
    free(copy);
    if (rc) snprintf(err, errlen, "bad dataset 'random:%s': expected random:in=N,out=M,range=F with N, M >= 1 and 0 <= F < 1", args);
    return rc;
}

static int32_t draw_len(rng *r, long mean, double range) {
    if (range <= 0) return (int32_t)mean;
    long lo = (long)floor(mean * (1 - range)), hi = (long)ceil(mean * (1 + range));
    if (lo < 1) lo = 1;
    return (int32_t)(lo + (long)rng_below(r, (uint64_t)(hi - lo + 1)));
}

static int open_random(const char *spec, const char *args, size_t n, uint64_t seed, dataset **out, char *err, size_t errlen) {
    long in, outl;
    double range;
    if (parse_random(args, &in, &outl, &range, err, errlen) < 0) return -1;
    size_t nw;
    const char *const *w = words_list(&nw);
    if (n == 0) n = 1;
    dataset *d = ds_new(spec, n);
    if (!d) { snprintf(err, errlen, "out of memory"); return -1; }
    d->ignore_eos = true;
    rng r;
    rng_seed(&r, seed ^ 0x5eedda7a5e7ULL);
    for (size_t i = 0; i < n; i++) {
        int32_t len = draw_len(&r, in, range);
        size_t cap = (size_t)len * 14 + 1, at = 0;
        char *p = malloc(cap);
        if (!p) { dataset_free(d); snprintf(err, errlen, "out of memory"); return -1; }
        for (int32_t k = 0; k < len; k++) {
            const char *word = w[rng_below(&r, nw)];
            size_t wl = strlen(word);
            if (k) p[at++] = ' ';
            memcpy(p + at, word, wl);
            at += wl;
        }
        p[at] = 0;
        d->items[i].prompt = p;
        d->items[i].in_tokens = len;
        d->items[i].max_tokens = draw_len(&r, outl, range);
        d->items[i].timestamp_ns = -1;
        d->n++;
    }
    *out = d;
    return 0;
}

static int32_t messages_words(json_t *msgs) {
    int32_t n = 0;
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        json_t *c = json_object_get(m, "content");
        if (json_is_string(c)) n += dataset_count_words(json_string_value(c), json_string_length(c));
    }
    return n;
}

static int open_jsonl(const char *spec, const char *path, dataset **out, char *err, size_t errlen) {
    char *text;
    size_t len;
    if (fileio_read_all(path, &text, &len) < 0) {
        snprintf(err, errlen, "cannot read dataset file '%s': %s", path, strerror(errno));
        return -1;
    }
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    dataset *d = ds_new(spec, lines);
    if (!d) { free(text); snprintf(err, errlen, "out of memory"); return -1; }
    size_t lineno = 0;
    char *save = NULL;
    int rc = 0;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        while (*line && isspace((unsigned char)*line)) line++;
        if (!*line) continue;
        json_error_t je;
        json_t *o = json_loads(line, 0, &je);
        if (!json_is_object(o)) {
            snprintf(err, errlen, "%s line %zu: not a JSON object (%s); each line must be {\"prompt\": ...} or {\"messages\": [...]}", path, lineno, o ? "wrong type" : je.text);
            json_decref(o);
            rc = -1;
            break;
        }
        dataset_item *it = &d->items[d->n];
        it->max_tokens = -1;
        it->timestamp_ns = -1;
        json_t *p = json_object_get(o, "prompt"), *m = json_object_get(o, "messages");
        if (json_is_string(p)) {
            it->prompt = strdup(json_string_value(p));
            it->in_tokens = dataset_count_words(it->prompt, json_string_length(p));
        } else if (json_is_array(m) && json_array_size(m) > 0) {
            it->messages_json = json_dumps(m, JSON_COMPACT);
            it->in_tokens = messages_words(m);
        } else {
            snprintf(err, errlen, "%s line %zu: needs a \"prompt\" string or a non-empty \"messages\" array", path, lineno);
            json_decref(o);
            rc = -1;
            break;
        }
        json_t *mt = json_object_get(o, "max_tokens");
        if (json_is_integer(mt) && json_integer_value(mt) > 0) it->max_tokens = (int32_t)json_integer_value(mt);
        json_t *ts = json_object_get(o, "timestamp");
        if (json_is_number(ts)) it->timestamp_ns = (int64_t)llround(json_number_value(ts) * 1e9);
        d->n++;
        json_decref(o);
    }
    free(text);
    if (!rc && d->n == 0) { snprintf(err, errlen, "dataset file '%s' has no requests", path); rc = -1; }
    if (rc) { dataset_free(d); return -1; }
    *out = d;
    return 0;
}

int dataset_open(const char *spec, size_t n_hint, uint64_t seed, dataset **out, char *err, size_t errlen) {
    if (!strncmp(spec, "random:", 7)) return open_random(spec, spec + 7, n_hint, seed, out, err, errlen);
    if (!strcmp(spec, "random")) return open_random(spec, "", n_hint, seed, out, err, errlen);
    if (!strncmp(spec, "jsonl:", 6)) return open_jsonl(spec, spec + 6, out, err, errlen);
    snprintf(err, errlen, "unknown dataset '%s': use random:in=N,out=M,range=F or jsonl:FILE", spec);
    return -1;
}
