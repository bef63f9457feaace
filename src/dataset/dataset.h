/* dataset — the prompts a run sends: `random:in=N,out=M,range=F` (prompts of N ± range·N length
 * units built from real words, max_tokens M ± range·M, ignore_eos) and `jsonl:FILE` (one object a
 * line: "prompt" or "messages", optional "max_tokens", optional "timestamp" in seconds).
 * The length unit is the client's token counter (words until a tokenizer is given). */
#ifndef DSP_DATASET_H
#define DSP_DATASET_H
#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

typedef struct {
    char *prompt;          /* completions prompt, or NULL when messages are given */
    char *messages_json;   /* chat messages as a JSON array text, or NULL */
    int32_t in_tokens;     /* prompt length by the client's counter (-1 unknown) */
    int32_t max_tokens;    /* -1: not set (server default) */
    int64_t timestamp_ns;  /* trace replay offset, -1 when absent */
} dataset_item;

typedef struct {
    dataset_item *items;
    size_t n;
    bool ignore_eos;       /* random datasets ask the server to ignore EOS */
    char *spec;            /* as given */
    const char *length_unit; /* "words" or "tokens" */
} dataset;

/* Loads or generates the dataset for spec. n_hint is how many random prompts to make (the run's
 * request count; cycled when the run is longer). Returns 0, or -1 with a one-line err. */
int dataset_open(const char *spec, size_t n_hint, uint64_t seed, dataset **out, char *err, size_t errlen);
void dataset_free(dataset *d);
/* Counts length units (words) in text. */
int32_t dataset_count_words(const char *text, size_t len);
#endif
