/* dataset — prompts of controlled length (random, prefix groups) from real words, and prompt files
 * (JSONL, ShareGPT). Lengths are measured with the client's tokenizer when one is given (the
 * vocabulary's single-token words joined with spaces add up exactly; each prompt is checked), else
 * in words. */
#include "dataset/dataset.h"
#include "dataset/dataset_int.h"
#include "dataset/sessions.h"
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
#include <unistd.h>
#include <stdint.h>

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


/* ---- length measure ---- */

int32_t ds_measure(const dataset_opts *o, const char *text, size_t len) {
    if (o && o->tok) {
        size_t n = tokenizer_count(o->tok, text, len);
        return n == (size_t)-1 ? -1 : (int32_t)n;
    }
    return dataset_count_words(text, len);
}

dataset *ds_new(const char *spec, size_t n, const dataset_opts *o) {
    dataset *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->items = calloc(n ? n : 1, sizeof *d->items);
    d->spec = strdup(spec);
    d->length_unit = o && o->tok ? "tokens" : "words";
    if (!d->items || !d->spec) { dataset_free(d); return NULL; }
    return d;
}

void dataset_free(dataset *d) {
    if (!d) return;
    ds_blocks_free(d->blocks);
    ds_sessions_free(d->sessions);
    for (size_t i = 0; i < d->n; i++) { free(d->items[i].prompt); free(d->items[i].messages_json); }
    free(d->items);
    free(d->spec);
    free(d);
}

void ds_finish_stats(dataset *d) {
    if (!d->n) return;
    d->len_min = INT32_MAX;
    d->len_max = 0;
    double sum = 0;
    for (size_t i = 0; i < d->n; i++) {
        int32_t v = d->items[i].in_tokens;
        if (v < d->len_min) d->len_min = v;
        if (v > d->len_max) d->len_max = v;
        sum += v;
    }
    d->len_mean = sum / d->n;
}

/* ---- word sources and exact-length prompts ---- */

int ds_words_open(word_source *w, const dataset_opts *o, char *err, size_t errlen) {
    memset(w, 0, sizeof *w);
    if (o && o->tok) {
        const char **v;
        size_t n;
        if (tokenizer_single_token_words(o->tok, &v, &n) < 0 || n < 100) {
            free((void *)v);
            snprintf(err, errlen, "the tokenizer has too few single-token words to build exact-length prompts");
            return -1;
        }
        w->owned = v;
        w->words = v;
        w->n = n;
        w->leading_space = true;
        return 0;
    }
    w->words = words_list(&w->n);
    return 0;
}

void ds_words_close(word_source *w) { free(w->owned); }

/* Appends k random words to buf (grown as needed). */
int ds_append_words(char **buf, size_t *len, size_t *cap, const word_source *w, rng *r, int32_t k) {
    for (int32_t i = 0; i < k; i++) {
        const char *word = w->words[rng_below(r, w->n)];
        size_t wl = strlen(word);
        if (*len + wl + 2 > *cap) {
            size_t nc = (*cap + wl + 2) * 2;
            char *nb = realloc(*buf, nc);
            if (!nb) return -1;
            *buf = nb;
            *cap = nc;
        }
        if (*len || w->leading_space) (*buf)[(*len)++] = ' ';
        memcpy(*buf + *len, word, wl);
        *len += wl;
        (*buf)[*len] = 0;
    }
    return 0;
}

/* A prompt of exactly n tokens (in the dataset's unit). Words are additive by construction; the
 * count is checked anyway, and a prompt that misses is rebuilt (counted in *rebuilt). */
char *ds_exact_prompt(const word_source *w, const dataset_opts *o, rng *r, int32_t n, size_t *rebuilt) {
    for (int attempt = 0; attempt < 8; attempt++) {
        size_t cap = (size_t)n * 10 + 16, len = 0;
        char *p = malloc(cap);
        if (!p) return NULL;
        p[0] = 0;
        if (ds_append_words(&p, &len, &cap, w, r, n) < 0) { free(p); return NULL; }
        if (ds_measure(o, p, len) == n) return p;
        free(p);
        (*rebuilt)++;
    }
    return NULL;
}

