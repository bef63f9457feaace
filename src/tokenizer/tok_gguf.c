/* tok_gguf — reads the tokenizer of a GGUF file (header and metadata key/values only; tensors are never
 * touched): tokenizer.ggml.{model,pre,tokens,token_type,merges,bos_token_id,eos_token_id,add_bos_token}
 * and tokenizer.chat_template. Every value type, arrays included, is parsed (and skipped when not
 * needed) with bounds checks, so a truncated file is reported with the offset where it ends.
 * The pre-tokenizer regexes are not in the file: they are chosen by tokenizer.ggml.pre, written here
 * from the DeepSeek tokenizer.json splits (as llama.cpp also does), with code points spelled as
 * \x{...} so that no editor or normalisation can change them. */
#include "tokenizer/tok_internal.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    GGUF_U8, GGUF_I8, GGUF_U16, GGUF_I16, GGUF_U32, GGUF_I32, GGUF_F32, GGUF_BOOL, GGUF_STRING, GGUF_ARRAY,
    GGUF_U64, GGUF_I64, GGUF_F64, GGUF_NTYPES
};
static const size_t gguf_size[GGUF_NTYPES] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

typedef struct {
    const uint8_t *d;
    size_t n, off;
    char *err;
    size_t errlen;
} cursor;

static int need(cursor *c, size_t k) {
    if (k > c->n - c->off) {
        snprintf(c->err, c->errlen, "GGUF truncated at offset %zu (file is %zu bytes)", c->off, c->n);
        return -1;
    }
    return 0;
}

static int rd_u32(cursor *c, uint32_t *v) {
    if (need(c, 4)) return -1;
    memcpy(v, c->d + c->off, 4);
    c->off += 4;
    return 0;
}

static int rd_u64(cursor *c, uint64_t *v) {
    if (need(c, 8)) return -1;
    memcpy(v, c->d + c->off, 8);
    c->off += 8;
    return 0;
}

static int rd_str(cursor *c, const char **s, size_t *len) {
    uint64_t l;
    if (rd_u64(c, &l) || need(c, l)) return -1;
    *s = (const char *)c->d + c->off;
    *len = (size_t)l;
    c->off += (size_t)l;
    return 0;
}

static int skip_value(cursor *c, uint32_t type, int depth) {
    if (type >= GGUF_NTYPES) { snprintf(c->err, c->errlen, "GGUF value of unknown type %u at offset %zu", type, c->off); return -1; }
    if (type == GGUF_STRING) {
        const char *s;
        size_t l;
        return rd_str(c, &s, &l);
    }
    if (type == GGUF_ARRAY) {
        uint32_t et;
        uint64_t cnt;
        if (depth > 8) { snprintf(c->err, c->errlen, "GGUF arrays nested too deep at offset %zu", c->off); return -1; }
        if (rd_u32(c, &et) || rd_u64(c, &cnt)) return -1;
        if (et >= GGUF_NTYPES) { snprintf(c->err, c->errlen, "GGUF array of unknown type %u at offset %zu", et, c->off); return -1; }
        if (gguf_size[et]) {
            if (cnt > (c->n - c->off) / gguf_size[et]) return need(c, c->n - c->off + 1);
            c->off += (size_t)cnt * gguf_size[et];
            return 0;
        }
        for (uint64_t i = 0; i < cnt; i++)
            if (skip_value(c, et, depth + 1)) return -1;
        return 0;
    }
    if (need(c, gguf_size[type])) return -1;
    c->off += gguf_size[type];
    return 0;
}

typedef struct { size_t off; uint32_t type; bool found; } kv_ref;

enum { K_MODEL, K_PRE, K_TOKENS, K_TYPES, K_MERGES, K_BOS, K_EOS, K_ADD_BOS, K_CHAT, K_N };
static const char *const key_names[K_N] = {
    "tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
    "tokenizer.ggml.merges", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
    "tokenizer.ggml.add_bos_token", "tokenizer.chat_template",
};

