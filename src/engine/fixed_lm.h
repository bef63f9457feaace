/* fixed_lm — the token model behind `dsperf serve`'s logprobs: a seeded next-token distribution
 * over a 32-word vocabulary computed from the context (the last two token ids and the position),
 * so the same request always gets the same logprobs and greedy output, plus a known perturbation
 * of the logits whose size grows with context length (a stand-in for a quantized KV cache), and
 * an optional per-request perturbation (a stand-in for batch nondeterminism). It is the server
 * with known truth that `dsperf drift` is tested against.
 *
 * The definition (what the tests derive their expected values from):
 *   classes   v = 0..31 are the words " alpha" .. " fjord"; class 32 is "any other word" (prompt
 *             words outside the vocabulary), never generated and never listed in top_logprobs
 *   base      z_v = scale * N(seed; prev2, prev1, pos, v) for v < 32, z_32 = -3 * scale
 *   noise     z_v += sigma(pos) * N(noise_seed; prev2, prev1, pos, v),
 *             sigma(L) = noise_sigma * (1 + noise_growth * L / 1024)
 *   jitter    z_v += jitter_sigma * N(noise_seed ^ J(nonce, nonce_salt); prev2, prev1, pos, v)   (nonce: one per request)
 *   logprobs  log-softmax of z over the 33 classes; greedy = argmax over the 32 words
 * where N(...) is a standard normal drawn from a hash of its arguments (Box–Muller on 64 bits),
 * pos is the number of tokens before the position (its context length) and prev1/prev2 the ids
 * of the one and two tokens before (FIXED_LM_NONE at the start). Every N is independent. */
#ifndef DSP_ENGINE_FIXED_LM_H
#define DSP_ENGINE_FIXED_LM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FIXED_LM_VOCAB 32                /* words the model generates */
#define FIXED_LM_CLASSES (FIXED_LM_VOCAB + 1)
#define FIXED_LM_OTHER FIXED_LM_VOCAB    /* the class of every out-of-vocabulary prompt word */
#define FIXED_LM_NONE 0xffffffffu        /* "no token" before the start */

typedef struct {
    uint64_t seed;          /* base distribution: two servers with the same seed are the same model (1) */
    double scale;           /* std of the base logits (4) */
    double noise_sigma;     /* std of the logit perturbation at context 0 (0 = none) */
    double noise_growth;    /* sigma(L) = noise_sigma * (1 + noise_growth * L / 1024) (0) */
    uint64_t noise_seed;    /* draws of the perturbation (seed ^ 0x6e6f697365) */
    double jitter_sigma;    /* per-request perturbation std, different on every request (0) */
    uint64_t nonce_salt;    /* mixed into every nonce, so two servers' request numbers draw different jitter
                             * (dsperf serve sets its --seed) (0) */
} fixed_lm;

void fixed_lm_default(fixed_lm *lm);

/* Sets one option by its command-line name (without "--"): logprob-seed N, logprob-noise
 * SIGMA[,GROWTH], logprob-jitter SIGMA. 0 ok, 1 unknown key, -1 bad value (err says why). */
int fixed_lm_set(fixed_lm *lm, const char *key, const char *value, char *err, size_t errlen);
extern const char fixed_lm_help[];

/* The perturbation's std at context length L (tokens before the position). */
double fixed_lm_sigma(const fixed_lm *lm, int64_t context_len);

/* Word id: 0..31 for a vocabulary word (compared without surrounding whitespace), otherwise an
 * id >= FIXED_LM_CLASSES derived from a hash of the word (all such words share class 32). */
uint32_t fixed_lm_word_id(const char *word, size_t len);
/* The text of vocabulary word id (" alpha"), NULL for any other id. */
const char *fixed_lm_word(uint32_t id);
/* The class of a token id: the id for words, FIXED_LM_OTHER otherwise. */
static inline uint32_t fixed_lm_class(uint32_t id) { return id < FIXED_LM_VOCAB ? id : FIXED_LM_OTHER; }

/* Log-probabilities of the 33 classes at one position (lp[FIXED_LM_CLASSES]); nonce selects the
 * request's jitter (ignored when jitter_sigma is 0). */
void fixed_lm_logprobs(const fixed_lm *lm, uint32_t prev2, uint32_t prev1, int64_t pos, uint64_t nonce, double *lp);
/* The greedy word: argmax of lp over the 32 words. */
uint32_t fixed_lm_argmax(const double *lp);
/* Rank (1 = most likely) of class c among the classes (words, and the other class) by lp. */
int fixed_lm_rank(const double *lp, uint32_t c);
/* The k most likely words in descending order into ids[k] (k <= 32); returns k. */
int fixed_lm_top(const double *lp, int k, uint32_t *ids);
/* A standard normal from a hash of the four values (the N of the definition above). */
double fixed_lm_normal(uint64_t a, uint64_t b, uint64_t c, uint64_t d);
#endif