static int parse_kv_spec(const char *what, const char *args, const char *const *keys, double *vals, int nkeys, char *err, size_t errlen) {
    char *copy = strdup(args ? args : ""), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) { rc = -1; break; }
        *eq = 0;
        char *end;
        double v = strtod(eq + 1, &end);
        int k = 0;
        while (k < nkeys && strcmp(tok, keys[k])) k++;
        if (k == nkeys || *end || eq[1] == 0) rc = -1;
        else vals[k] = v;
    }
    free(copy);
    if (rc) {
        snprintf(err, errlen, "bad dataset '%s:%s': expected %s", what, args, !strcmp(what, "random")
                 ? "random:in=N,out=M,range=F with N, M >= 1 and 0 <= F < 1"
                 : "prefix:groups=G,prefix=P,suffix=S,out=M with G, P, M >= 1 and S >= 0");
    }
    return rc;
}

static int32_t draw_len(rng *r, long mean, double range) {
    if (range <= 0) return (int32_t)mean;
    long lo = (long)floor(mean * (1 - range)), hi = (long)ceil(mean * (1 + range));
    if (lo < 1) lo = 1;
    return (int32_t)(lo + (long)rng_below(r, (uint64_t)(hi - lo + 1)));
}

static int open_random(const char *spec, const char *args, size_t n, uint64_t seed, const dataset_opts *o, dataset **out, char *err, size_t errlen) {
    static const char *const keys[] = { "in", "out", "range" };
    double v[3] = { 1024, 128, 0 };
    if (parse_kv_spec("random", args, keys, v, 3, err, errlen) < 0) return -1;
    if (v[0] < 1 || v[0] > 1e6 || v[1] < 1 || v[1] > 1e6 || v[2] < 0 || v[2] >= 1 || v[0] != floor(v[0]) || v[1] != floor(v[1])) {
        snprintf(err, errlen, "bad dataset 'random:%s': expected random:in=N,out=M,range=F with N, M >= 1 and 0 <= F < 1", args);
        return -1;
    }
    word_source w;
    if (ds_words_open(&w, o, err, errlen) < 0) return -1;
    if (n == 0) n = 1;
    dataset *d = ds_new(spec, n, o);
    if (!d) { ds_words_close(&w); snprintf(err, errlen, "out of memory"); return -1; }
    d->ignore_eos = true;
    rng r;
    rng_seed(&r, seed ^ 0x5eedda7a5e7ULL);
    for (size_t i = 0; i < n; i++) {
        int32_t len = draw_len(&r, (long)v[0], v[2]);
        char *p = ds_exact_prompt(&w, o, &r, len, &d->rebuilt);
        if (!p) {
            snprintf(err, errlen, "could not build a prompt of exactly %d %s (the tokenizer's words do not add up); "
                     "use a jsonl dataset instead", len, d->length_unit);
            dataset_free(d); ds_words_close(&w);
            return -1;
        }
        dataset_item *it = &d->items[d->n++];
        it->prompt = p;
        it->in_tokens = len;
        it->max_tokens = draw_len(&r, (long)v[1], v[2]);
        it->timestamp_ns = -1;
        it->group = -1;
        it->cacheable_tokens = -1;   /* unknown: prompts with no designed sharing */
    }
    ds_words_close(&w);
    ds_finish_stats(d);
    *out = d;
    return 0;
}

