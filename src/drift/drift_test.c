/* Unit tests for drift's pieces: the wire formats (llama.cpp's real captures, copied from
 * ../shared/fixtures/llamacpp into tests/fixtures/llamacpp: content-style logprobs on /v1/completions
 * with ids and raw bytes, chat logprobs, a body without logprobs; OpenAI legacy and vLLM
 * prompt_logprobs bodies written here in their documented shapes), one position's comparison
 * (agreement, rank, the KL lower bound against the exact KL), contexts and gate rules. */
#include "harness.h"
#include "drift/drift_int.h"
#include "common/fileio.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int parse_file(const char *path, drift_resp *r) {
    char *body = NULL, err[256];
    size_t len;
    if (fileio_read_all(path, &body, &len) < 0) { harness_fail(__FILE__, __LINE__, "cannot read %s", path); return -1; }
    int rc = drift_resp_parse(body, len, r, err, sizeof err);
    CHECK_MSG(rc == 0, "%s: %s", path, err);
    free(body);
    return rc;
}

TEST(drift_wire_llamacpp_completions_content_logprobs) {
    drift_resp r;
    if (parse_file("tests/fixtures/llamacpp/completions_nonstream_logprobs.body", &r) < 0) return;
    CHECK(r.have_logprobs);
    CHECK_EQ_INT(r.n_gen, 8);
    CHECK_EQ_INT(r.completion_tokens, 8);
    CHECK_EQ_INT(r.prompt_tokens, 6);
    CHECK_EQ_INT(r.gen[0].tok.id, 8597);
    CHECK_STR(r.gen[0].tok.text, "仍");
    CHECK_NEAR(r.gen[0].tok.lp, -10.796043395996094, 1e-12);
    CHECK_EQ_INT(r.gen[0].n_top, 3);
    /* sorted, most likely first */
    CHECK_EQ_INT(r.gen[0].top[0].id, 80805);
    CHECK(r.gen[0].top[0].lp >= r.gen[0].top[1].lp && r.gen[0].top[1].lp >= r.gen[0].top[2].lp);
    /* the token that ends inside a UTF-8 character: its bytes, not its (empty) string */
    const drift_pos *last = &r.gen[7];
    CHECK_EQ_INT(last->top[0].id, 6678);
    CHECK_EQ_INT(last->top[0].len, 2);
    CHECK_EQ_INT((unsigned char)last->top[0].text[0], 233);
    CHECK_EQ_INT((unsigned char)last->top[0].text[1], 134);
    /* sampled at temperature 0.8: the chosen token is not always the top one (drift's greedy check) */
    CHECK(!drift_tok_same(&r.gen[0].tok, &r.gen[0].top[0]));
    drift_resp_free(&r);
}

TEST(drift_wire_llamacpp_chat_and_no_logprobs) {
    drift_resp r;
    if (parse_file("tests/fixtures/llamacpp/chat_nonstream_logprobs.body", &r) < 0) return;
    CHECK(r.have_logprobs);
    CHECK_EQ_INT(r.n_gen, 8);
    CHECK_STR(r.gen[0].tok.text, " cloned");
    CHECK_EQ_INT(r.gen[0].tok.id, 64162);
    CHECK(r.text && !strncmp(r.text, " cloned", 7));
    drift_resp_free(&r);
    if (parse_file("tests/fixtures/llamacpp/completions_nonstream.body", &r) < 0) return;
    CHECK(!r.have_logprobs);
    CHECK_EQ_INT(r.n_gen, 0);
    drift_resp_free(&r);
    char err[256];
    char *body;
    size_t len;
    CHECK(fileio_read_all("tests/fixtures/llamacpp/error_best_of_completions_stream.body", &body, &len) == 0);
    CHECK_EQ_INT(drift_resp_parse(body, len, &r, err, sizeof err), -1);
    CHECK(strstr(err, "Unsupported param: best_of") != NULL);
    free(body);
}

