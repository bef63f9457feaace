/* dataset — the prompts a run sends:
 *   random:in=N,out=M,range=F     prompts of N ± range·N tokens built from real words (with a
 *                                 tokenizer: the vocabulary's own single-token words, checked),
 *                                 max_tokens M ± range·M, ignore_eos
 *   jsonl:FILE                    one object a line: "prompt" or "messages", optional "max_tokens",
 *                                 "timestamp" (s, for trace replay), "input_tokens" (checked)
 *   sharegpt:FILE                 the ShareGPT layout: first human turn is the prompt, the reply's
 *                                 length is max_tokens
 *   prefix:groups=G,prefix=P,suffix=S,out=M
 *                                 G groups sharing a P-token system prompt, each request adding its
 *                                 own S-token suffix (prefix-cache tests)
 * The length unit is the client's tokenizer when one is given, else words. Every prompt's length is
 * measured before the run (tokenization pre-validation): a random prompt that misses its length is
 * rebuilt; a file prompt whose declared length is off beyond the tolerance refuses the run. */
#ifndef DSP_DATASET_H
#define DSP_DATASET_H
#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include "tokenizer/tokenizer.h"

typedef struct {
    char *prompt;          /* completions prompt, or NULL when messages are given */
    char *messages_json;   /* chat messages as a JSON array text, or NULL */
    int32_t in_tokens;     /* prompt length by the client's counter (-1 unknown) */
    int32_t max_tokens;    /* -1: not set (server default) */
    int64_t timestamp_ns;  /* trace replay offset, -1 when absent */
    int32_t group;         /* prefix group (prefix datasets), -1 otherwise */
} dataset_item;

typedef struct {
    dataset_item *items;
    size_t n;
    bool ignore_eos;       /* random datasets ask the server to ignore EOS */
    char *spec;            /* as given */
    const char *length_unit; /* "words" or "tokens" */
    /* pre-validation: prompt lengths as measured before the run */
    int32_t len_min, len_max;
    double len_mean;
    size_t rebuilt;        /* random prompts rebuilt because their length was off */
    size_t skipped;        /* file entries left out (too short, no reply, ...) */
    bool api_counted;      /* dataset_count_for_api has run */
} dataset;

typedef struct {
    const tokenizer *tok;  /* NULL: lengths in words */
    double tolerance;      /* allowed relative error of a declared length (jsonl "input_tokens"), e.g. 0.05 */
} dataset_opts;

/* Loads or generates the dataset for spec. n_hint is how many random prompts to make (the run's
 * request count; cycled when the run is longer). Returns 0, or -1 with a one-line err. */
int dataset_open(const char *spec, size_t n_hint, uint64_t seed, const dataset_opts *o, dataset **out, char *err, size_t errlen);
/* Sets every item's in_tokens to what the server will count: with a tokenizer (the one the
 * dataset was opened with), the prompt plus BOS (completions) or the chat template's rendering
 * (chat); without one, words. Runs once per dataset; later calls do nothing. */
void dataset_count_for_api(dataset *d, const tokenizer *tok, bool chat);
void dataset_free(dataset *d);
/* Counts length units (words) in text. */
int32_t dataset_count_words(const char *text, size_t len);
#endif