static int open_prefix(const char *spec, const char *args, size_t n, uint64_t seed, const dataset_opts *o, dataset **out, char *err, size_t errlen) {
    static const char *const keys[] = { "groups", "prefix", "suffix", "out" };
    double v[4] = { 4, 1024, 128, 128 };
    if (parse_kv_spec("prefix", args, keys, v, 4, err, errlen) < 0) return -1;
    if (v[0] < 1 || v[0] > 100000 || v[1] < 1 || v[1] > 1e6 || v[2] < 0 || v[2] > 1e6 || v[3] < 1 || v[3] > 1e6) {
        snprintf(err, errlen, "bad dataset 'prefix:%s': expected prefix:groups=G,prefix=P,suffix=S,out=M with G, P, M >= 1 and S >= 0", args);
        return -1;
    }
    int groups = (int)v[0];
    word_source w;
    if (ds_words_open(&w, o, err, errlen) < 0) return -1;
    if (n == 0) n = 1;
    dataset *d = ds_new(spec, n, o);
    char **prefixes = calloc((size_t)groups, sizeof *prefixes);
    if (!d || !prefixes) { dataset_free(d); free(prefixes); ds_words_close(&w); snprintf(err, errlen, "out of memory"); return -1; }
    d->ignore_eos = true;
    rng r;
    rng_seed(&r, seed ^ 0x9f3e11aULL);
    int rc = 0;
    for (int g = 0; g < groups && !rc; g++)
        if (!(prefixes[g] = ds_exact_prompt(&w, o, &r, (int32_t)v[1], &d->rebuilt))) rc = -1;
    for (size_t i = 0; i < n && !rc; i++) {
        int g = (int)(i % (size_t)groups);
        char *suffix = v[2] > 0 ? ds_exact_prompt(&w, o, &r, (int32_t)v[2], &d->rebuilt) : strdup("");
        if (!suffix) { rc = -1; break; }
        size_t pl = strlen(prefixes[g]), sl = strlen(suffix);
        /* words need a separator; tokenizer words carry their own leading space */
        size_t sep = (!w.leading_space && sl) ? 1 : 0;
        char *p = malloc(pl + sep + sl + 1);
        if (!p) { free(suffix); rc = -1; break; }
        memcpy(p, prefixes[g], pl);
        if (sep) p[pl] = ' ';
        memcpy(p + pl + sep, suffix, sl + 1);
        sl += sep;
        free(suffix);
        dataset_item *it = &d->items[d->n++];
        it->prompt = p;
        /* the join is checked like any prompt: tokens may merge across the seam */
        it->in_tokens = ds_measure(o, p, pl + sl);
        it->max_tokens = (int32_t)v[3];
        it->timestamp_ns = -1;
        it->group = g;
        it->cacheable_tokens = i < (size_t)groups ? 0 : (int32_t)v[1];   /* its group's prompt was sent before */
    }
    for (int g = 0; g < groups; g++) free(prefixes[g]);
    free(prefixes);
    ds_words_close(&w);
    if (rc) { dataset_free(d); snprintf(err, errlen, "could not build prefix prompts of the requested lengths"); return -1; }
    d->prefix_tokens = (int32_t)v[1];
    ds_finish_stats(d);
    *out = d;
    return 0;
}

static int32_t messages_len(json_t *msgs, const dataset_opts *o) {
    int32_t n = 0;
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        json_t *c = json_object_get(m, "content");
        if (json_is_string(c)) n += ds_measure(o, json_string_value(c), json_string_length(c));
    }
    return n;
}

/* An optional integer field of a JSONL line: absent or null leaves *out alone; anything but an
 * integer in [lo, hi] is an error naming the file, the line and the field. */
static int jsonl_int(json_t *obj, const char *key, long long lo, long long hi, long long *out, bool *given,
                     const char *path, size_t lineno, char *err, size_t errlen) {
    json_t *v = json_object_get(obj, key);
    *given = false;
    if (!v || json_is_null(v)) return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        char shown[64];
        if (json_is_number(v)) snprintf(shown, sizeof shown, "%.17g", json_number_value(v));
        else snprintf(shown, sizeof shown, "a %s", json_is_string(v) ? "string" : json_is_boolean(v) ? "boolean" : json_is_array(v) ? "list" : "object");
        snprintf(err, errlen, "%s line %zu: \"%s\" is %s; it must be an integer from %lld to %lld (or left out)",
                 path, lineno, key, shown, lo, hi);
        return -1;
    }
    *out = json_integer_value(v);
    *given = true;
    return 0;
}

