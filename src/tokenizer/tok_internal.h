/* tok_internal — what the tokenizer's own files share: the loaded tables, the builder the two loaders
 * (tokenizer.json, GGUF) fill, UTF-8 helpers and the regex translation. Not for use outside
 * src/tokenizer/; tokenizer.h is the module's interface. */
#ifndef DSP_TOK_INTERNAL_H
#define DSP_TOK_INTERNAL_H
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "tokenizer/tokenizer.h"

#define TOK_MAX_STAGES 8

typedef struct {
    const char *text;  /* raw UTF-8 content (NUL-terminated, in the arena) */
    uint32_t len;
    int32_t id;
    bool special, lstrip, rstrip, normalized;
} tok_added;

/* One pass of added-token splitting: tokens indexed by first byte, longest first. */
typedef struct {
    uint32_t *order;      /* indices into t->added, grouped by first byte, longest first */
    uint32_t start[257];  /* order[start[b] .. start[b+1]) start with byte b */
    size_t n;
} tok_added_pass;

typedef struct {
    uint32_t left, right;
    int32_t rank, id;     /* rank -1: empty slot */
} tok_pair;

enum tok_chat_style { TOK_CHAT_NONE = 0, TOK_CHAT_DEEPSEEK3 };

struct tokenizer {
    uint64_t serial;           /* unique per load: keys the per-thread caches */
    size_t n_vocab;            /* highest id + 1 */
    char **tok_str;            /* by id, NUL-terminated, NULL where no token */
    uint32_t *tok_len;
    uint8_t *tok_flags;        /* TOK_F_* by id */
    uint32_t *map;             /* open addressing string -> id+1 (0 empty) */
    size_t map_mask, map_filled;
    tok_pair *pairs;           /* (left id, right id) -> rank, merged id */
    size_t pairs_mask;
    size_t n_merges;
    int32_t byte_id[256];      /* token of each byte's byte-level character, -1 if none */
    tok_added *added;
    size_t n_added;
    tok_added_pass pass[2];    /* [0] non-normalized tokens (raw text), [1] normalized ones */
    pcre2_code *re[TOK_MAX_STAGES];
    size_t n_stages;
    int32_t bos_id, eos_id;
    bool add_bos;
    enum tok_chat_style chat;
    char *chat_template;       /* as loaded, may be NULL */
    void *arena_blocks;        /* linked blocks holding every string of the tables (never moved) */
    char *arena_cur;
    size_t arena_used, arena_cap;
    char *scratch;             /* builder scratch (merge concatenation) */
    size_t scratch_cap;
    uint32_t jit_ok;           /* bit i: re[i] is JIT-compiled */
};

enum { TOK_F_ADDED = 1, TOK_F_SPECIAL = 2, TOK_F_HIDDEN = 4 /* exists only as padding (GGUF [PADn]) */ };

/* Builder used by the loaders, in this order: tok_init, tok_set_token for every id, tok_add_merge for
 * every merge in rank order, tok_add_added for added tokens, tok_add_stage for each pre-tokenizer
 * regex, tok_finish. Errors are written to err and returned negative. */
int tok_init(tokenizer *t, size_t n_vocab_hint, char *err, size_t errlen);
int tok_set_token(tokenizer *t, int32_t id, const char *s, size_t len, char *err, size_t errlen);
int tok_add_merge(tokenizer *t, const char *a, size_t alen, const char *b, size_t blen, char *err, size_t errlen);
int tok_add_added(tokenizer *t, const tok_added *a, char *err, size_t errlen);
/* pattern in Oniguruma syntax as HF writes it; \s and \S become HF's whitespace class. */
int tok_add_stage(tokenizer *t, const char *pattern, size_t len, char *err, size_t errlen);
int tok_finish(tokenizer *t, char *err, size_t errlen);
int32_t tok_lookup(const tokenizer *t, const char *s, size_t len);
void tok_release(tokenizer *t);

int tok_load_json(tokenizer *t, const char *path, const char *data, size_t len, char *err, size_t errlen);
/* Loads model.vocab and model.merges straight from the text (after tok_init) and returns the document
 * with both emptied for jansson. 0 ok, 1 when they are absent or not an object/array, -1 error. */
int tok_jscan_model(tokenizer *t, const char *data, size_t len, char **skeleton, size_t *skel_len, char *err, size_t errlen);
int tok_load_gguf(tokenizer *t, const char *path, const uint8_t *data, size_t len, char *err, size_t errlen);

/* UTF-8: length of the valid prefix; and lossy conversion (one U+FFFD per maximal invalid subpart,
 * as Rust's String::from_utf8_lossy) appending to a growable buffer. */
size_t tok_utf8_valid_prefix(const char *s, size_t n);
int tok_utf8_lossy(const char *s, size_t n, char **buf, size_t *len, size_t *cap);
/* Appends bytes to a growable buffer. */
int tok_buf_append(char **buf, size_t *len, size_t *cap, const void *data, size_t n);
#endif
