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

/* One pass of added-token splitting: a byte trie of the pass's tokens (leftmost-longest matching). */
typedef struct {
    uint32_t child, sibling;  /* node indices, 0 = none (node 0 is unused) */
    int32_t added;            /* index into t->added when a token ends here, else -1 */
    uint8_t byte;
} tok_trie_node;

typedef struct {
    tok_trie_node *nodes;
    size_t n_nodes, cap;
    uint32_t root[256];       /* node of each first byte, 0 = no token starts with it */
    int single_first;         /* the only first byte of the pass's tokens (memchr scan), or -1 */
    size_t n;                 /* tokens in the pass */
} tok_added_pass;

typedef struct {
    uint32_t left, right;
    int32_t rank, id;     /* rank -1: empty slot */
} tok_pair;

/* A string -> id slot: the string and its length sit in the slot so a probe costs one memory access
 * plus the compare (loading V3 does ~500k lookups). */
typedef struct {
    const char *str;
    uint32_t id1;   /* id + 1, 0 when empty */
    uint32_t len;
} tok_slot;

/* A token as the loaders give it, kept apart from the by-id tables until tok_finish: ids arrive in
 * any order and a file may name any id, so memory follows the number of tokens, never the largest id. */
typedef struct {
    const char *str;   /* in the arena */
    uint32_t len;
    int32_t id;
    uint8_t flags;     /* TOK_F_* */
} tok_entry;

enum tok_chat_style { TOK_CHAT_NONE = 0, TOK_CHAT_DEEPSEEK3, TOK_CHAT_DEEPSEEK2 };

struct tokenizer {
    uint64_t serial;           /* unique per load: keys the per-thread caches */
    size_t n_vocab;            /* highest id + 1 */
    char **tok_str;            /* by id, NUL-terminated, NULL where no token */
    uint32_t *tok_len;
    uint8_t *tok_flags;        /* TOK_F_* by id */
    tok_slot *map;             /* open addressing string -> id (id1 0: empty) */
    size_t map_mask, map_filled;
    tok_pair *pairs;           /* (left id, right id) -> rank, merged id */
    size_t pairs_mask;
    size_t n_merges;
    int32_t byte_id[256];      /* token of each byte's byte-level character, -1 if none */
    tok_added *added;
    size_t n_added;
    tok_added_pass pass[2];    /* [0] non-normalized tokens (raw text), [1] normalized ones */
    pcre2_code *re[2][TOK_MAX_STAGES]; /* [0] PCRE2's own Unicode classes, [1] extended by tok_unicode_new.h */
    size_t n_stages;
    int32_t bos_id, eos_id;
    bool add_bos;
    enum tok_chat_style chat;
    char *chat_template;       /* as loaded, may be NULL */
    bool chat_think_prompt;    /* R1: the generation prompt is <｜Assistant｜><think>\n */
    bool chat_strip_think;     /* R1: assistant history keeps only what follows the last </think> */
    void *arena_blocks;        /* linked blocks holding every string of the tables (never moved) */
    char *arena_cur;
    size_t arena_used, arena_cap;
    tok_entry *ent;            /* builder: every token, in the order given (freed by tok_finish) */
    size_t n_ent, ent_cap;
    uint32_t *ent_by_id;       /* builder: open addressing id -> entry index + 1 (0: empty) */
    size_t ent_by_id_mask;
    char *scratch;             /* builder scratch (merge concatenation) */
    size_t scratch_cap;
    uint32_t jit_ok[2];        /* bit i: re[.][i] is JIT-compiled */
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
/* Ends the build: ids must be bounded by the vocabulary (at most as many unused ids below the
 * highest as there are tokens, plus TOK_ID_SLACK), then the by-id tables are laid out. */
int tok_finish(tokenizer *t, char *err, size_t errlen);
#define TOK_ID_SLACK 1024
/* While building: the token of an id (NULL when none; *len its length), and setting a TOK_F_ flag. */
const char *tok_token_at(const tokenizer *t, int32_t id, uint32_t *len);
void tok_flag(tokenizer *t, int32_t id, uint8_t flag);
int32_t tok_lookup(const tokenizer *t, const char *s, size_t len);
void tok_release(tokenizer *t);

int tok_load_json(tokenizer *t, const char *path, const char *data, size_t len, char *err, size_t errlen);
/* Loads model.vocab and model.merges straight from the text (after tok_init) and returns the document
 * with both emptied for jansson. 0 ok, 1 when they are absent or not an object/array, -1 error. */
int tok_jscan_model(tokenizer *t, const char *data, size_t len, char **skeleton, size_t *skel_len, char *err, size_t errlen);
/* Sets t->chat and its variant flags from t->chat_template. */
void tok_chat_detect(tokenizer *t);
int tok_load_gguf(tokenizer *t, const char *path, const uint8_t *data, size_t len, char *err, size_t errlen);
/* Every metadata key of a mapped GGUF (tokenizer_gguf_metadata without the file handling). */
int tok_gguf_metadata(const uint8_t *data, size_t len, gguf_meta_fn fn, void *ctx, uint64_t *n_tensors, char *err,
                      size_t errlen);

/* UTF-8: length of the valid prefix; and lossy conversion (one U+FFFD per maximal invalid subpart,
 * as Rust's String::from_utf8_lossy) appending to a growable buffer. */
size_t tok_utf8_valid_prefix(const char *s, size_t n);
/* The same, also telling whether the valid prefix holds a code point of tok_has_new_cp. */
size_t tok_utf8_check(const char *s, size_t n, bool *has_new);
uint64_t tok_hash_bytes(const char *s, size_t n);
/* Whether valid UTF-8 text holds a code point PCRE2's Unicode tables lack but HF's have (then the
 * extended regexes are needed; they are slower, so other text uses the plain ones). */
bool tok_has_new_cp(const char *s, size_t n);
int tok_utf8_lossy(const char *s, size_t n, char **buf, size_t *len, size_t *cap);
/* Appends bytes to a growable buffer. */
int tok_buf_append(char **buf, size_t *len, size_t *cap, const void *data, size_t n);
#endif
