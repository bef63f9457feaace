/* tokenizer — exact byte-level BPE for DeepSeek vocabularies, identical to Hugging Face `tokenizers`.
 * Loads a tokenizer.json (plus tokenizer_config.json beside it when present) or the vocabulary of a
 * GGUF file. Encoding: added tokens split out first, then the pre-tokenizer regex chain (PCRE2 JIT),
 * byte-level mapping and BPE merges by rank. A loaded tokenizer is immutable: every function below
 * may be called from several threads at once (caches are per thread). */
#ifndef DSP_TOKENIZER_H
#define DSP_TOKENIZER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tokenizer tokenizer;

/* Loads a tokenizer.json or a GGUF file (recognised by content), or the tokenizer.json of a model
 * directory. 0 on success; negative on error with
 * a one-line reason in err (missing file, truncated at offset N, unsupported model type, missing key). */
int tokenizer_load(const char *path, tokenizer **out, char *err, size_t errlen);
void tokenizer_free(tokenizer *t);

/* Encodes text (UTF-8; invalid bytes are first replaced by U+FFFD per maximal invalid subpart, as a
 * Rust/JS string conversion does before HF sees the text). add_bos prepends the BOS id. *ids is
 * malloc'ed, the caller frees it (may be NULL when *n_ids is 0). 0 ok, negative on error. */
int tokenizer_encode(const tokenizer *t, const char *text, size_t len, bool add_bos, int32_t **ids, size_t *n_ids);
/* Number of tokens of text, no BOS; reuses per-thread buffers. Returns (size_t)-1 on internal error. */
size_t tokenizer_count(const tokenizer *t, const char *text, size_t len);
/* Decodes ids to UTF-8 as HF decode(ids, skip_special_tokens=false): runs of model tokens through the
 * byte-level decoder with invalid UTF-8 replaced by U+FFFD, added tokens verbatim, unknown ids skipped.
 * *out is malloc'ed and NUL-terminated; the caller frees it. */
int tokenizer_decode(const tokenizer *t, const int32_t *ids, size_t n, char **out, size_t *len);

int32_t tokenizer_bos_id(const tokenizer *t);   /* -1 when the vocabulary has none */
int32_t tokenizer_eos_id(const tokenizer *t);
size_t tokenizer_vocab_size(const tokenizer *t); /* highest id + 1 */
/* Whether the model's configuration asks for a BOS (tokenizer_config.json add_bos_token, GGUF
 * tokenizer.ggml.add_bos_token). The servers add it; pass this as add_bos to count like them. */
bool tokenizer_add_bos_default(const tokenizer *t);
/* Whether id names a token decode would write (a vocabulary or added token; not GGUF padding). */
bool tokenizer_id_known(const tokenizer *t, int32_t id);
/* The token's text as stored in the vocabulary (byte-level form, e.g. "Ġhello"), NULL if none. */
const char *tokenizer_token_text(const tokenizer *t, int32_t id);

/* Words from the vocabulary that are exactly one token when preceded by a space ("Ġhello"), alphabetic
 * ASCII, checked by encoding, in id order: a prompt " w1 w2 w3 ..." has exactly as many tokens as words.
 * *words is a malloc'ed array (the caller frees the array only; the strings belong to t); NULL and 0
 * on error. */
int tokenizer_single_token_words(const tokenizer *t, const char ***words, size_t *n);

/* Number of tokens of the prompt the server renders from chat messages with the model's chat template
 * and add_generation_prompt=true (BOS included when the template writes it). Roles: "system", "user",
 * "assistant", "tool". Supports the DeepSeek-V3/R1 template family (<｜User｜>/<｜Assistant｜> markers) and
 * DeepSeek-LLM/V2's ("User: ...", "Assistant: ..."); returns -2 when the tokenizer has neither. */
int tokenizer_chat_prompt_tokens(const tokenizer *t, const char *const *roles, const char *const *contents,
                                 size_t n_messages, size_t *n_tokens);
/* The same prompt as text (malloc'ed, NUL-terminated); same return codes. */
int tokenizer_chat_render(const tokenizer *t, const char *const *roles, const char *const *contents,
                          size_t n_messages, char **out, size_t *len);
/* One metadata key/value of a GGUF header, for readers of keys beyond the tokenizer's (the served
 * model's architecture): integers and bools as i (and r), floats as r, strings as s/s_len (not
 * NUL-terminated), arrays by their element count n only. key is not NUL-terminated either. */
typedef struct {
    const char *key;
    size_t key_len;
    enum { GGUF_META_INT, GGUF_META_REAL, GGUF_META_STR, GGUF_META_ARRAY } kind;
    int64_t i;
    double r;
    const char *s;
    size_t s_len;
    uint64_t n;
} gguf_meta;
typedef void (*gguf_meta_fn)(void *ctx, const gguf_meta *kv);
/* Reads the header of a GGUF file (mapped; tensors are never touched, so a model file of any size
 * costs its header) and calls fn once per metadata key, in file order. *n_tensors (may be NULL)
 * gets the tensor count: 0 for a vocabulary-only file. 0 ok, -1 with a one-line err (missing file,
 * not GGUF, truncated at offset N). */
int tokenizer_gguf_metadata(const char *path, gguf_meta_fn fn, void *ctx, uint64_t *n_tensors, char *err, size_t errlen);
#endif
