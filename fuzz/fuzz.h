/* fuzz — entry points of the fuzz targets. Each takes one input, drives one parser or loader the way
 * dsperf does, and checks what must hold whatever the input (no crash, no undefined behaviour, no
 * leak: those the sanitizers report; plus each target's own property). 0 when the input passed,
 * non-zero (with a line on stderr) when a property failed.
 *
 * `make fuzz` links each with libFuzzer (fuzz/libfuzzer_main.c, clang); the tests replay every
 * file of tests/fuzz-corpus/<target>/ through the same functions with the normal compiler
 * (tests/fuzz_corpus_test.c), so the regression inputs run in CI without clang. */
#ifndef DSP_FUZZ_H
#define DSP_FUZZ_H
#include <stddef.h>
#include <stdint.h>

int fuzz_sse(const uint8_t *data, size_t len);        /* SSE parser + stream interpreter, split-invariant */
int fuzz_chunkscan(const uint8_t *data, size_t len);  /* the chunk scanner and its unescaper */
int fuzz_prom(const uint8_t *data, size_t len);       /* Prometheus text + the engine-metrics reader */
int fuzz_tok_json(const uint8_t *data, size_t len);   /* tokenizer.json loader, then encode/decode */
int fuzz_tok_gguf(const uint8_t *data, size_t len);   /* GGUF loader, then encode/decode */
int fuzz_results(const uint8_t *data, size_t len);    /* results file loader + terminal summary */

typedef int (*fuzz_fn)(const uint8_t *data, size_t len);
typedef struct { const char *name; fuzz_fn fn; } fuzz_target;
/* Every target, by the name of its corpus folder; NULL-terminated. */
extern const fuzz_target fuzz_targets[];
#endif
