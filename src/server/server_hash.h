/* server_hash — what an engine with prefix caching needs to know of a prompt: its tokens (serve's
 * tokens are whitespace-separated words, or the ids of a token-id prompt) in blocks of B, each
 * block's hash chained with the one before, as vLLM's prefix caching hashes KV blocks. Requests
 * sharing a prefix share the hashes of its whole blocks and no more; in chat, each message's role
 * is part of its words' identity (the template's markers differ). Internal to src/server. */
#ifndef DSP_SERVER_HASH_H
#define DSP_SERVER_HASH_H
#include <stddef.h>
#include <stdint.h>

/* The chained hashes of the request body's whole prompt blocks of block_tokens words into *out
 * (malloc'd, *n of them; NULL and 0 when the prompt is shorter than a block). 0 ok, -1 not a
 * request body this server parses, or out of memory. */
int srv_prompt_hashes(int api, const char *body, size_t len, int32_t block_tokens, uint64_t **out, int32_t *n);
/* The same over the prompt followed by the out_words words this server will answer with
 * (oai_word(seq, 0..out_words-1), in chat as the assistant's): the hashes of every whole block of
 * prompt + answer, as the next turn of a conversation will have them in its prompt. */
int srv_sequence_hashes(int api, const char *body, size_t len, int32_t block_tokens, uint64_t seq, int32_t out_words,
                        uint64_t **out, int32_t *n);
#endif
