/* fixed_lm — the seeded token model of `dsperf serve` (see fixed_lm.h for the definition). Every
 * number is a pure function of its inputs (hashes, no state), so two servers started with the
 * same seed agree exactly and a request repeated gets the same logprobs. */
#include "engine/fixed_lm.h"
#include "common/units.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const words[FIXED_LM_VOCAB] = {
    " alpha", " bravo", " charlie", " delta", " echo", " foxtrot", " golf", " hotel",
    " india", " juliet", " kilo", " lima", " mike", " november", " oscar", " papa",
    " quebec", " romeo", " sierra", " tango", " uniform", " victor", " whiskey", " xray",
    " yankee", " zulu", " amber", " basalt", " cobalt", " dune", " ember", " fjord",
};

#define JITTER_SALT 0x6a6974746572ULL   /* "jitter" */

void fixed_lm_default(fixed_lm *lm) {
    memset(lm, 0, sizeof *lm);
    lm->seed = 1;
    lm->scale = 4.0;
    lm->noise_seed = lm->seed ^ 0x6e6f697365ULL;   /* "noise" */
}

const char fixed_lm_help[] =
    "token model (logprobs, echo, prompt_logprobs; used when a request sets temperature 0 or asks for logprobs):\n"
    "  --logprob-seed N         the model: servers with the same seed give the same distribution (default 1)\n"
    "  --logprob-noise S[,G]    perturb every logit by a normal of std S*(1+G*L/1024) at context length L\n"
    "                           (deterministic: a stand-in for a quantized KV cache) (default 0)\n"
    "  --logprob-jitter S       perturb every logit by a normal of std S that differs on every request\n"
    "                           (a stand-in for batch nondeterminism; --seed picks the draws) (default 0)\n";

int fixed_lm_set(fixed_lm *lm, const char *key, const char *value, char *err, size_t errlen) {
    if (!strcmp(key, "logprob-seed")) {
        long long n;
        if (!value || units_parse_int(value, 0, INT64_MAX, &n) < 0) {
            snprintf(err, errlen, "--logprob-seed wants a non-negative integer, got '%s'", value ? value : "");
            return -1;
        }
        lm->seed = (uint64_t)n;
        lm->noise_seed = lm->seed ^ 0x6e6f697365ULL;
        return 0;
    }
    if (!strcmp(key, "logprob-noise")) {
        char buf[64];
        double s = 0, g = 0;
        snprintf(buf, sizeof buf, "%s", value ? value : "");
        char *comma = strchr(buf, ',');
        if (comma) *comma = 0;
        if (!value || units_parse_double(buf, &s) < 0 || s < 0 || s > 100 ||
            (comma && (units_parse_double(comma + 1, &g) < 0 || g < 0 || g > 1e6))) {
            snprintf(err, errlen, "--logprob-noise wants SIGMA[,GROWTH], two numbers >= 0 like 0.2 or 0.2,1.5, got '%s'",
                     value ? value : "");
            return -1;
        }
        lm->noise_sigma = s;
        lm->noise_growth = g;
        return 0;
    }
    if (!strcmp(key, "logprob-jitter")) {
        double s;
        if (!value || units_parse_double(value, &s) < 0 || s < 0 || s > 100) {
            snprintf(err, errlen, "--logprob-jitter wants a std >= 0 like 0.05, got '%s'", value ? value : "");
            return -1;
        }
        lm->jitter_sigma = s;
        return 0;
    }
    return 1;
}

double fixed_lm_sigma(const fixed_lm *lm, int64_t context_len) {
    return lm->noise_sigma * (1.0 + lm->noise_growth * (double)context_len / 1024.0);
}

static uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

double fixed_lm_normal(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
    uint64_t h = mix(a ^ mix(b ^ mix(c ^ mix(d))));
    uint64_t h2 = mix(h ^ 0xd1b54a32d192ed03ULL);
    double u1 = (double)((h >> 11) + 1) * 0x1.0p-53;   /* (0, 1] */
    double u2 = (double)(h2 >> 11) * 0x1.0p-53;        /* [0, 1) */
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

uint32_t fixed_lm_word_id(const char *word, size_t len) {
    while (len && (*word == ' ' || *word == '\t' || *word == '\n' || *word == '\r')) { word++; len--; }
    while (len && (word[len - 1] == ' ' || word[len - 1] == '\t' || word[len - 1] == '\n' || word[len - 1] == '\r')) len--;
    for (uint32_t i = 0; i < FIXED_LM_VOCAB; i++)
        if (strlen(words[i]) - 1 == len && !memcmp(words[i] + 1, word, len)) return i;
    uint64_t h = 1469598103934665603ULL;   /* FNV-1a */
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)word[i]) * 1099511628211ULL;
    return FIXED_LM_CLASSES + (uint32_t)(h % (0x7fffffffu - FIXED_LM_CLASSES));
}

const char *fixed_lm_word(uint32_t id) {
    return id < FIXED_LM_VOCAB ? words[id] : NULL;
}

void fixed_lm_logprobs(const fixed_lm *lm, uint32_t prev2, uint32_t prev1, int64_t pos, uint64_t nonce, double *lp) {
    uint64_t ctx = (uint64_t)prev2 << 32 | prev1;
    double sigma = fixed_lm_sigma(lm, pos);
    double mx = -INFINITY;
    for (uint32_t v = 0; v < FIXED_LM_CLASSES; v++) {
        double z = v < FIXED_LM_VOCAB ? lm->scale * fixed_lm_normal(lm->seed, ctx, (uint64_t)pos, v) : -3.0 * lm->scale;
        if (sigma > 0) z += sigma * fixed_lm_normal(lm->noise_seed, ctx, (uint64_t)pos, v);
        if (lm->jitter_sigma > 0) z += lm->jitter_sigma * fixed_lm_normal(lm->noise_seed ^ JITTER_SALT ^ mix(nonce ^ mix(lm->nonce_salt)), ctx, (uint64_t)pos, v);
        lp[v] = z;
        if (z > mx) mx = z;
    }
    double sum = 0;
    for (uint32_t v = 0; v < FIXED_LM_CLASSES; v++) sum += exp(lp[v] - mx);
    double lse = mx + log(sum);
    for (uint32_t v = 0; v < FIXED_LM_CLASSES; v++) lp[v] -= lse;
}

uint32_t fixed_lm_argmax(const double *lp) {
    uint32_t best = 0;
    for (uint32_t v = 1; v < FIXED_LM_VOCAB; v++)
        if (lp[v] > lp[best]) best = v;
    return best;
}

int fixed_lm_rank(const double *lp, uint32_t c) {
    int r = 1;
    for (uint32_t v = 0; v < FIXED_LM_CLASSES; v++)
        if (v != c && (lp[v] > lp[c] || (lp[v] == lp[c] && v < c))) r++;
    return r;
}

int fixed_lm_top(const double *lp, int k, uint32_t *ids) {
    if (k > FIXED_LM_VOCAB) k = FIXED_LM_VOCAB;
    if (k <= 0) return 0;
    /* insertion into a sorted prefix: k and the vocabulary are small */
    int n = 0;
    for (uint32_t v = 0; v < FIXED_LM_VOCAB; v++) {
        int i = n < k ? n++ : k;
        if (i == k && !(lp[v] > lp[ids[k - 1]])) continue;
        if (i == k) i = k - 1;
        while (i > 0 && lp[v] > lp[ids[i - 1]]) { ids[i] = ids[i - 1]; i--; }
        ids[i] = v;
    }
    return n;
}