TEST(drift_wire_legacy_echo_and_prompt_logprobs) {
    /* OpenAI legacy completions with echo: the prompt's tokens first, the first without a logprob */
    const char *legacy = "{\"choices\":[{\"text\":\"The cat sat\",\"logprobs\":{\"tokens\":[\"The\",\" cat\",\" sat\"],"
        "\"token_logprobs\":[null,-2.5,-0.25],\"top_logprobs\":[null,{\" dog\":-1.0,\" cat\":-2.5},{\" sat\":-0.25,\" ran\":-1.75}],"
        "\"text_offset\":[0,3,7]}}],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":1}}";
    drift_resp r;
    char err[256];
    CHECK_EQ_INT(drift_resp_parse(legacy, strlen(legacy), &r, err, sizeof err), 0);
    CHECK_EQ_INT(r.n_gen, 3);
    CHECK(isnan(r.gen[0].tok.lp));
    CHECK_EQ_INT(r.gen[0].n_top, 0);
    CHECK_STR(r.gen[1].top[0].text, " dog");
    CHECK_NEAR(r.gen[1].tok.lp, -2.5, 0);
    CHECK_EQ_INT(r.gen[1].tok.id, -1);
    drift_resp_free(&r);
    /* vLLM prompt_logprobs: the prompt token first (here beyond the top-1: it sorts last in the list) */
    const char *pl = "{\"choices\":[{\"text\":\" x\",\"logprobs\":null,\"prompt_logprobs\":[null,"
        "{\"791\":{\"logprob\":-3.0,\"rank\":4,\"decoded_token\":\" cat\"},\"5679\":{\"logprob\":-0.5,\"rank\":1,\"decoded_token\":\" dog\"}},"
        "{\"7731\":{\"logprob\":-0.1,\"rank\":1,\"decoded_token\":\" sat\"}}]}]}";
    CHECK_EQ_INT(drift_resp_parse(pl, strlen(pl), &r, err, sizeof err), 0);
    CHECK(!r.have_logprobs);
    CHECK(r.have_prompt_logprobs);
    CHECK_EQ_INT(r.n_prompt, 3);
    CHECK_EQ_INT(r.prompt[1].tok.id, 791);
    CHECK_EQ_INT(r.prompt[1].rank, 4);
    CHECK_EQ_INT(r.prompt[1].n_top, 2);
    CHECK_STR(r.prompt[1].top[0].text, " dog");
    CHECK_STR(r.prompt[1].top[1].text, " cat");
    CHECK_EQ_INT(r.prompt[2].n_top, 1);     /* within the top-k: listed once */
    CHECK_EQ_INT(r.prompt[2].rank, 1);
    drift_resp_free(&r);
}

/* Token-id bodies: the ids as given (no BOS added: llama.cpp adds none to an id prompt, so the
 * caller's ids carry it), greedy with top-k logprobs; a stepwise position is one generated token. */