static int64_t int_at(const cursor *c, kv_ref r) {
    const uint8_t *p = c->d + r.off;
    switch (r.type) {
    case GGUF_U8: return p[0];
    case GGUF_I8: return (int8_t)p[0];
    case GGUF_BOOL: return p[0] != 0;
    case GGUF_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case GGUF_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case GGUF_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case GGUF_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case GGUF_U64: { uint64_t v; memcpy(&v, p, 8); return (int64_t)v; }
    case GGUF_I64: { int64_t v; memcpy(&v, p, 8); return v; }
    default: return -1;
    }
}

/* Opens an array value: checks its element type and returns the count, cursor on the first element. */
static int open_array(cursor *c, kv_ref r, uint32_t want, const char *name, uint64_t *cnt) {
    uint32_t et;
    c->off = r.off;
    if (r.type != GGUF_ARRAY || rd_u32(c, &et) || rd_u64(c, cnt) || (want != UINT32_MAX && et != want)) {
        if (!c->err[0]) snprintf(c->err, c->errlen, "GGUF key '%s' has the wrong type", name);
        return -1;
    }
    return 0;
}

#define WS "\\s"
#define DS_LLM_LETTERS                                                                                          \
    "A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}"              \
    "\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}"        \
    "\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}"              \
    "\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}"           \
    "\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}"           \
    "\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}"   \
    "\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}" \
    "\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}"           \
    "\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}"            \
    "\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}"            \
    "\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}"            \
    "\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}"           \
    "\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}"         \
    "\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}"  \
    "\\x{1E900}-\\x{1E943}"
#define DS_CJK "[\\x{4E00}-\\x{9FA5}\\x{0800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+"

static const char *const pre_deepseek_llm[] = {
    "[\\r\\n]",
    WS "?[" DS_LLM_LETTERS "]+",
    WS "?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+",
    WS "+$",
    DS_CJK,
    "\\p{N}+",
    NULL,
};
static const char *const pre_deepseek_coder[] = {
    "[\\r\\n]", WS "?\\p{L}+", WS "?\\p{P}+", DS_CJK, "\\p{N}", NULL,
};
static const char *const pre_deepseek_v3[] = {
    "\\p{N}{1,3}",
    "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
    " ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL,
};

static const char *const *pre_patterns(const char *name, size_t len) {
    if (len == 12 && !memcmp(name, "deepseek-llm", 12)) return pre_deepseek_llm;
    if (len == 14 && !memcmp(name, "deepseek-coder", 14)) return pre_deepseek_coder;
    if ((len == 11 && !memcmp(name, "deepseek-v3", 11)) || (len == 13 && !memcmp(name, "deepseek3-llm", 13)))
        return pre_deepseek_v3;
    return NULL;
}

/* "[PAD123]" user-defined tokens only fill the vocabulary up to the embedding size: HF has no such ids. */
static bool is_pad_filler(const char *s, size_t n, size_t id) {
    char buf[32];
    int k = snprintf(buf, sizeof buf, "[PAD%zu]", id);
    return (size_t)k == n && !memcmp(s, buf, n);
}

static int load_tokens(tokenizer *t, cursor *c, const kv_ref *kv, uint64_t *n_tok) {
    if (open_array(c, kv[K_TOKENS], GGUF_STRING, key_names[K_TOKENS], n_tok)) return -1;
    if (*n_tok > INT32_MAX) { snprintf(c->err, c->errlen, "GGUF has too many tokens"); return -1; }
    if (tok_init(t, (size_t)*n_tok, c->err, c->errlen)) return -1;
    for (uint64_t i = 0; i < *n_tok; i++) {
        const char *s;
        size_t l;
        if (rd_str(c, &s, &l) || tok_set_token(t, (int32_t)i, s, l, c->err, c->errlen)) return -1;
    }
    return 0;
}

