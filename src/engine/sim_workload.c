/* sim_workload — what `dsperf sim` replays, without prompt text: request lengths drawn exactly as
 * the dataset module draws them (random), ShareGPT-like spreads (lognormal), or a dataset file
 * kept open for what the engine's prefix cache needs (a trace's block ids, prefix groups, the
 * workload's bound on the hit rate) and for conversations (sessions). See sim_run.h. */
#include "engine/sim_run.h"
#include "common/rng.h"
#include "load/arrival.h"
#include "dataset/dataset.h"
#include "dataset/sessions.h"
#include "dataset/words.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The dataset module's random draw, replayed without the text: the same seed derivation and the
 * same sequence of draws (prompt length, one word per length unit, output length). */
#define DATASET_RANDOM_SEED_XOR 0x5eedda7a5e7ULL

static int32_t draw_len(rng *r, long mean, double range) {
    if (range <= 0) return (int32_t)mean;
    long lo = (long)floor(mean * (1 - range)), hi = (long)ceil(mean * (1 + range));
    if (lo < 1) lo = 1;
    return (int32_t)(lo + (long)rng_below(r, (uint64_t)(hi - lo + 1)));
}

static int parse_random(const char *spec, long *in, long *out, double *range) {
    *in = 1024;
    *out = 128;
    *range = 0;
    const char *s = spec + 6;
    if (!*s) return 0;
    if (*s++ != ':') return -1;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '='), *end;
        if (!eq) return -1;
        *eq++ = 0;
        if (!strcmp(tok, "in")) { *in = strtol(eq, &end, 10); if (*end || *in < 1) return -1; }
        else if (!strcmp(tok, "out")) { *out = strtol(eq, &end, 10); if (*end || *out < 1) return -1; }
        else if (!strcmp(tok, "range")) { *range = strtod(eq, &end); if (*end || *range < 0 || *range >= 1) return -1; }
        else return -1;
    }
    return 0;
}

/* lognormal:in=MEAN,out=MEAN[,sigma=S,out_sigma=S,max_in=N,max_total=N] — a ShareGPT-like spread of
 * lengths (lognormal, clamped to [4, max]) rescaled so the totals are exactly n x the means: a
 * published run gives its token totals, not its lengths. out_sigma (default sigma) spreads the
 * outputs apart: 0 fixes them (a benchmark that sets every output's length, e.g. vllm bench serve
 * --sharegpt-output-len). */
static int lognormal_lengths(const char *spec, size_t n, uint64_t seed, int32_t **ins, int32_t **outs, char *err,
                             size_t errlen) {
    double mean_in = 0, mean_out = 0, sigma = 1.0, out_sigma = -1, max_in = 1 << 20, max_total = 1 << 21;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec + 10);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '='), *end;
        if (!eq) goto bad;
        *eq++ = 0;
        double v = strtod(eq, &end);
        if (*end || v < 0 || (v == 0 && strcmp(tok, "out_sigma"))) goto bad;
        if (!strcmp(tok, "in")) mean_in = v;
        else if (!strcmp(tok, "out_sigma")) out_sigma = v;
        else if (!strcmp(tok, "out")) mean_out = v;
        else if (!strcmp(tok, "sigma")) sigma = v;
        else if (!strcmp(tok, "max_in")) max_in = v;
        else if (!strcmp(tok, "max_total")) max_total = v;
        else goto bad;
    }
    if (mean_in < 1 || mean_out < 1 || n == 0) goto bad;
    if (out_sigma < 0) out_sigma = sigma;
    *ins = malloc(sizeof(int32_t) * n);
    *outs = malloc(sizeof(int32_t) * n);
    double *a = malloc(sizeof(double) * n), *b = malloc(sizeof(double) * n);
    if (!*ins || !*outs || !a || !b) { free(a); free(b); free(*ins); free(*outs); *ins = *outs = NULL; snprintf(err, errlen, "out of memory"); return -1; }
    rng r;
    rng_seed(&r, seed ^ 0x109e5ULL);
    double sa = 0, sb = 0;
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < 2; k++) {
            double z = rng_normal(&r), sg = k ? out_sigma : sigma;
            double v = exp(log(k ? mean_out : mean_in) - sg * sg / 2 + sg * z);
            if (k) b[i] = v; else a[i] = v;
        }
        a[i] = fmin(fmax(a[i], 4), max_in);
        b[i] = fmin(fmax(b[i], 4), max_total - a[i]);
        sa += a[i];
        sb += b[i];
    }
    double fa = mean_in * n / sa, fb = mean_out * n / sb;
    for (size_t i = 0; i < n; i++) {
        (*ins)[i] = (int32_t)fmax(1, llround(a[i] * fa));
        (*outs)[i] = (int32_t)fmax(1, llround(b[i] * fb));
    }
    free(a);
    free(b);
    return 0;