TEST(drift_wire_token_id_bodies) {
    drift_req_opts o = { .model = "m", .top_k = 3, .ignore_eos = true };
    const int32_t ids[] = { 100000, 549, 3399, 12699 };
    char *g = drift_body_generate_ids(&o, ids, 4, 16), *st = drift_body_score_ids(&o, DRIFT_SCORE_STEPWISE, ids, 3);
    char *e = drift_body_score_ids(&o, DRIFT_SCORE_ECHO, ids, 4);
    json_t *jg = g ? json_loads(g, 0, NULL) : NULL, *js = st ? json_loads(st, 0, NULL) : NULL, *je = e ? json_loads(e, 0, NULL) : NULL;
    CHECK(jg && js && je);
    if (jg && js && je) {
        const json_t *p = json_object_get(jg, "prompt");
        CHECK_EQ_INT(json_array_size(p), 4);
        for (size_t i = 0; i < 4; i++) CHECK_EQ_INT(json_integer_value(json_array_get(p, i)), ids[i]);
        CHECK_EQ_INT(json_integer_value(json_object_get(jg, "max_tokens")), 16);
        CHECK_EQ_INT(json_integer_value(json_object_get(jg, "logprobs")), 3);
        CHECK_NEAR(json_number_value(json_object_get(jg, "temperature")), 0, 0);
        CHECK(json_is_true(json_object_get(jg, "ignore_eos")));
        CHECK_EQ_INT(json_array_size(json_object_get(js, "prompt")), 3);
        CHECK_EQ_INT(json_integer_value(json_object_get(js, "max_tokens")), 1);
        CHECK(!json_object_get(js, "echo"));
        CHECK(json_is_true(json_object_get(je, "echo")));
        CHECK_EQ_INT(json_array_size(json_object_get(je, "prompt")), 4);
    }
    json_decref(jg); json_decref(js); json_decref(je);
    free(g); free(st); free(e);
}

/* llama.cpp's native /completion with return_tokens: the entry of a token after which the text ends
 * inside a UTF-8 character is missing (its bytes ride on the next entry); alignment puts every entry
 * at its id's position and marks the gap, so later positions stay where they are. */
TEST(drift_wire_native_ids_align_a_gap) {
    const char *body = "{\"content\":\"x\",\"tokens\":[10,233,11],\"tokens_evaluated\":5,\"tokens_predicted\":3,"
        "\"completion_probabilities\":[{\"id\":10,\"token\":\"a\",\"bytes\":[97],\"logprob\":-1.0,\"top_logprobs\":[{\"id\":10,\"token\":\"a\",\"bytes\":[97],\"logprob\":-1.0}]},"
        "{\"id\":11,\"token\":\"b\",\"bytes\":[233,134,98],\"logprob\":-2.0,\"top_logprobs\":[{\"id\":11,\"token\":\"b\",\"bytes\":[98],\"logprob\":-2.0}]}]}";
    drift_resp r;
    char err[200];
    CHECK_EQ_INT(drift_resp_parse(body, strlen(body), &r, err, sizeof err), 0);
    CHECK_EQ_INT(r.n_ids, 3);
    CHECK_EQ_INT(r.n_gen, 2);
    CHECK_EQ_INT(r.prompt_tokens, 5);
    CHECK_EQ_INT(r.completion_tokens, 3);
    CHECK_EQ_INT(drift_resp_align_ids(&r), 0);
    CHECK_EQ_INT(r.n_gen, 3);
    if (r.n_gen == 3) {
        CHECK_EQ_INT(r.gen[0].tok.id, 10);
        CHECK_EQ_INT(r.gen[1].tok.id, 233);
        CHECK_EQ_INT(r.gen[1].n_top, 0);
        CHECK(isnan(r.gen[1].tok.lp));
        CHECK_EQ_INT(r.gen[2].tok.id, 11);
        CHECK_NEAR(r.gen[2].tok.lp, -2.0, 0);
    }
    drift_resp_free(&r);
    /* an entry that is no generated id: not this shape, left as it was */
    const char *odd = "{\"tokens\":[10],\"completion_probabilities\":[{\"id\":12,\"token\":\"c\",\"logprob\":-1.0,\"top_logprobs\":[]}]}";
    CHECK_EQ_INT(drift_resp_parse(odd, strlen(odd), &r, err, sizeof err), 0);
    CHECK_EQ_INT(drift_resp_align_ids(&r), -1);
    CHECK_EQ_INT(r.n_gen, 1);
    drift_resp_free(&r);
}

static drift_tok tk(const char *s, double lp) { return (drift_tok){ (char *)s, strlen(s), -1, lp }; }

