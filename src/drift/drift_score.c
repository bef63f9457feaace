/* drift_score — one teacher-forced position compared: does the candidate's most likely token agree
 * with the baseline's (greedy) token, where does that token rank on the candidate, how did its
 * logprob move, and KL(baseline || candidate) estimated from the two top-k lists.
 *
 * The KL estimate coarse-grains the vocabulary into the tokens both top lists name (S) and one
 * "rest" cell: KL_S = sum_{x in S} p(x) log(p(x)/q(x)) + P_r log(P_r/Q_r), with P_r = 1 - p(S),
 * Q_r = 1 - q(S). Merging cells never increases a KL divergence (the data-processing inequality),
 * so KL_S <= the true KL; the part it cannot see is P_r times the KL between the two sides'
 * distributions within the rest, and P_r (the baseline's probability outside S) is reported as
 * the bound's size: with P_r = 0.001 the unseen part is 0.001 x that within-tail KL. When both
 * lists cover the whole vocabulary, KL_S is exact. */
#include "drift/drift_int.h"
#include <math.h>
#include <string.h>

void drift_compare_pos(const drift_pos *b, const drift_tok *c_top, int c_n, double c_lp, int c_rank, drift_cmp *o) {
    memset(o, 0, sizeof *o);
    const drift_tok *t = &b->tok;
    o->lp_b = t->lp;
    o->agree = c_n > 0 && drift_tok_same(&c_top[0], t);
    int r = 0;
    for (int i = 0; i < c_n && !r; i++)
        if (drift_tok_same(&c_top[i], t)) r = i + 1;
    if (c_rank > 0) r = c_rank <= c_n ? c_rank : 0;   /* the server's rank is exact, ties included */
    o->rank = r;
    double lpc = c_lp;
    if (isnan(lpc) && r > 0) lpc = c_top[r - 1].lp;
    o->lp_c = lpc;
    o->lp_known = !isnan(lpc) && !isnan(t->lp);

    double ps = 0, qs = 0, kl = 0;
    for (int i = 0; i < b->n_top; i++) {
        const drift_tok *x = &b->top[i];
        if (isnan(x->lp)) continue;
        for (int j = 0; j < c_n; j++) {
            if (!drift_tok_same(x, &c_top[j]) || isnan(c_top[j].lp)) continue;
            double p = exp(x->lp), q = exp(c_top[j].lp);
            kl += p * (x->lp - c_top[j].lp);
            ps += p;
            qs += q;
            break;
        }
    }
    double pr = 1.0 - ps, qr = 1.0 - qs;
    if (pr > 1e-12) kl += pr * log(pr / (qr > 1e-12 ? qr : 1e-12));
    o->kl = kl > 0 ? kl : 0;      /* >= 0 in exact arithmetic; rounding can dip below */
    o->tail = pr > 0 ? pr : 0;
}