/* The fields of one JSONL line into it; -1 with a one-line err naming the file, line and field. */
static int jsonl_item(dataset *d, dataset_item *it, json_t *obj, const dataset_opts *o, const char *path,
                      size_t lineno, char *err, size_t errlen) {
    json_t *p = json_object_get(obj, "prompt"), *m = json_object_get(obj, "messages");
    if (json_is_string(p)) {
        it->prompt = strdup(json_string_value(p));
        it->in_tokens = ds_measure(o, it->prompt, json_string_length(p));
    } else if ((!p || json_is_null(p)) && json_is_array(m) && json_array_size(m) > 0) {
        size_t i;
        json_t *msg;
        json_array_foreach(m, i, msg) {
            if (!json_is_string(json_object_get(msg, "role"))) {
                snprintf(err, errlen, "%s line %zu: messages[%zu] needs a string \"role\" (and its \"content\")", path, lineno, i);
                return -1;
            }
        }
        it->messages_json = json_dumps(m, JSON_COMPACT);
        it->in_tokens = messages_len(m, o);
    } else {
        snprintf(err, errlen, "%s line %zu: needs a \"prompt\" string or a non-empty \"messages\" array", path, lineno);
        return -1;
    }
    long long v;
    bool given;
    /* max_tokens as the OpenAI API takes it: 0 or -5 would otherwise become the server's default */
    if (jsonl_int(obj, "max_tokens", 1, 10000000, &v, &given, path, lineno, err, errlen)) return -1;
    if (given) it->max_tokens = (int32_t)v;
    json_t *ts = json_object_get(obj, "timestamp");
    if (ts && !json_is_null(ts)) {
        /* seconds from the trace's start; 1e9 s (32 years) keeps the ns in int64 */
        double sec = json_number_value(ts);
        if (!json_is_number(ts) || !(sec >= 0 && sec <= 1e9)) {
            snprintf(err, errlen, "%s line %zu: \"timestamp\" must be a number of seconds from 0 to 1e9 (or left out)", path, lineno);
            return -1;
        }
        it->timestamp_ns = (int64_t)llround(sec * 1e9);
    }
    if (jsonl_int(obj, "input_tokens", 0, INT32_MAX, &v, &given, path, lineno, err, errlen)) return -1;
    double tol = o ? o->tolerance : 0.05, w = (double)v;
    if (given && fabs(it->in_tokens - w) > tol * w + 0.5) {
        snprintf(err, errlen, "%s line %zu: the prompt has %d %s but the line declares input_tokens %.0f "
                 "(off by more than %.0f%%); fix the file or measure with the tokenizer it was made for",
                 path, lineno, it->in_tokens, d->length_unit, w, tol * 100);
        return -1;
    }
    return 0;
}

static int open_jsonl(const char *spec, const char *path, const dataset_opts *o, dataset **out, char *err, size_t errlen) {
    char *text;
    size_t len;
    if (fileio_read_all(path, &text, &len) < 0) {
        snprintf(err, errlen, "cannot read dataset file '%s': %s", path, strerror(errno));
        return -1;
    }
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    dataset *d = ds_new(spec, lines, o);
    if (!d) { free(text); snprintf(err, errlen, "out of memory"); return -1; }
    int rc = 0;
    /* line by line, blank ones included, so an error names the line an editor shows */
    size_t lineno = 0;
    for (char *line = text; rc == 0 && line < text + len; ) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        char *next = nl ? nl + 1 : text + len;
        if (nl) *nl = 0;
        lineno++;
        while (*line && isspace((unsigned char)*line)) line++;
        if (!*line) { line = next; continue; }
        json_error_t je;
        json_t *obj = json_loads(line, 0, &je);
        if (!json_is_object(obj)) {
            snprintf(err, errlen, "%s line %zu: not a JSON object (%s); each line must be {\"prompt\": ...} or {\"messages\": [...]}", path, lineno, obj ? "wrong type" : je.text);
            rc = -1;
        } else {
            dataset_item *it = &d->items[d->n];
            it->max_tokens = -1;
            it->timestamp_ns = -1;
            it->group = -1;
            it->cacheable_tokens = -1;   /* unknown: prompts with no designed sharing */
            rc = jsonl_item(d, it, obj, o, path, lineno, err, errlen);
            d->n++;   /* counted even on error, so dataset_free frees what the item holds */
        }
        json_decref(obj);
        line = next;
    }
    free(text);
    if (!rc && d->n == 0) { snprintf(err, errlen, "dataset file '%s' has no requests", path); rc = -1; }
    if (rc) { dataset_free(d); return -1; }
    ds_scale_times(d, o);
    ds_finish_stats(d);
    *out = d;
    return 0;
}