static int load_types(tokenizer *t, cursor *c, const kv_ref *kv, uint64_t n_tok) {
    if (!kv[K_TYPES].found) return 0;
    uint64_t cnt;
    if (open_array(c, kv[K_TYPES], GGUF_I32, key_names[K_TYPES], &cnt)) return -1;
    if (cnt != n_tok) { snprintf(c->err, c->errlen, "GGUF token_type has %" PRIu64 " entries for %" PRIu64 " tokens", cnt, n_tok); return -1; }
    if (need(c, cnt * 4)) return -1;
    for (uint64_t i = 0; i < cnt; i++) {
        int32_t ty;
        memcpy(&ty, c->d + c->off + i * 4, 4);
        if (ty != 3 && ty != 4) continue; /* 3 control, 4 user-defined: both are HF added tokens */
        uint32_t len;
        const char *text = tok_token_at(t, (int32_t)i, &len);
        if (ty == 4 && is_pad_filler(text, len, (size_t)i)) {
            tok_flag(t, (int32_t)i, TOK_F_HIDDEN);
            continue;
        }
        tok_added a = {.text = text, .len = len, .id = (int32_t)i, .special = ty == 3,
                       .normalized = ty == 4};
        if (tok_add_added(t, &a, c->err, c->errlen)) return -1;
    }
    return 0;
}

static int load_merges(tokenizer *t, cursor *c, const kv_ref *kv) {
    uint64_t cnt;
    if (open_array(c, kv[K_MERGES], GGUF_STRING, key_names[K_MERGES], &cnt)) return -1;
    for (uint64_t i = 0; i < cnt; i++) {
        const char *s;
        size_t l;
        if (rd_str(c, &s, &l)) return -1;
        const char *sp = memchr(s, ' ', l);
        if (!sp) { snprintf(c->err, c->errlen, "GGUF merge %" PRIu64 " has no space", i); return -1; }
        size_t al = (size_t)(sp - s);
        if (tok_add_merge(t, s, al, sp + 1, l - al - 1, c->err, c->errlen)) return -1;
    }
    return 0;
}

int tok_load_gguf(tokenizer *t, const char *path, const uint8_t *data, size_t len, char *err, size_t errlen) {
    if (errlen) err[0] = 0;
    /* the cursor starts after the magic: a shorter buffer would make its bounds checks wrap */
    if (len < 4 || memcmp(data, "GGUF", 4)) { snprintf(err, errlen, "%s: not a GGUF file", path); return -1; }
    cursor c = {data, len, 4, err, errlen};
    uint32_t version;
    uint64_t n_tensors, n_kv;
    if (rd_u32(&c, &version)) return -1;
    if (version < 2 || version > 3) { snprintf(err, errlen, "%s: unsupported GGUF version %u", path, version); return -1; }
    if (rd_u64(&c, &n_tensors) || rd_u64(&c, &n_kv)) return -1;
    kv_ref kv[K_N] = {{0}};
    for (uint64_t i = 0; i < n_kv; i++) {
        const char *key;
        size_t kl;
        uint32_t type;
        if (rd_str(&c, &key, &kl) || rd_u32(&c, &type)) return -1;
        for (int k = 0; k < K_N; k++)
            if (strlen(key_names[k]) == kl && !memcmp(key, key_names[k], kl)) kv[k] = (kv_ref){c.off, type, true};
        if (skip_value(&c, type, 0)) return -1;
    }
    for (int k = K_MODEL; k <= K_MERGES; k++) {
        if (k == K_TYPES || kv[k].found) continue;
        snprintf(err, errlen, "%s: GGUF missing key '%s'", path, key_names[k]);
        return -1;
    }
    const char *s;
    size_t l;
    c.off = kv[K_MODEL].off;
    if (kv[K_MODEL].type != GGUF_STRING || rd_str(&c, &s, &l)) { snprintf(err, errlen, "GGUF key 'tokenizer.ggml.model' is not a string"); return -1; }
    if (l != 4 || memcmp(s, "gpt2", 4)) { snprintf(err, errlen, "unsupported tokenizer model type '%.*s' (only gpt2 byte-level BPE)", (int)l, s); return -1; }
    c.off = kv[K_PRE].off;
    if (kv[K_PRE].type != GGUF_STRING || rd_str(&c, &s, &l)) { snprintf(err, errlen, "GGUF key 'tokenizer.ggml.pre' is not a string"); return -1; }
    const char *const *pats = pre_patterns(s, l);
    if (!pats) { snprintf(err, errlen, "unsupported pre-tokenizer '%.*s' (deepseek-llm, deepseek-coder, deepseek-v3)", (int)l, s); return -1; }
    uint64_t n_tok;
    if (load_tokens(t, &c, kv, &n_tok) || load_merges(t, &c, kv) || load_types(t, &c, kv, n_tok)) return -1;
    for (size_t i = 0; pats[i]; i++)
        if (tok_add_stage(t, pats[i], strlen(pats[i]), err, errlen)) return -1;
    if (kv[K_BOS].found) t->bos_id = (int32_t)int_at(&c, kv[K_BOS]);
    if (kv[K_EOS].found) t->eos_id = (int32_t)int_at(&c, kv[K_EOS]);
    if (kv[K_ADD_BOS].found) t->add_bos = int_at(&c, kv[K_ADD_BOS]) == 1;
    if (kv[K_CHAT].found && kv[K_CHAT].type == GGUF_STRING) {
        c.off = kv[K_CHAT].off;
        if (rd_str(&c, &s, &l)) return -1;
        if (!(t->chat_template = strndup(s, l))) { snprintf(err, errlen, "out of memory"); return -1; }
        tok_chat_detect(t);
    }
    return tok_finish(t, err, errlen);
}