bad:
    snprintf(err, errlen, "bad dataset '%s': expected lognormal:in=MEAN,out=MEAN[,sigma=S,out_sigma=S,max_in=N,max_total=N]", spec);
    return -1;
}

int sim_workload_lengths(const char *spec, size_t *n, uint64_t seed, int32_t default_out, int32_t **ins,
                         int32_t **outs, int64_t **times_ns, char *err, size_t errlen) {
    sim_load l;
    if (sim_load_open(spec, *n, seed, default_out, NULL, &l, err, errlen) < 0) return -1;
    if (l.sess.n) {
        sim_load_free(&l);
        snprintf(err, errlen, "a sessions dataset is conversations, not a list of requests");
        return -1;
    }
    *n = l.n;
    *ins = l.ins;
    *outs = l.outs;
    *times_ns = l.stamps_ns;
    l.ins = l.outs = NULL;
    l.stamps_ns = NULL;
    sim_load_free(&l);
    return 0;
}

void sim_load_free(sim_load *l) {
    free(l->ins);
    free(l->outs);
    free(l->stamps_ns);
    free(l->groups);
    dataset_free(l->ds);
    memset(l, 0, sizeof *l);
}

/* The dataset's conversations: their shape, as the spec gives it (tokens). */
static void sessions_of(const dataset *d, sim_sessions *s) {
    s->n = sessions_count(d->sessions);
    s->turns = sessions_turns(d->sessions);
    s->think_ns = sessions_think_ns(d->sessions);
    sessions_lengths(d->sessions, &s->first, &s->user, &s->out, &s->system);
}