/* ShareGPT: [{"id":..., "conversations":[{"from":"human","value":...},{"from":"gpt","value":...}, ...]}]
 * The first human turn is the prompt; the next model turn's length is max_tokens. Conversations
 * without such a pair, or with a prompt or reply under 4 units, are skipped (as vLLM does). */
static int open_sharegpt(const char *spec, const char *path, const dataset_opts *o, dataset **out, char *err, size_t errlen) {
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) {
        if (access(path, R_OK) != 0) snprintf(err, errlen, "cannot read dataset file '%s': %s", path, strerror(errno));
        else snprintf(err, errlen, "%s: not valid JSON at line %d column %d: %s", path, je.line, je.column, je.text);
        return -1;
    }
    if (!json_is_array(root)) {
        snprintf(err, errlen, "%s: a ShareGPT file is a JSON array of {\"conversations\": [...]}", path);
        json_decref(root);
        return -1;
    }
    dataset *d = ds_new(spec, json_array_size(root), o);
    if (!d) { json_decref(root); snprintf(err, errlen, "out of memory"); return -1; }
    size_t i;
    json_t *conv;
    json_array_foreach(root, i, conv) {
        json_t *turns = json_object_get(conv, "conversations");
        if (!json_is_array(turns)) turns = json_object_get(conv, "conversation");
        const char *prompt = NULL, *reply = NULL;
        size_t plen = 0, rlen = 0;
        size_t k;
        json_t *t;
        json_array_foreach(turns, k, t) {
            const char *from = json_string_value(json_object_get(t, "from"));
            if (!from) from = json_string_value(json_object_get(t, "role"));
            json_t *val = json_object_get(t, "value");
            if (!json_is_string(val)) val = json_object_get(t, "content");
            if (!from || !json_is_string(val)) continue;
            bool human = !strcmp(from, "human") || !strcmp(from, "user");
            if (!prompt && human) { prompt = json_string_value(val); plen = json_string_length(val); }
            else if (prompt && !human) { reply = json_string_value(val); rlen = json_string_length(val); break; }
        }
        if (!prompt || !reply) { d->skipped++; continue; }
        int32_t pin = ds_measure(o, prompt, plen), rout = ds_measure(o, reply, rlen);
        if (pin < 4 || rout < 4) { d->skipped++; continue; }
        dataset_item *it = &d->items[d->n++];
        it->prompt = strdup(prompt);
        it->in_tokens = pin;
        it->max_tokens = rout;
        it->timestamp_ns = -1;
        it->group = -1;
        it->cacheable_tokens = -1;   /* unknown: prompts with no designed sharing */
    }
    json_decref(root);
    if (d->n == 0) { dataset_free(d); snprintf(err, errlen, "%s: no usable conversations (need a human turn followed by a reply, each of 4+ units)", path); return -1; }
    ds_finish_stats(d);
    *out = d;
    return 0;
}