TEST(drift_compare_position) {
    /* a full 3-token vocabulary on both sides: the KL is exact */
    double p[3] = { 0.7, 0.2, 0.1 }, q[3] = { 0.5, 0.3, 0.2 };
    drift_tok bt[3] = { tk("a", log(p[0])), tk("b", log(p[1])), tk("c", log(p[2])) };
    drift_tok ct[3] = { tk("a", log(q[0])), tk("b", log(q[1])), tk("c", log(q[2])) };
    drift_pos b = { .tok = bt[0], .top = bt, .n_top = 3 };
    drift_cmp c;
    drift_compare_pos(&b, ct, 3, NAN, 0, &c);
    double kl = 0;
    for (int i = 0; i < 3; i++) kl += p[i] * log(p[i] / q[i]);
    CHECK(c.agree);
    CHECK_EQ_INT(c.rank, 1);
    CHECK(c.lp_known);
    CHECK_NEAR(c.lp_c - c.lp_b, log(0.5 / 0.7), 1e-12);
    CHECK_NEAR(c.kl, kl, 1e-12);
    CHECK_NEAR(c.tail, 0, 1e-12);
    /* top-1 lists only: a lower bound, with the unseen mass reported */
    b.n_top = 1;
    drift_compare_pos(&b, ct, 1, NAN, 0, &c);
    double lower = p[0] * log(p[0] / q[0]) + 0.3 * log(0.3 / 0.5);
    CHECK_NEAR(c.kl, lower, 1e-12);
    CHECK(c.kl <= kl);
    CHECK_NEAR(c.tail, 0.3, 1e-12);
    /* the candidate prefers another token: no agreement; rank 2; beyond its top-1: unknown logprob */
    drift_tok ct2[3] = { tk("b", log(0.6)), tk("a", log(0.3)), tk("c", log(0.1)) };
    b.n_top = 3;
    drift_compare_pos(&b, ct2, 3, NAN, 0, &c);
    CHECK(!c.agree);
    CHECK_EQ_INT(c.rank, 2);
    drift_compare_pos(&b, ct2, 1, NAN, 0, &c);
    CHECK_EQ_INT(c.rank, 0);
    CHECK(!c.lp_known);
    /* echo gives the logprob whatever the list; the server's rank wins */
    drift_compare_pos(&b, ct2, 1, log(0.3), 2, &c);
    CHECK(c.lp_known);
    CHECK_EQ_INT(c.rank, 0);    /* rank 2 is beyond a top-1 list */
}

TEST(drift_contexts_and_rules) {
    drift_opts o;
    drift_default_opts(&o);
    char err[256];
    CHECK_EQ_INT(drift_parse_contexts("16k,1k,4096", &o, err, sizeof err), 0);
    CHECK_EQ_INT(o.n_contexts, 3);
    CHECK_EQ_INT(o.contexts[0], 1024);
    CHECK_EQ_INT(o.contexts[2], 16384);
    CHECK_EQ_INT(drift_parse_contexts("1k,x", &o, err, sizeof err), -1);
    CHECK(strstr(err, "--contexts") != NULL);
    drift_rule r[8];
    int n = 0;
    CHECK_EQ_INT(drift_parse_rules("top1_agreement>=0.99, delta_ppl<=+2%,kl@16k<=0.01,exact_match_rate:>=50%", r, 8, &n, err, sizeof err), 0);
    CHECK_EQ_INT(n, 4);
    CHECK(r[0].at_least);
    CHECK_NEAR(r[0].value, 0.99, 1e-15);
    CHECK(!r[1].at_least);
    CHECK_NEAR(r[1].value, 0.02, 1e-15);
    CHECK_EQ_INT(r[2].context, 16384);
    CHECK_STR(r[2].metric, "kl");
    CHECK_NEAR(r[3].value, 0.5, 1e-15);
    n = 0;
    CHECK_EQ_INT(drift_parse_rules("top1_agreement>0.99", r, 8, &n, err, sizeof err), -1);
    CHECK(strstr(err, ">=") != NULL);
    CHECK_EQ_INT(drift_parse_rules("top1_agreement>=abc", r, 8, &n, err, sizeof err), -1);
    CHECK_EQ_INT(drift_parse_rules("kl@zz<=1", r, 8, &n, err, sizeof err), -1);
}