int sim_load_open(const char *spec, size_t n, uint64_t seed, int32_t default_out, const dataset_opts *o, sim_load *l,
                  char *err, size_t errlen) {
    memset(l, 0, sizeof *l);
    l->n = n;
    if (!strncmp(spec, "random", 6) && (!spec[6] || spec[6] == ':')) {
        long in, out;
        double range;
        if (parse_random(spec, &in, &out, &range) < 0) {
            snprintf(err, errlen, "bad dataset '%s': expected random:in=N,out=M,range=F with N, M >= 1 and 0 <= F < 1", spec);
            return -1;
        }
        if (n == 0) { snprintf(err, errlen, "a random dataset needs a request count"); return -1; }
        l->ins = malloc(sizeof(int32_t) * n);
        l->outs = malloc(sizeof(int32_t) * n);
        if (!l->ins || !l->outs) goto oom;
        size_t nw;
        words_list(&nw);
        rng r;
        rng_seed(&r, seed ^ DATASET_RANDOM_SEED_XOR);
        for (size_t i = 0; i < n; i++) {
            l->ins[i] = draw_len(&r, in, range);
            if (range > 0)   /* the words of the prompt; constant lengths draw nothing else */
                for (int32_t k = 0; k < l->ins[i]; k++) rng_below(&r, nw);
            l->outs[i] = draw_len(&r, out, range);
        }
        return 0;
    }
    if (!strncmp(spec, "lognormal:", 10)) return lognormal_lengths(spec, n, seed, &l->ins, &l->outs, err, errlen);
    dataset *d;
    if (dataset_open(spec, n, seed, o, &d, err, errlen) < 0) return -1;   /* lengths in words, as bench without a tokenizer */
    l->ds = d;
    if (d->sessions) {
        sessions_of(d, &l->sess);
        l->n = l->sess.n;
        return 0;
    }
    int stamped = d->n > 0;
    for (size_t i = 0; i < d->n; i++) stamped &= d->items[i].timestamp_ns >= 0;
    if (n == 0) n = l->n = d->n;
    l->ins = malloc(sizeof(int32_t) * n);
    l->outs = malloc(sizeof(int32_t) * n);
    if (stamped) l->stamps_ns = malloc(sizeof(int64_t) * n);
    int grouped = d->n > 0 && d->items[0].group >= 0;
    if (grouped) l->groups = malloc(sizeof(int32_t) * n);
    if (!l->ins || !l->outs || (stamped && !l->stamps_ns) || (grouped && !l->groups)) goto oom;
    if (grouped) l->prefix_len = d->prefix_tokens;
    for (size_t i = 0; i < n; i++) {
        const dataset_item *it = &d->items[i % d->n];   /* cycled, as bench does */
        l->ins[i] = it->in_tokens > 0 ? it->in_tokens : 1;
        l->outs[i] = it->max_tokens > 0 ? it->max_tokens : default_out;
        if (stamped) l->stamps_ns[i] = it->timestamp_ns;
        if (grouped) l->groups[i] = it->group;
    }
    return 0;
oom:
    sim_load_free(l);
    snprintf(err, errlen, "out of memory");
    return -1;
}

int sim_workload_arrivals(const char *process, double rate_per_s, size_t n, int64_t **times_ns) {
    *times_ns = NULL;
    arrival arr;
    if (!(rate_per_s > 0) || !isfinite(rate_per_s)) return -1;
    if ((!process || arrival_parse(process, rate_per_s, &arr) < 0) && arrival_parse("poisson", rate_per_s, &arr) < 0) return -1;
    int64_t *t = calloc(n ? n : 1, sizeof *t);
    if (!t) return -1;
    rng g;
    rng_seed(&g, 1);
    arrival_schedule(&arr, &g, 0, t, n);
    *times_ns = t;
    return 0;
}

/* The dataset spec of a random: level whose server found a share hit of the prompt tokens in its
 * prefix cache: the same requests with that share of each prompt already computed, which the
 * simulated engine sees as prompts that much shorter (an older sweep resent every level the same
 * prompts, and llama-server reused its slots' KV for them). 0 when spec is not random:in=N. */
double sim_workload_uncached_share(double hit) {
    return hit >= 0.005 && hit < 1 ? 1 - hit : 1;   /* below half a percent: a stray token */
}

int sim_workload_uncached(const char *spec, double hit, char *out, size_t outlen) {
    const char *in = strncmp(spec, "random:", 7) ? NULL : strstr(spec, "in=");
    double share = sim_workload_uncached_share(hit);
    if (!in || share == 1) return 0;
    char *end;
    double n = strtod(in + 3, &end);
    if (!(n >= 1) || end == in + 3) return 0;
    double m = fmax(1, round(n * share));
    snprintf(out, outlen, "%.*s%.0f%s", (int)(in + 3 - spec), spec, m, end);
    return 1;
}

/* The tokens one request of the dataset spec leaves in its llama-server slot on average (its prompt
 * and all but its last token), from the lengths the simulator draws for it; 0 when it has none. */
int32_t sim_workload_slot_tokens(const char *spec) {
    size_t n = 64;
    int32_t *ins = NULL, *outs = NULL;
    int64_t *stamps = NULL;
    char e[256];
    if (sim_workload_lengths(spec, &n, 1, 128, &ins, &outs, &stamps, e, sizeof e) < 0) return 0;
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += ins[i] + outs[i] - 1;
    free(ins);
    free(outs);
    free(stamps);
    return n > 0 ? (int32_t)lround(sum / (double)n) : 0;
}
