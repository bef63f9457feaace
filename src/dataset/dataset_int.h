/* dataset_int — what the dataset module's files share (not part of its interface, dataset.h):
 * the word sources prompts are built from, exact-length prompts, the length measure, and the
 * openers of the trace and session datasets. */
#ifndef DSP_DATASET_INT_H
#define DSP_DATASET_INT_H
#include "dataset/dataset.h"
#include "common/rng.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Words prompts are made of: the tokenizer's single-token words (each one token *with* a leading
 * space, so " w1 w2 ..." has exactly as many tokens as words), else the built-in English list. */
typedef struct {
    const char *const *words;
    const char **owned;     /* tokenizer words array (strings belong to the tokenizer) */
    size_t n;
    bool leading_space;     /* tokenizer words are single tokens *with* their leading space */
} word_source;

int ds_words_open(word_source *w, const dataset_opts *o, char *err, size_t errlen);
void ds_words_close(word_source *w);
/* Appends k random words to buf (grown as needed). 0 ok, -1 out of memory. */
int ds_append_words(char **buf, size_t *len, size_t *cap, const word_source *w, rng *r, int32_t k);
/* A prompt of exactly n units, checked (rebuilt up to 8 times; *rebuilt counts them). NULL on failure. */
char *ds_exact_prompt(const word_source *w, const dataset_opts *o, rng *r, int32_t n, size_t *rebuilt);
/* Length of text in the dataset's unit (tokens with o->tok, else words); -1 on tokenizer error. */
int32_t ds_measure(const dataset_opts *o, const char *text, size_t len);
dataset *ds_new(const char *spec, size_t n, const dataset_opts *o);
void ds_finish_stats(dataset *d);

/* mooncake:FILE (trace.c) */
int ds_open_mooncake(const char *spec, const char *path, uint64_t seed, const dataset_opts *o, dataset **out,
                     char *err, size_t errlen);
/* Counts a trace for the api (trace.c): sets text_tokens so the server counts input_length, and
 * checks rendered prompts against it (all of them up to a budget of tokens, a seeded sample beyond). */
void ds_trace_count_for_api(dataset *d, const tokenizer *tok, bool chat);
void ds_blocks_free(struct ds_blocks *b);
/* Applies --time-scale to every item's timestamp (jsonl and mooncake). */
void ds_scale_times(dataset *d, const dataset_opts *o);

/* sessions:... (sessions.c) */
int ds_open_sessions(const char *spec, const char *args, uint64_t seed, const dataset_opts *o, dataset **out,
                     char *err, size_t errlen);
void ds_sessions_free(struct ds_sessions *s);
/* The api and tokenizer the turns are counted for (dataset_count_for_api). */
void ds_sessions_set_api(struct ds_sessions *s, const tokenizer *tok, bool chat);
#endif