/* ---- every metadata key, for readers beyond the tokenizer (the model's architecture) ---- */

static double real_at(const cursor *c, size_t off, uint32_t type) {
    const uint8_t *p = c->d + off;
    if (type == GGUF_F32) { float v; memcpy(&v, p, 4); return v; }
    double v;
    memcpy(&v, p, 8);
    return v;
}

int tok_gguf_metadata(const uint8_t *data, size_t len, gguf_meta_fn fn, void *ctx, uint64_t *n_tensors, char *err,
                      size_t errlen) {
    if (errlen) err[0] = 0;
    cursor c = {data, len, 4, err, errlen};
    uint32_t version;
    uint64_t n_kv, nt;
    if (rd_u32(&c, &version)) return -1;
    if (version < 2 || version > 3) { snprintf(err, errlen, "unsupported GGUF version %u", version); return -1; }
    if (rd_u64(&c, &nt) || rd_u64(&c, &n_kv)) return -1;
    if (n_tensors) *n_tensors = nt;
    for (uint64_t i = 0; i < n_kv; i++) {
        gguf_meta m;
        memset(&m, 0, sizeof m);
        uint32_t type;
        if (rd_str(&c, &m.key, &m.key_len) || rd_u32(&c, &type)) return -1;
        size_t at = c.off;
        if (skip_value(&c, type, 0)) return -1;   /* bounds-checked before anything is read */
        if (type == GGUF_STRING) {
            cursor s = c;
            s.off = at;
            rd_str(&s, &m.s, &m.s_len);
            m.kind = GGUF_META_STR;
        } else if (type == GGUF_ARRAY) {
            uint64_t cnt;
            memcpy(&cnt, c.d + at + 4, 8);
            m.kind = GGUF_META_ARRAY;
            m.n = cnt;
        } else if (type == GGUF_F32 || type == GGUF_F64) {
            m.kind = GGUF_META_REAL;
            m.r = real_at(&c, at, type);
        } else {
            m.kind = GGUF_META_INT;
            m.i = int_at(&c, (kv_ref){at, type, true});
            m.r = (double)m.i;
        }
        fn(ctx, &m);
    }
    return 0;
}
