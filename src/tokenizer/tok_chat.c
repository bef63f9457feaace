/* tok_chat — what datasets need beyond encode: the prompt a server renders from chat messages with
 * the model's chat template (DeepSeek-V3/R1 family, rendered the way its Jinja template does), and the
 * vocabulary's single-token words for building prompts of exact token length. */
#include "tokenizer/tok_internal.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define U_BAR "\xEF\xBD\x9C"   /* ｜ U+FF5C */
#define U_SP "\xE2\x96\x81"    /* ▁ U+2581 */

static int put(char **b, size_t *l, size_t *c, const char *s) { return tok_buf_append(b, l, c, s, strlen(s)); }

/* A template piece whose Jinja string literal holds a blank line, written either as the escape
 * '\n\n' (tokenizer_config.json) or as two raw newlines (some GGUF writers): Jinja reads both alike. */
static bool has_nl_piece(const char *tm, const char *before, const char *after) {
    char a[160], b[160];
    snprintf(a, sizeof a, "%s'\\n\\n'%s", before, after);
    snprintf(b, sizeof b, "%s'\n\n'%s", before, after);
    return strstr(tm, a) || strstr(tm, b);
}

void tok_chat_detect(tokenizer *t) {
    const char *tm = t->chat_template;
    if (!tm) return;
    /* DeepSeek-LLM / V2 / Coder-V2 chat: "User: ...\n\n", "Assistant: ...<eos>", system text first-come. */
    if (has_nl_piece(tm, "'User: ' + message['content'] + ", "") &&
        strstr(tm, "'Assistant: ' + message['content'] + eos_token") && strstr(tm, "{{ 'Assistant:' }}") &&
        has_nl_piece(tm, "{{ message['content'] + ", " }}")) {
        t->chat = TOK_CHAT_DEEPSEEK2;
        return;
    }
    if (!strstr(tm, "<" U_BAR "User" U_BAR ">") || !strstr(tm, "<" U_BAR "Assistant" U_BAR ">")) return;
    t->chat = TOK_CHAT_DEEPSEEK3;
    /* DeepSeek-R1's variant of the template: '<｜Assistant｜><think>\n' opens the reply, and past
     * assistant turns are cut to what follows their last </think>. */
    t->chat_think_prompt = strstr(tm, "'<" U_BAR "Assistant" U_BAR "><think>\\n'") != NULL;
    t->chat_strip_think = strstr(tm, "split('</think>')[-1]") != NULL;
}

/* The DeepSeek-V3 template: BOS, the system prompts joined by blank lines, then user turns as
 * <｜User｜>text, assistant turns as <｜Assistant｜>text<｜end▁of▁sentence｜>, tool outputs wrapped in
 * the tool-output markers, and <｜Assistant｜> to open the reply (add_generation_prompt). */
static int render_ds3(const tokenizer *t, const char *const *roles, const char *const *contents, size_t n,
                      char **b, size_t *l, size_t *c) {
    int rc = 0;
    if (t->bos_id >= 0) rc |= tok_buf_append(b, l, c, t->tok_str[t->bos_id], t->tok_len[t->bos_id]);
    bool first_sys = true;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(roles[i], "system")) continue;
        if (!first_sys) rc |= put(b, l, c, "\n\n");
        rc |= put(b, l, c, contents[i]);
        first_sys = false;
    }
    bool is_tool = false, output_first = true;
    for (size_t i = 0; i < n; i++) {
        const char *r = roles[i], *m = contents[i];
        if (!strcmp(r, "user")) {
            is_tool = false;
            rc |= put(b, l, c, "<" U_BAR "User" U_BAR ">") | put(b, l, c, m);
        } else if (!strcmp(r, "assistant")) {
            if (!is_tool && t->chat_strip_think) { /* R1 strips only in this branch, as its template does */
                const char *e, *last = NULL;
                for (const char *q = m; (e = strstr(q, "</think>")); q = e + 1) last = e;
                if (last) m = last + strlen("</think>");
            }
            rc |= put(b, l, c, is_tool ? "<" U_BAR "tool" U_SP "outputs" U_SP "end" U_BAR ">" : "<" U_BAR "Assistant" U_BAR ">");
            rc |= put(b, l, c, m) | put(b, l, c, "<" U_BAR "end" U_SP "of" U_SP "sentence" U_BAR ">");
            is_tool = false;
        } else if (!strcmp(r, "tool")) {
            is_tool = true;
            rc |= put(b, l, c, output_first ? "<" U_BAR "tool" U_SP "outputs" U_SP "begin" U_BAR "><" U_BAR "tool" U_SP "output" U_SP "begin" U_BAR ">"
                                            : "\n<" U_BAR "tool" U_SP "output" U_SP "begin" U_BAR ">");
            rc |= put(b, l, c, m) | put(b, l, c, "<" U_BAR "tool" U_SP "output" U_SP "end" U_BAR ">");
            output_first = false;
        }
    }
    if (is_tool) rc |= put(b, l, c, "<" U_BAR "tool" U_SP "outputs" U_SP "end" U_BAR ">");
    else rc |= put(b, l, c, t->chat_think_prompt ? "<" U_BAR "Assistant" U_BAR "><think>\n" : "<" U_BAR "Assistant" U_BAR ">");
    return rc ? -ENOMEM : 0;
}