TEST(drift_gate_on_a_document) {
    const char *txt = "{\"schema\":\"dsperf.drift/1\",\"partial\":false,\"buckets\":["
        "{\"context\":1024,\"complete\":true,\"top1_agreement\":0.995,\"top1_agreement_ci\":[0.99,1.0],\"delta_ppl\":0.004},"
        "{\"context\":16384,\"complete\":true,\"top1_agreement\":0.987,\"top1_agreement_ci\":[0.983,0.99],\"delta_ppl\":0.021}]}";
    json_t *doc = json_loads(txt, 0, NULL);
    drift_rule r[4];
    int n = 0;
    char err[256];
    CHECK_EQ_INT(drift_parse_rules("top1_agreement>=0.99,delta_ppl@1k<=+1%", r, 4, &n, err, sizeof err), 0);
    CHECK_EQ_INT(drift_gate(doc, r, n, err, sizeof err), 0);
    const json_t *g = json_object_get(doc, "gate");
    CHECK(json_is_false(json_object_get(g, "passed")));
    const json_t *r0 = json_array_get(json_object_get(g, "rules"), 0), *r1 = json_array_get(json_object_get(g, "rules"), 1);
    CHECK(json_is_false(json_object_get(r0, "passed")));
    CHECK(strstr(json_string_value(json_object_get(r0, "reason")), "16384") != NULL);
    CHECK(json_is_true(json_object_get(r1, "passed")));
    n = 0;
    CHECK_EQ_INT(drift_parse_rules("nonsense>=1", r, 4, &n, err, sizeof err), 0);
    CHECK_EQ_INT(drift_gate(doc, r, n, err, sizeof err), -1);
    CHECK(strstr(err, "nonsense") != NULL);
    n = 0;
    CHECK_EQ_INT(drift_parse_rules("kl@2k<=1", r, 4, &n, err, sizeof err), 0);
    CHECK_EQ_INT(drift_gate(doc, r, n, err, sizeof err), -1);
    json_decref(doc);
}

TEST(drift_kv_note_sentences) {
    char buf[600];
    drift_kv_note(NULL, buf, sizeof buf);
    CHECK(strstr(buf, "untested for accuracy") != NULL);
    CHECK(strstr(buf, "--drift") != NULL);
    const char *txt = "{\"buckets\":[{\"context\":1024,\"complete\":true,\"top1_agreement\":0.996,\"delta_ppl\":0.003,\"verdict\":\"indistinguishable from the noise floor\"},"
                      "{\"context\":16384,\"complete\":true,\"top1_agreement\":0.987,\"delta_ppl\":0.021,\"verdict\":\"beyond the noise floor\"}]}";
    json_t *doc = json_loads(txt, 0, NULL);
    drift_kv_note(doc, buf, sizeof buf);
    CHECK(strstr(buf, "1k 99.60% / +0.30%") != NULL);
    CHECK(strstr(buf, "16k 98.70% / +2.10%") != NULL);
    CHECK(strstr(buf, "beyond the noise floor") != NULL);
    json_t *diag = json_loads("{\"findings\":[{\"knobs\":[{\"knob\":\"kv_cache_dtype\",\"direction\":\"fp8\"},{\"knob\":\"max_num_seqs\"}]}]}", 0, NULL);
    drift_annotate_findings(diag, doc);
    const json_t *knobs = json_object_get(json_array_get(json_object_get(diag, "findings"), 0), "knobs");
    CHECK(json_is_string(json_object_get(json_array_get(knobs, 0), "accuracy")));
    CHECK(!json_object_get(json_array_get(knobs, 1), "accuracy"));
    json_decref(diag);
    json_decref(doc);
}
