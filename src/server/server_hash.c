/* server_hash — chained block hashes of a prompt's words (server_hash.h). */
#include "server/server_hash.h"
#include "common/rng.h"
#include "server/server_oai.h"
#include <jansson.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t *v;
    int32_t n, cap;
    int32_t in_block, block;
    uint64_t chain, acc;
    int oom;
} hasher;

static uint64_t mix(uint64_t a, uint64_t b) { return rng_mix64(a, b); }

/* One token: into the current block; a full block is chained onto the ones before. */
static void token(hasher *h, uint64_t t) {
    h->acc = mix(h->acc, t);
    if (++h->in_block < h->block) return;
    if (h->n == h->cap) {
        int32_t nc = h->cap ? h->cap * 2 : 64;
        uint64_t *nv = realloc(h->v, sizeof *nv * (size_t)nc);
        if (!nv) { h->oom = 1; return; }
        h->v = nv;
        h->cap = nc;
    }
    h->chain = mix(h->chain, h->acc);
    h->v[h->n++] = h->chain;
    h->acc = 0;
    h->in_block = 0;
}

static void words(hasher *h, const char *s, uint64_t salt) {
    while (*s) {
        while (*s && isspace((unsigned char)*s)) s++;
        if (!*s) break;
        uint64_t f = 0xcbf29ce484222325ULL ^ salt;   /* FNV-1a over the word's bytes */
        for (; *s && !isspace((unsigned char)*s); s++) f = (f ^ (unsigned char)*s) * 0x100000001b3ULL;
        token(h, f);
    }
}

static void content(hasher *h, json_t *c, uint64_t salt) {
    if (json_is_string(c)) { words(h, json_string_value(c), salt); return; }
    size_t i;
    json_t *part;
    json_array_foreach(c, i, part) {
        json_t *t = json_object_get(part, "text");
        if (json_is_string(t)) words(h, json_string_value(t), salt);
    }
}

static void prompt(hasher *h, json_t *p) {
    if (json_is_string(p)) { words(h, json_string_value(p), 0); return; }
    if (!json_is_array(p) || !json_array_size(p)) return;
    json_t *first = json_array_get(p, 0);
    if (json_is_array(first) || json_is_string(first)) { prompt(h, first); return; }
    size_t i;
    json_t *id;
    json_array_foreach(p, i, id) token(h, mix(0x70c3e11dULL, (uint64_t)json_integer_value(id)));
}

static uint64_t role_salt(const char *role) {
    uint64_t salt = 0;
    for (const char *r = role ? role : ""; *r; r++) salt = (salt ^ (unsigned char)*r) * 0x100000001b3ULL;
    return salt;
}

int srv_prompt_hashes(int api, const char *body, size_t len, int32_t block_tokens, uint64_t **out, int32_t *n) {
    return srv_sequence_hashes(api, body, len, block_tokens, 0, 0, out, n);
}

int srv_sequence_hashes(int api, const char *body, size_t len, int32_t block_tokens, uint64_t seq, int32_t out_words,
                        uint64_t **out, int32_t *n) {
    *out = NULL;
    *n = 0;
    if (block_tokens < 1) return 0;
    json_t *root = json_loadb(body, len, 0, NULL);
    if (!json_is_object(root)) { json_decref(root); return -1; }
    hasher h = { .block = block_tokens, .chain = 0x5eed5eedULL };
    if (api == OAI_COMPLETIONS) prompt(&h, json_object_get(root, "prompt"));
    else {
        size_t i;
        json_t *m;
        json_array_foreach(json_object_get(root, "messages"), i, m)
            content(&h, json_object_get(m, "content"), role_salt(json_string_value(json_object_get(m, "role"))));
    }
    json_decref(root);
    /* the answer: the same words the stream will carry, as the next prompt will contain them */
    uint64_t salt = api == OAI_COMPLETIONS ? 0 : role_salt("assistant");
    for (int32_t k = 0; k < out_words && !h.oom; k++) words(&h, oai_word(seq, k), salt);
    if (h.oom) { free(h.v); return -1; }
    *out = h.v;
    *n = h.n;
    return 0;
}