void dataset_count_for_api(dataset *d, const tokenizer *tok, bool chat) {
    if (d->api_counted) return;   /* counts are adjusted once */
    d->api_counted = true;
    if (d->sessions) {
        /* turns are counted as they are built; the first turns are rebuilt for the stats */
        ds_sessions_set_api(d->sessions, tok, chat);
        for (size_t i = 0; i < d->n; i++) {
            dataset_item it;
            if (sessions_build_turn(d->sessions, i, 0, &it) < 0) continue;
            sessions_item_free(&d->items[i]);
            d->items[i] = it;
        }
        ds_finish_stats(d);
        return;
    }
    if (d->blocks) {
        ds_trace_count_for_api(d, tok, chat);
        ds_finish_stats(d);
        return;
    }
    for (size_t i = 0; i < d->n; i++) {
        dataset_item *it = &d->items[i];
        if (!tok) continue;   /* words: what was measured is what is reported */
        size_t n = 0;
        if (chat) {
            const char *roles[64], *contents[64];
            size_t k = 0;
            json_t *msgs = it->messages_json ? json_loads(it->messages_json, 0, NULL) : NULL;
            if (msgs) {
                size_t j; json_t *m;
                json_array_foreach(msgs, j, m) {
                    if (k == 64) break;
                    const char *role = json_string_value(json_object_get(m, "role"));
                    const char *content = json_string_value(json_object_get(m, "content"));
                    roles[k] = role ? role : "user";
                    contents[k++] = content ? content : "";
                }
            } else { roles[0] = "user"; contents[0] = it->prompt ? it->prompt : ""; k = 1; }
            if (tokenizer_chat_prompt_tokens(tok, roles, contents, k, &n) == 0) it->in_tokens = (int32_t)n;
            json_decref(msgs);
        } else if (it->prompt) {
            /* the prompt was counted with this tokenizer when the dataset was opened: only the
             * server's BOS is missing (and a shared prefix shares it) */
            int bos = tokenizer_add_bos_default(tok) ? 1 : 0;
            if (it->in_tokens >= 0) it->in_tokens += bos;
            if (it->cacheable_tokens > 0) it->cacheable_tokens += bos;
            if (i == 0 && d->prefix_tokens > 0) d->prefix_tokens += bos;
        }
    }
    ds_finish_stats(d);
}

int32_t dataset_cacheable_tokens(const dataset *d, size_t plan_index) {
    const dataset_item *it = &d->items[plan_index % d->n];
    if (plan_index < d->n || it->cacheable_tokens < 0) return it->cacheable_tokens;
    /* a replay that starts over: every block of a trace request was sent before, and every
     * prefix group's prompt too */
    if (d->blocks) return it->in_tokens;
    return it->group >= 0 ? d->prefix_tokens : it->cacheable_tokens;
}

void ds_scale_times(dataset *d, const dataset_opts *o) {
    if (!o || !(o->time_scale > 0) || o->time_scale == 1) return;
    for (size_t i = 0; i < d->n; i++)
        if (d->items[i].timestamp_ns >= 0) d->items[i].timestamp_ns = (int64_t)llround((double)d->items[i].timestamp_ns * o->time_scale);
}

int dataset_open(const char *spec, size_t n_hint, uint64_t seed, const dataset_opts *o, dataset **out, char *err, size_t errlen) {
    if (!strncmp(spec, "mooncake:", 9)) return ds_open_mooncake(spec, spec + 9, seed, o, out, err, errlen);
    if (!strncmp(spec, "sessions:", 9)) return ds_open_sessions(spec, spec + 9, seed, o, out, err, errlen);
    if (!strcmp(spec, "sessions")) return ds_open_sessions(spec, "", seed, o, out, err, errlen);
    if (!strncmp(spec, "random:", 7)) return open_random(spec, spec + 7, n_hint, seed, o, out, err, errlen);
    if (!strcmp(spec, "random")) return open_random(spec, "", n_hint, seed, o, out, err, errlen);
    if (!strncmp(spec, "prefix:", 7)) return open_prefix(spec, spec + 7, n_hint, seed, o, out, err, errlen);
    if (!strncmp(spec, "jsonl:", 6)) return open_jsonl(spec, spec + 6, o, out, err, errlen);
    if (!strncmp(spec, "sharegpt:", 9)) return open_sharegpt(spec, spec + 9, o, out, err, errlen);
    snprintf(err, errlen, "unknown dataset '%s': use random:in=N,out=M,range=F, prefix:groups=G,prefix=P,suffix=S,out=M, "
             "jsonl:FILE, sharegpt:FILE, mooncake:FILE or sessions:n=N,turns=T,...", spec);
    return -1;
}
