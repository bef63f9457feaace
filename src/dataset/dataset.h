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
 *   mooncake:FILE                 a production trace in Moonshot's Mooncake format (dataset/trace.h):
 *                                 prompts built from hashed blocks, generated from their ids when sent
 *   sessions:n=N,turns=T,...      multi-turn conversations whose turns carry the server's real
 *                                 answers (dataset/sessions.h; the load runner builds each turn)
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
    /* prompt tokens a prefix cache of unbounded size could serve for this request, given every
     * request before it in the plan (the workload's bound on the hit rate); -1 unknown */
    int32_t cacheable_tokens;
    /* trace items (mooncake): no stored text; the prompt is rendered from these block ids when
     * sent (dataset_item_text), so half a million distinct blocks cost their ids only */
    const uint64_t *block_ids;
    int32_t n_blocks;
    int32_t text_tokens;   /* tokens of prompt text to render (the request's length less what the
                            * server adds: BOS, chat template markers) */
    const struct ds_blocks *blocks;   /* the block generator, NULL for stored prompts */
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
    int32_t prefix_tokens;     /* prefix datasets: the tokens each group's requests share */
    /* trace datasets (mooncake) */
    struct ds_blocks *blocks;  /* block ids and the text generator (owned) */
    int32_t block_tokens;      /* tokens per hash id (--block-size) */
    size_t trace_lines;        /* requests in the file before --trace-window */
    size_t distinct_blocks;    /* distinct hash ids among the requests kept */
    long long working_set_tokens; /* their tokens: what a cache must hold to miss nothing but first sights */
    /* the hit rate an LRU prefix cache allows by its capacity (dataset/trace.h), at 5%, 10%, ..
     * 100% of the bound: lru_tokens[i] tokens of KV give lru_rate[i] */
    int n_lru;
    long long lru_tokens[20];
    double lru_rate[20];
    char length_error[512];    /* set by dataset_count_for_api when a rendered prompt misses its
                                * length (the run must not go ahead); "" when fine */
    /* sessions datasets: the conversations' shape and state (owned; dataset/sessions.h) */
    struct ds_sessions *sessions;
} dataset;

typedef struct {
    const tokenizer *tok;  /* NULL: lengths in words */
    double tolerance;      /* allowed relative error of a declared length (jsonl "input_tokens"), e.g. 0.05 */
    /* trace replay (timestamps of jsonl and mooncake files) */
    double time_scale;     /* timestamps are multiplied by this (0.5: twice as fast); 0 = 1 */
    int64_t window_start_ns, window_end_ns;  /* --trace-window: keep requests whose offset from the
                                              * trace's first one is in [start, end); end 0 = none */
    int32_t block_tokens;  /* mooncake: tokens per hash id (0 = 512) */
} dataset_opts;

/* Loads or generates the dataset for spec. n_hint is how many random prompts to make (the run's
 * request count; cycled when the run is longer). Returns 0, or -1 with a one-line err. */
int dataset_open(const char *spec, size_t n_hint, uint64_t seed, const dataset_opts *o, dataset **out, char *err, size_t errlen);
/* Sets every item's in_tokens to what the server will count: with a tokenizer (the one the
 * dataset was opened with), the prompt plus BOS (completions) or the chat template's rendering
 * (chat); without one, words. Runs once per dataset; later calls do nothing. */
void dataset_count_for_api(dataset *d, const tokenizer *tok, bool chat);
void dataset_free(dataset *d);
/* The workload's bound for the request at plan position plan_index (the dataset cycled): the
 * item's own bound on the first pass, and on a replay that starts over, what the first pass left
 * in an unbounded cache. -1 unknown. */
int32_t dataset_cacheable_tokens(const dataset *d, size_t plan_index);
/* The prompt text of an item: its stored prompt, or a trace item's blocks rendered into *buf
 * (malloc'd, the caller frees it; NULL for stored prompts). *len gets the length. NULL when the
 * item has chat messages only, or out of memory (*buf NULL then too). */
const char *dataset_item_text(const dataset_item *it, char **buf, size_t *len);
/* Whether the item's rendered text needs no JSON escaping (a trace item whose words are ASCII
 * letters only, as the tokenizer's single-token words and the built-in words are). */
bool dataset_item_text_plain(const dataset_item *it);
/* Counts length units (words) in text. */
int32_t dataset_count_words(const char *text, size_t len);
#endif
