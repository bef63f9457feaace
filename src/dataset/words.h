/* words — the built-in word list random prompts are made from. */
#ifndef DSP_WORDS_H
#define DSP_WORDS_H
#include <stddef.h>
const char *const *words_list(size_t *n);
#endif