/* The DeepSeek-LLM/V2 template: BOS, then each message in order (system text + blank line,
 * "User: text\n\n", "Assistant: text<eos>"), then "Assistant:" to open the reply. */
static int render_ds2(const tokenizer *t, const char *const *roles, const char *const *contents, size_t n,
                      char **b, size_t *l, size_t *c) {
    int rc = 0;
    if (t->bos_id >= 0) rc |= tok_buf_append(b, l, c, t->tok_str[t->bos_id], t->tok_len[t->bos_id]);
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(roles[i], "user")) rc |= put(b, l, c, "User: ") | put(b, l, c, contents[i]) | put(b, l, c, "\n\n");
        else if (!strcmp(roles[i], "assistant")) {
            rc |= put(b, l, c, "Assistant: ") | put(b, l, c, contents[i]);
            if (t->eos_id >= 0) rc |= tok_buf_append(b, l, c, t->tok_str[t->eos_id], t->tok_len[t->eos_id]);
        } else if (!strcmp(roles[i], "system")) rc |= put(b, l, c, contents[i]) | put(b, l, c, "\n\n");
    }
    rc |= put(b, l, c, "Assistant:");
    return rc ? -ENOMEM : 0;
}

int tokenizer_chat_render(const tokenizer *t, const char *const *roles, const char *const *contents,
                          size_t n_messages, char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    if (t->chat == TOK_CHAT_NONE) return -2;
    for (size_t i = 0; i < n_messages; i++)
        if (!roles[i] || !contents[i]) return -EINVAL;
    char *b = NULL;
    size_t l = 0, c = 0;
    int rc = t->chat == TOK_CHAT_DEEPSEEK2 ? render_ds2(t, roles, contents, n_messages, &b, &l, &c)
                                           : render_ds3(t, roles, contents, n_messages, &b, &l, &c);
    if (rc) { free(b); return rc; }
    *out = b;
    *len = l;
    return 0;
}

int tokenizer_chat_prompt_tokens(const tokenizer *t, const char *const *roles, const char *const *contents,
                                 size_t n_messages, size_t *n_tokens) {
    char *text;
    size_t len;
    int rc = tokenizer_chat_render(t, roles, contents, n_messages, &text, &len);
    if (rc) return rc;
    /* The servers tokenize the rendered prompt without adding a BOS: the template wrote it. */
    size_t n = tokenizer_count(t, text, len);
    free(text);
    if (n == (size_t)-1) return -ENOMEM;
    *n_tokens = n;
    return 0;
}

int tokenizer_single_token_words(const tokenizer *t, const char ***words, size_t *n) {
    *words = NULL; /* defined outputs on every path: callers may free(*words) after an error */
    *n = 0;
    const char **w = NULL;
    size_t k = 0, cap = 0;
    char buf[256];
    for (size_t id = 0; id < t->n_vocab; id++) {
        const char *s = t->tok_str[id];
        size_t l = t->tok_len[id];
        if (!s || t->tok_flags[id] || l < 3 || l > sizeof buf || memcmp(s, "\xC4\xA0", 2)) continue;
        bool alpha = true;
        for (size_t i = 2; i < l && alpha; i++) alpha = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z');
        if (!alpha) continue;
        /* In the vocabulary is not enough: BPE must actually reach the token from " word". */
        buf[0] = ' ';
        memcpy(buf + 1, s + 2, l - 2);
        int32_t *ids;
        size_t ni;
        if (tokenizer_encode(t, buf, l - 1, false, &ids, &ni)) { free(w); return -ENOMEM; }
        bool one = ni == 1 && ids[0] == (int32_t)id;
        free(ids);
        if (!one) continue;
        if (k == cap) {
            cap = cap ? cap * 2 : 1024;
            const char **nw = realloc(w, cap * sizeof *nw);
            if (!nw) { free(w); return -ENOMEM; }
            w = nw;
        }
        w[k++] = s + 2;
    }
    *words = w;
    *n = k;
    return 0;
}
