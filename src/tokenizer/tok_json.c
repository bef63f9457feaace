/* tok_json — loads a Hugging Face tokenizer.json (jansson) for a byte-level BPE model, plus the
 * tokenizer_config.json beside it when present (BOS/EOS, add_bos_token, chat template). Anything the
 * encoder would not reproduce exactly (another model type, a normalizer, prefix spaces, other split
 * behaviours) is refused with a reason rather than tokenized approximately. */
#include "tokenizer/tok_internal.h"
#include "common/fileio.h"
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* GPT-2's pattern, used by a ByteLevel pre-tokenizer with use_regex=true. */
static const char gpt2_pattern[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static int add_pretok(tokenizer *t, json_t *pt, bool *bytelevel, char *err, size_t errlen) {
    const char *type = json_string_value(json_object_get(pt, "type"));
    if (!type) { snprintf(err, errlen, "pre_tokenizer without a type"); return -1; }
    if (!strcmp(type, "Sequence")) {
        json_t *arr = json_object_get(pt, "pretokenizers"), *e;
        size_t i;
        if (!json_is_array(arr)) { snprintf(err, errlen, "missing key 'pre_tokenizer.pretokenizers'"); return -1; }
        json_array_foreach(arr, i, e) if (add_pretok(t, e, bytelevel, err, errlen)) return -1;
        return 0;
    }
    if (!strcmp(type, "Split")) {
        const char *beh = json_string_value(json_object_get(pt, "behavior"));
        if (!beh || strcmp(beh, "Isolated") || json_is_true(json_object_get(pt, "invert"))) {
            snprintf(err, errlen, "unsupported Split pre-tokenizer (behavior %s%s)", beh ? beh : "?",
                     json_is_true(json_object_get(pt, "invert")) ? ", invert" : "");
            return -1;
        }
        json_t *pat = json_object_get(pt, "pattern");
        json_t *re = json_object_get(pat, "Regex"), *lit = json_object_get(pat, "String");
        if (json_is_string(re)) return tok_add_stage(t, json_string_value(re), json_string_length(re), err, errlen);
        if (json_is_string(lit)) { /* a literal: quote it for the regex engine */
            char *q = NULL;
            size_t ql = 0, qc = 0;
            int rc = tok_buf_append(&q, &ql, &qc, "\\Q", 2) ||
                     tok_buf_append(&q, &ql, &qc, json_string_value(lit), json_string_length(lit)) ||
                     tok_buf_append(&q, &ql, &qc, "\\E", 2);
            rc = rc ? -1 : tok_add_stage(t, q, ql, err, errlen);
            free(q);
            return rc;
        }
        snprintf(err, errlen, "Split pre-tokenizer without a pattern");
        return -1;
    }
    if (!strcmp(type, "Digits")) {
        const char *p = json_is_true(json_object_get(pt, "individual_digits")) ? "\\p{N}" : "\\p{N}+";
        return tok_add_stage(t, p, strlen(p), err, errlen);
    }
    if (!strcmp(type, "ByteLevel")) {
        if (json_is_true(json_object_get(pt, "add_prefix_space"))) {
            snprintf(err, errlen, "unsupported ByteLevel pre-tokenizer with add_prefix_space");
            return -1;
        }
        *bytelevel = true;
        json_t *ur = json_object_get(pt, "use_regex");
        if (!ur || json_is_true(ur)) return tok_add_stage(t, gpt2_pattern, strlen(gpt2_pattern), err, errlen);
        return 0;
    }
    snprintf(err, errlen, "unsupported pre-tokenizer type '%s'", type);
    return -1;
}

static int check_model(json_t *model, char *err, size_t errlen) {
    const char *type = json_string_value(json_object_get(model, "type"));
    if (type && strcmp(type, "BPE")) { snprintf(err, errlen, "unsupported model type '%s' (only BPE)", type); return -1; }
    if (!json_is_object(json_object_get(model, "vocab"))) { snprintf(err, errlen, "missing key 'model.vocab'"); return -1; }
    if (!json_is_array(json_object_get(model, "merges"))) { snprintf(err, errlen, "missing key 'model.merges'"); return -1; }
    const char *keys[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (size_t i = 0; i < 2; i++) {
        json_t *v = json_object_get(model, keys[i]);
        if (v && !json_is_null(v) && !(json_is_string(v) && !json_string_length(v))) {
            snprintf(err, errlen, "unsupported BPE option '%s'", keys[i]);
            return -1;
        }
    }
    if (json_is_true(json_object_get(model, "ignore_merges")) || json_is_true(json_object_get(model, "byte_fallback"))) {
        snprintf(err, errlen, "unsupported BPE option ignore_merges/byte_fallback");
        return -1;
    }
    json_t *dr = json_object_get(model, "dropout");
    if (dr && !json_is_null(dr) && json_number_value(dr) > 0) { snprintf(err, errlen, "unsupported BPE dropout"); return -1; }
    return 0;
}

static int load_added(tokenizer *t, json_t *arr, char *err, size_t errlen) {
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        json_t *c = json_object_get(e, "content"), *id = json_object_get(e, "id");
        if (!json_is_string(c) || !json_is_integer(id)) { snprintf(err, errlen, "added_tokens[%zu] lacks content or id", i); return -1; }
        if (json_integer_value(id) < 0 || json_integer_value(id) > INT32_MAX) {
            snprintf(err, errlen, "added_tokens[%zu] has id %" JSON_INTEGER_FORMAT " (ids are 0..2147483647)", i, json_integer_value(id));
            return -1;
        }
        if (json_is_true(json_object_get(e, "single_word"))) {
            snprintf(err, errlen, "unsupported added token option single_word ('%s')", json_string_value(c));
            return -1;
        }
        json_t *norm = json_object_get(e, "normalized");
        tok_added a = {
            .text = json_string_value(c), .len = (uint32_t)json_string_length(c), .id = (int32_t)json_integer_value(id),
            .special = json_is_true(json_object_get(e, "special")), .lstrip = json_is_true(json_object_get(e, "lstrip")),
            .rstrip = json_is_true(json_object_get(e, "rstrip")),
            .normalized = norm ? json_is_true(norm) : !json_is_true(json_object_get(e, "special")),
        };
        if (tok_add_added(t, &a, err, errlen)) return -1;
    }
    return 0;
}

static const char *token_content(json_t *v) {
    if (json_is_string(v)) return json_string_value(v);
    return json_string_value(json_object_get(v, "content"));
}

/* tokenizer_config.json beside tokenizer.json: optional; a malformed one is an error. */
static int load_config(tokenizer *t, const char *path, char *err, size_t errlen) {
    const char *slash = strrchr(path, '/');
    size_t dl = slash ? (size_t)(slash - path + 1) : 0;
    char *cp = malloc(dl + 32);
    if (!cp) return -1;
    memcpy(cp, path, dl);
    strcpy(cp + dl, "tokenizer_config.json");
    char *data;
    size_t len;
    if (fileio_read_all(cp, &data, &len)) { free(cp); return 0; }
    json_error_t je;
    json_t *cfg = json_loadb(data, len, 0, &je);
    free(data);
    if (!cfg) {
        snprintf(err, errlen, "%s: JSON error at line %d: %s", cp, je.line, je.text);
        free(cp);
        return -1;
    }
    free(cp);
    json_t *ab = json_object_get(cfg, "add_bos_token");
    t->add_bos = ab ? json_is_true(ab) : t->add_bos;
    const char *bos = token_content(json_object_get(cfg, "bos_token"));
    const char *eos = token_content(json_object_get(cfg, "eos_token"));
    if (bos) t->bos_id = tok_lookup(t, bos, strlen(bos));
    if (eos) t->eos_id = tok_lookup(t, eos, strlen(eos));
    json_t *ct = json_object_get(cfg, "chat_template");
    const char *tmpl = json_string_value(ct);
    if (json_is_array(ct)) { /* [{name, template}, ...]: the default one */
        size_t i;
        json_t *e;
        json_array_foreach(ct, i, e) {
            const char *name = json_string_value(json_object_get(e, "name"));
            if (name && !strcmp(name, "default")) tmpl = json_string_value(json_object_get(e, "template"));
        }
    }
    if (tmpl && !(t->chat_template = strdup(tmpl))) { json_decref(cfg); return -1; }
    json_decref(cfg);
    return 0;
}

int tok_load_json(tokenizer *t, const char *path, const char *data, size_t len, char *err, size_t errlen) {
    json_error_t je;
    json_t *root = NULL;
    char *skel = NULL;
    size_t skel_len = 0;
    int rc = -1;
    if (tok_init(t, len / 48, err, errlen)) return -1;
    int sc = tok_jscan_model(t, data, len, &skel, &skel_len, err, errlen);
    if (sc < 0) {
        char e2[256];
        snprintf(e2, sizeof e2, "%s", err);
        snprintf(err, errlen, "%s: %s", path, e2);
        return -1;
    }
    /* Without vocab/merges where a BPE has them, jansson reads the whole file to say what is wrong. */
    root = sc == 0 ? json_loadb(skel, skel_len, 0, &je) : json_loadb(data, len, 0, &je);
    free(skel);
    if (!root) {
        snprintf(err, errlen, "%s: JSON error at line %d column %d: %s", path, je.line, je.column, je.text);
        return -1;
    }
    json_t *model = json_object_get(root, "model");
    if (!json_is_object(model)) { snprintf(err, errlen, "%s: missing key 'model' (not a tokenizer.json)", path); goto out; }
    if (check_model(model, err, errlen)) goto out;
    if (sc == 1) { snprintf(err, errlen, "%s: model.vocab or model.merges malformed", path); goto out; }
    json_t *added = json_object_get(root, "added_tokens");
    if (json_is_array(added) && load_added(t, added, err, errlen)) goto out;
    json_t *norm = json_object_get(root, "normalizer");
    if (norm && !json_is_null(norm)) {
        const char *nt = json_string_value(json_object_get(norm, "type"));
        if (!nt || strcmp(nt, "Sequence") || json_array_size(json_object_get(norm, "normalizers"))) {
            snprintf(err, errlen, "unsupported normalizer '%s'", nt ? nt : "?");
            goto out;
        }
    }
    json_t *pt = json_object_get(root, "pre_tokenizer");
    bool bytelevel = false;
    if (!pt || json_is_null(pt)) { snprintf(err, errlen, "%s: missing key 'pre_tokenizer'", path); goto out; }
    if (add_pretok(t, pt, &bytelevel, err, errlen)) goto out;
    if (!bytelevel) { snprintf(err, errlen, "unsupported: the pre-tokenizer has no ByteLevel step (not a byte-level BPE)"); goto out; }
    /* BOS/EOS without a config: the DeepSeek sentence markers among the added tokens. */
    for (size_t i = 0; i < t->n_added; i++) {
        if (t->bos_id < 0 && strstr(t->added[i].text, "begin\xE2\x96\x81of\xE2\x96\x81sentence")) t->bos_id = t->added[i].id;
        if (t->eos_id < 0 && strstr(t->added[i].text, "end\xE2\x96\x81of\xE2\x96\x81sentence")) t->eos_id = t->added[i].id;
    }
    if (load_config(t, path, err, errlen)) goto out;
    tok_chat_detect(t);
    rc = tok_finish(t, err, errlen);
out:
    json_decref(root);
    return rc;
}
