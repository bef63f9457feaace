/* redact — masking credentials in everything dsperf writes (rules and reasons in redact.h).
 * One scanner walks a text once and applies, at each position, the first rule that matches: an
 * existing mask or reference (left alone), URL userinfo at "://", NAME=value at '=', a header or
 * JSON member at ':', a credential flag and its word at '-', then the secrets the process holds.
 * The same scanner writes masks (documents, logs) or shell parameters (command lines). */
#include "common/redact.h"
#include "common/fileio.h"
#include <openssl/evp.h>
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MIN_KNOWN_LEN 6          /* shorter registered secrets would mask ordinary words */
#define SHOW_TAIL_MIN_LEN 24     /* the last 3 characters show only on keys this long */
#define SHOW_PREFIX_MIN_LEN 20   /* a type prefix ("sk-") shows only on keys this long, not on passwords */
#define FP_ITERATIONS 20000      /* PBKDF2 rounds: ~10 ms once per distinct secret per process */
#define FP_CACHE 256
#define MAX_NAME 128             /* longer runs are no names: looking back stays linear */

/* One lock for the registry and the fingerprint cache; recursive because a scan that registers
 * what it finds (command lines) adds while it holds the lock. */
static pthread_mutex_t g_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

/* ---- growable output ---- */

typedef struct { char *p; size_t n, cap; bool oom; } sbuf;

static void put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) { b->oom = true; return; }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
static void puts_(sbuf *b, const char *s) { put(b, s, strlen(s)); }
static char *take(sbuf *b) {
    if (b->oom) { free(b->p); return NULL; }
    if (!b->p) return strdup("");
    return b->p;
}

/* ---- names ---- */

static bool word_in(const char *w, size_t n, const char *const *list) {
    for (; *list; list++) if (strlen(*list) == n && !memcmp(w, *list, n)) return true;
    return false;
}
static bool word_ends(const char *w, size_t n, const char *suffix) {
    size_t k = strlen(suffix);
    return n >= k && !memcmp(w + n - k, suffix, k);
}

/* w: one lowercase word of a name. */
static bool word_is_secret(const char *w, size_t n) {
    static const char *const exact[] = {"pass", "pwd", "passphrase", "credential", "credentials", "signature", "sig",
                                        "bearer", "jwt", "secrets", "cookies", NULL};
    static const char *const suffixes[] = {"token", "secret", "key", "password", "passwd", "cookie", NULL};
    if (word_in(w, n, exact)) return true;
    for (const char *const *s = suffixes; *s; s++) if (word_ends(w, n, *s)) return true;
    /* auth, authorization, authkey, authn... but not author or authority */
    return n >= 4 && !memcmp(w, "auth", 4) && !(n >= 6 && !memcmp(w, "author", 6) && !word_ends(w, n, "authorization"));
}

/* A last word that makes the name about a credential rather than one: --ssl-key-file,
 * --api-key-env, --auth-type, token_url. */
static bool word_is_about(const char *w, size_t n) {
    static const char *const about[] = {"file", "path", "dir", "env", "var", "name", "type", "mode", "header", "len",
                                        "length", "size", "count", "limit", "format", "url", "required", NULL};
    return word_in(w, n, about);
}

bool redact_name_is_secret(const char *name, size_t len) {
    while (len && (*name == '-' || *name == '.')) { name++; len--; }
    if (!len) return false;
    if (len == 8 && !strncasecmp(name, "gpus-key", 8)) return false;   /* tune's grid key naming the GPU count */
    bool secret = false, last_about = false, after_per = false;
    char w[64];
    size_t wn = 0;
    for (size_t i = 0; i <= len; i++) {
        char c = i < len ? name[i] : 0;
        bool alnum = isalnum((unsigned char)c) != 0;
        /* a word ends at a non-alphanumeric and at a camelCase step (apiKey → api, key) */
        bool step = alnum && wn && isupper((unsigned char)c) && i > 0 && islower((unsigned char)name[i - 1]);
        if ((!alnum || step) && wn) {
            /* "per token" is a unit (--prefill-per-token), not a credential */
            if (word_is_secret(w, wn) && !(after_per && wn == 5 && !memcmp(w, "token", 5))) secret = true;
            last_about = word_is_about(w, wn);
            after_per = wn == 3 && !memcmp(w, "per", 3);
            wn = 0;
        }
        if (alnum && wn < sizeof w) w[wn++] = (char)tolower((unsigned char)c);
    }
    return secret && !last_about;
}

/* A shell variable name from where a secret was: "X-Api-Key" → X_API_KEY. */
static void var_name(const char *name, size_t n, char *buf, size_t cap) {
    size_t k = 0;
    while (n && !isalnum((unsigned char)*name)) { name++; n--; }
    for (size_t i = 0; i < n && k + 2 < cap; i++) {
        char c = name[i];
        if (isalnum((unsigned char)c)) buf[k++] = (char)toupper((unsigned char)c);
        else if (k && buf[k - 1] != '_') buf[k++] = '_';
    }
    while (k && buf[k - 1] == '_') k--;
    buf[k] = 0;
    if (!k) snprintf(buf, cap, "SECRET");
    else if (isdigit((unsigned char)buf[0]) && k + 2 < cap) { memmove(buf + 1, buf, k + 1); buf[0] = '_'; }
}

/* ---- fingerprints and masks ---- */

typedef struct { char *secret; size_t len; char hex[7]; } fp_entry;
static fp_entry g_fp[FP_CACHE];
static size_t g_fp_next;

static void fingerprint(const char *s, size_t n, char hex[7]) {
    for (size_t i = 0; i < FP_CACHE; i++)
        if (g_fp[i].secret && g_fp[i].len == n && !memcmp(g_fp[i].secret, s, n)) { memcpy(hex, g_fp[i].hex, 7); return; }
    static const char salt[] = "dsperf-redact/1";
    unsigned char d[3] = {0};
    PKCS5_PBKDF2_HMAC(s, (int)n, (const unsigned char *)salt, (int)sizeof salt - 1, FP_ITERATIONS, EVP_sha256(), sizeof d, d);
    snprintf(hex, 7, "%02x%02x%02x", d[0], d[1], d[2]);
    fp_entry *e = &g_fp[g_fp_next++ % FP_CACHE];
    free(e->secret);
    e->secret = malloc(n ? n : 1);
    e->len = n;
    if (e->secret) memcpy(e->secret, s, n);
    memcpy(e->hex, hex, 7);
}

/* Characters a mask may show: nothing a JSON string, CSV field, HTML text or a double-quoted shell
 * word would need to escape. */
static bool showable(char c) { return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.'; }

/* "sk-... #1a2b3c" (what a mask and a command-line parameter show). */
static void describe(const char *s, size_t n, char *buf, size_t cap) {
    char hex[7];
    pthread_mutex_lock(&g_lock);
    fingerprint(s, n, hex);
    pthread_mutex_unlock(&g_lock);
    size_t pre = 0;
    if (n >= SHOW_PREFIX_MIN_LEN) {
        while (pre < 4 && pre < n && islower((unsigned char)s[pre])) pre++;
        pre = pre && pre < n && (s[pre] == '-' || s[pre] == '_') ? pre + 1 : 0;
    }
    bool tail = n >= SHOW_TAIL_MIN_LEN && showable(s[n - 1]) && showable(s[n - 2]) && showable(s[n - 3]);
    if (pre || tail)
        snprintf(buf, cap, "%.*s...%.*s #%s", (int)pre, s, tail ? 3 : 0, tail ? s + n - 3 : "", hex);
    else snprintf(buf, cap, "#%s", hex);
}

void redact_mask(const char *secret, size_t len, char *buf, size_t cap) {
    char d[64];
    describe(secret, len, d, sizeof d);
    snprintf(buf, cap, "[redacted %s]", d);
}

/* ---- secrets the process holds ---- */

typedef struct { char *name; char *secret; size_t len; } known;
static known *g_known;
static size_t g_nknown, g_capknown;

static void add_known(const char *name, const char *s, size_t n) {
    if (n < MIN_KNOWN_LEN) return;
    pthread_mutex_lock(&g_lock);
    bool have = false;
    for (size_t i = 0; i < g_nknown && !have; i++) have = g_known[i].len == n && !memcmp(g_known[i].secret, s, n);
    if (!have && g_nknown == g_capknown) {
        size_t cap = g_capknown ? g_capknown * 2 : 16;
        known *k = realloc(g_known, cap * sizeof *k);
        if (k) { g_known = k; g_capknown = cap; }
    }
    if (!have && g_nknown < g_capknown) {
        known *k = &g_known[g_nknown];
        k->secret = malloc(n + 1);
        k->name = strdup(name ? name : "SECRET");
        if (k->secret && k->name) {
            memcpy(k->secret, s, n);
            k->secret[n] = 0;
            k->len = n;
            g_nknown++;
        } else { free(k->secret); free(k->name); }
    }
    pthread_mutex_unlock(&g_lock);
}

void redact_add_secret(const char *name, const char *secret) {
    if (!secret) return;
    char v[64];
    var_name(name ? name : "SECRET", name ? strlen(name) : 6, v, sizeof v);
    add_known(v, secret, strlen(secret));
}

/* The longest held secret that starts at t (caller holds the lock); NULL when none. */
static const known *known_at(const char *t, size_t left) {
    const known *best = NULL;
    for (size_t i = 0; i < g_nknown; i++) {
        const known *k = &g_known[i];
        if (k->len <= left && k->secret[0] == *t && !memcmp(k->secret, t, k->len) && (!best || k->len > best->len)) best = k;
    }
    return best;
}

/* ---- the scanner ---- */

/* Names given to secrets within one command line, so one secret is one variable throughout. */
typedef struct { char name[64]; const char *secret; size_t len; } slot;
typedef struct {
    sbuf *out;
    bool params;          /* command line: ${NAME:?...} parameters rather than masks */
    bool add;             /* register every secret found */
    bool known_only;      /* only the held secrets (arbitrary data) */
    slot slots[32];
    size_t nslots;
} scan;

/* Appends the replacement for secret [s, s+n), found under name (a variable name). */
static void emit(scan *c, const char *name, const char *s, size_t n) {
    char d[64];
    describe(s, n, d, sizeof d);
    if (c->add) add_known(name, s, n);
    if (!c->params) {
        puts_(c->out, "[redacted ");
        puts_(c->out, d);
        puts_(c->out, "]");
        return;
    }
    const char *var = NULL;
    for (size_t i = 0; i < c->nslots && !var; i++)
        if (c->slots[i].len == n && !memcmp(c->slots[i].secret, s, n)) var = c->slots[i].name;
    char v[64];
    if (!var) {
        snprintf(v, sizeof v, "%s", name);
        for (int k = 2; ; k++) {   /* one name per secret: a second X_API_KEY becomes X_API_KEY_2 */
            bool taken = false;
            for (size_t i = 0; i < c->nslots && !taken; i++) taken = !strcmp(c->slots[i].name, v);
            if (!taken) break;
            snprintf(v, sizeof v, "%.50s_%d", name, k);
        }
        if (c->nslots < sizeof c->slots / sizeof *c->slots) {
            slot *sl = &c->slots[c->nslots++];
            sl->secret = s;
            sl->len = n;
            snprintf(sl->name, sizeof sl->name, "%s", v);
        }
        var = v;
    }
    /* \x01 marks a parameter for the quoting step: its '$' must stay live */
    puts_(c->out, "\x01${");
    puts_(c->out, var);
    puts_(c->out, ":?redacted ");
    puts_(c->out, d);
    puts_(c->out, "}");
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
static bool is_name_ch(char c) { return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.'; }
static bool is_hdr_ch(char c) { return isalnum((unsigned char)c) || c == '_' || c == '-'; }
static bool starts(const char *t, size_t left, const char *s) { size_t k = strlen(s); return left >= k && !memcmp(t, s, k); }

static size_t find_ch(const char *t, size_t p, size_t n, char ch) {
    while (p < n && t[p] != ch) p++;
    return p;
}

/* Where a quoted value that opens at p (after the quote) ends: the closing quote, skipping
 * backslash escapes inside double quotes. */
static size_t quoted_end(const char *t, size_t p, size_t n, char q) {
    while (p < n && t[p] != q) p += (q == '"' && t[p] == '\\' && p + 1 < n) ? 2 : 1;
    return p;
}

/* The end of a variable name that starts at p (p itself when there is none). */
static size_t name_end(const char *t, size_t p, size_t n) {
    if (p >= n || (!isalpha((unsigned char)t[p]) && t[p] != '_')) return p;
    while (p < n && (isalnum((unsigned char)t[p]) || t[p] == '_')) p++;
    return p;
}

/* When t+p holds a mask ("[redacted ...]") or a reference that holds no secret ($NAME, ${NAME},
 * $ENV{NAME}, and the parameters command lines get, ${NAME:?redacted ...}), where it ends;
 * else 0. Other ${...} forms can carry a value (${X:-key}) and are not skipped. */
static size_t skip_ref(const char *t, size_t p, size_t n) {
    if (starts(t + p, n - p, "[redacted ")) {
        size_t e = find_ch(t, p, n, ']');
        return e + (e < n);
    }
    if (t[p] != '$') return 0;
    bool env = starts(t + p, n - p, "$ENV{"), brace = env || starts(t + p, n - p, "${");
    size_t s = p + (env ? 5 : brace ? 2 : 1), e = name_end(t, s, n);
    if (e == s) return 0;
    if (!brace) return e;
    if (e < n && t[e] == '}') return e + 1;
    if (env || !starts(t + e, n - e, ":?redacted ")) return 0;
    e = find_ch(t, e, n, '}');
    return e + (e < n);
}

/* The value [vs, ve) of a credential: masked unless it is empty, a reference, a mask, or a
 * literal that holds nothing (None, null, true, false). Returns where scanning resumes. */
static size_t value(scan *c, const char *t, size_t n, size_t vs, size_t ve, const char *var) {
    if (vs >= ve) return vs;
    size_t r = skip_ref(t, vs, n);
    if (r) { put(c->out, t + vs, r - vs); return r; }
    /* a held secret inside the span is the value ("key=SECRET: refused" ends at the secret), so
     * it masks the same wherever it appears */
    const known *k = g_nknown ? known_at(t + vs, ve - vs) : NULL;
    if (k) ve = vs + k->len;
    static const char *const empty[] = {"none", "null", "true", "false", NULL};
    for (const char *const *e = empty; *e; e++)
        if (ve - vs == strlen(*e) && !strncasecmp(t + vs, *e, ve - vs)) { put(c->out, t + vs, ve - vs); return ve; }
    emit(c, var, t + vs, ve - vs);
    return ve;
}

/* http://user:pass@host — at the ':' of "://". */
static size_t rule_url(scan *c, const char *t, size_t n, size_t i) {
    size_t a = i + 3, e = a, at = 0;
    while (e < n && !strchr("/?#'\"<>", t[e]) && !is_space(t[e])) { if (t[e] == '@') at = e; e++; }
    put(c->out, "://", 3);
    if (!at) return a;
    size_t colon = find_ch(t, a, at, ':');
    if (colon < at) {
        put(c->out, t + a, colon + 1 - a);
        size_t r = value(c, t, n, colon + 1, at, "URL_PASSWORD");
        return r > at ? r : at;
    }
    size_t r = value(c, t, n, a, at, "URL_USERINFO");
    return r > at ? r : at;
}

/* NAME=value (query parameters, environment assignments, --flag=value) — at the '='. 0 when
 * NAME is no credential. */
static size_t rule_assign(scan *c, const char *t, size_t n, size_t i) {
    size_t s = i;
    while (s > 0 && i - s <= MAX_NAME && is_name_ch(t[s - 1])) s--;
    if (s == i || i - s > MAX_NAME || !redact_name_is_secret(t + s, i - s)) return 0;
    char var[64];
    var_name(t + s, i - s, var, sizeof var);
    put(c->out, "=", 1);
    size_t p = i + 1;
    if (p < n && (t[p] == '\'' || t[p] == '"')) {
        put(c->out, t + p, 1);
        return value(c, t, n, p + 1, quoted_end(t, p + 1, n, t[p]), var);
    }
    size_t ve = p;
    while (ve < n && !is_space(t[ve]) && !strchr("'\"&;,)]}<>", t[ve])) ve++;
    return value(c, t, n, p, ve, var);
}

/* "Name: value" (a header) or "name": "value" (JSON) — at the ':'. 0 when not a credential. */
static size_t rule_header(scan *c, const char *t, size_t n, size_t i) {
    bool json = i > 0 && t[i - 1] == '"';
    size_t ne = json ? i - 1 : i, s = ne;
    while (s > 0 && ne - s <= MAX_NAME && (json ? is_name_ch(t[s - 1]) : is_hdr_ch(t[s - 1]))) s--;
    if (s == ne || ne - s > MAX_NAME || (json && (s == 0 || t[s - 1] != '"'))) return 0;
    /* a header name starts a line or a word ("a=KEY: refused" is no header named KEY) */
    if (!json && s > 0 && !is_space(t[s - 1]) && !strchr("'\"{,;([", t[s - 1])) return 0;
    if (!redact_name_is_secret(t + s, ne - s)) return 0;
    char var[64];
    var_name(t + s, ne - s, var, sizeof var);
    size_t p = i + 1;
    while (p < n && (t[p] == ' ' || t[p] == '\t')) p++;
    /* Mask secrets, not messages: mid-line after a word, "Name: value" is a header only when the
     * value is one token or a scheme word and a token. dsperf's own sentence "... has no
     * authentication: anyone who can reach this machine can use it" is prose, left whole. */
    if (!json && s > 0 && is_space(t[s - 1]) && p < n && t[p] != '\'' && t[p] != '"') {
        int words = 0;
        for (size_t w = p; w < n && t[w] != '\n' && t[w] != '\r' && words <= 2;) {
            while (w < n && (t[w] == ' ' || t[w] == '\t')) w++;
            if (w >= n || t[w] == '\n' || t[w] == '\r') break;
            words++;
            while (w < n && !is_space(t[w])) w++;
        }
        if (words > 2) return 0;
    }
    put(c->out, t + i, p - i);
    if (json) {
        if (p >= n || t[p] != '"') return p;   /* a number, null or object holds no secret text */
        put(c->out, "\"", 1);
        return value(c, t, n, p + 1, quoted_end(t, p + 1, n, '"'), var);
    }
    char q = s > 0 && (t[s - 1] == '\'' || t[s - 1] == '"') ? t[s - 1] : 0;
    if (!q && p < n && (t[p] == '\'' || t[p] == '"')) {
        put(c->out, t + p, 1);
        return value(c, t, n, p + 1, quoted_end(t, p + 1, n, t[p]), var);
    }
    size_t ve = p;
    while (ve < n && t[ve] != '\n' && t[ve] != '\r' && t[ve] != q) ve++;
    while (ve > p && (t[ve - 1] == ' ' || t[ve - 1] == '\t')) ve--;
    /* Authorization keeps its scheme word: "Bearer [redacted ...]" */
    if (ne - s >= 13 && !strncasecmp(t + ne - 13, "authorization", 13)) {
        size_t w = p;
        while (w < ve && isalnum((unsigned char)t[w])) w++;
        size_t v = w;
        while (v < ve && t[v] == ' ') v++;
        if (w > p && v > w && v < ve) {
            if (w - p == 6 && !strncasecmp(t + p, "bearer", 6) && ne - s == 13) snprintf(var, sizeof var, "OPENAI_API_KEY");
            put(c->out, t + p, v - p);
            p = v;
        }
    }
    return value(c, t, n, p, ve, var);
}

/* --api-key VALUE (a credential flag and the word after it) — at a word's leading '-'. */
static size_t rule_flag(scan *c, const char *t, size_t n, size_t i) {
    if (i > 0 && !is_space(t[i - 1]) && t[i - 1] != '\'' && t[i - 1] != '"') return 0;
    size_t s = i;
    while (s < n && s - i < 2 && t[s] == '-') s++;
    size_t ne = s;
    while (ne < n && ne - s <= MAX_NAME && is_hdr_ch(t[ne])) ne++;
    if (ne - s > MAX_NAME) return 0;
    if (ne == s || ne >= n || (t[ne] != ' ' && t[ne] != '\t') || !redact_name_is_secret(t + s, ne - s)) return 0;
    size_t p = ne;
    while (p < n && (t[p] == ' ' || t[p] == '\t')) p++;
    if (p >= n || t[p] == '-' || t[p] == '\n' || t[p] == '\r') return 0;
    char var[64];
    var_name(t + s, ne - s, var, sizeof var);
    put(c->out, t + i, p - i);
    if (t[p] == '\'' || t[p] == '"') {
        put(c->out, t + p, 1);
        return value(c, t, n, p + 1, quoted_end(t, p + 1, n, t[p]), var);
    }
    size_t ve = p;
    while (ve < n && !is_space(t[ve]) && t[ve] != '\'' && t[ve] != '"') ve++;
    return value(c, t, n, p, ve, var);
}

static void scan_text(scan *c, const char *t, size_t n) {
    pthread_mutex_lock(&g_lock);
    /* the bytes a rule or a held secret can start at; runs of any other are copied at once */
    bool stop[256] = {0};
    for (const char *s = c->known_only ? "[" : "[$:=-"; *s; s++) stop[(unsigned char)*s] = true;
    for (size_t k = 0; k < g_nknown; k++) stop[(unsigned char)g_known[k].secret[0]] = true;
    for (size_t i = 0; i < n && !c->out->oom;) {
        size_t r = i;
        while (r < n && !stop[(unsigned char)t[r]]) r++;
        if (r > i) { put(c->out, t + i, r - i); i = r; continue; }
        if ((t[i] == '[' || t[i] == '$') && (r = skip_ref(t, i, n))) { put(c->out, t + i, r - i); i = r; continue; }
        if (!c->known_only) {
            if (t[i] == ':' && starts(t + i, n - i, "://")) { i = rule_url(c, t, n, i); continue; }
            if (t[i] == '=' && (r = rule_assign(c, t, n, i))) { i = r; continue; }
            if (t[i] == ':' && (r = rule_header(c, t, n, i))) { i = r; continue; }
            if (t[i] == '-' && (r = rule_flag(c, t, n, i))) { i = r; continue; }
        }
        const known *k = g_nknown ? known_at(t + i, n - i) : NULL;
        if (k) { emit(c, k->name, t + i, k->len); i += k->len; continue; }
        put(c->out, t + i, 1);
        i++;
    }
    pthread_mutex_unlock(&g_lock);
}

/* ---- text ---- */

char *redact_text(const char *text) {
    if (!text) return NULL;
    sbuf o = {0};
    scan c = { .out = &o };
    scan_text(&c, text, strlen(text));
    return take(&o);
}

json_t *redact_json(const char *text) {
    if (!text) return json_null();
    char *r = redact_text(text);
    json_t *j = json_string(r ? r : "(withheld: out of memory while masking credentials)");
    free(r);
    return j;
}

void redact_json_tree(json_t *j) {
    size_t i;
    const char *k;
    json_t *v;
    void *tmp;
    if (json_is_object(j)) {
        json_object_foreach_safe(j, tmp, k, v) {
            if (!json_is_string(v)) { redact_json_tree(v); continue; }
            char *r = redact_text(json_string_value(v));
            if (r && strcmp(r, json_string_value(v))) json_object_set_new(j, k, json_string(r));
            free(r);
        }
    } else if (json_is_array(j)) {
        json_array_foreach(j, i, v) {
            if (!json_is_string(v)) { redact_json_tree(v); continue; }
            char *r = redact_text(json_string_value(v));
            if (r && strcmp(r, json_string_value(v))) json_array_set_new(j, i, json_string(r));
            free(r);
        }
    }
}

char *redact_into(char *buf, size_t cap, const char *text) {
    if (!cap) return buf;
    char *r = redact_text(text ? text : "");
    /* out of memory: say nothing rather than the unmasked text */
    snprintf(buf, cap, "%s", r ? r : "(message withheld: out of memory while masking credentials)");
    free(r);
    return buf;
}

char *redact_known(const char *data, size_t len, size_t *out_len) {
    pthread_mutex_lock(&g_lock);
    bool any = false;
    for (size_t i = 0; i < g_nknown && !any; i++) any = memmem(data, len, g_known[i].secret, g_known[i].len) != NULL;
    char *r = NULL;
    if (any) {
        sbuf o = {0};
        scan c = { .out = &o, .known_only = true };
        scan_text(&c, data, len);
        r = take(&o);
        if (r && out_len) *out_len = o.n;
    }
    pthread_mutex_unlock(&g_lock);
    return r;
}

int redact_file(const char *path) {
    char *text = NULL;
    size_t len = 0;
    if (fileio_read_all(path, &text, &len) < 0) return -1;
    char *r = redact_text(text);
    int rc = 0;
    if (!r) { errno = ENOMEM; rc = -1; }
    else if (strlen(r) != len || memcmp(r, text, len)) rc = fileio_write_atomic(path, r, strlen(r));
    free(r);
    free(text);
    return rc;
}

void redact_add_header(const char *h) {
    if (!h) return;
    sbuf o = {0};
    scan c = { .out = &o, .add = true };   /* registering is the point; the masked text is dropped */
    scan_text(&c, h, strlen(h));
    free(o.p);
}

/* ---- command lines ---- */

/* One argument as a POSIX shell needs it: bare when it is plain, in single quotes otherwise, in
 * double quotes (the parameters left live, everything else escaped) when it holds parameters. */
static void put_quoted(sbuf *o, const char *a, size_t n) {
    static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,@%+";
    if (!memchr(a, '\x01', n)) {
        bool bare = n > 0;
        for (size_t i = 0; i < n && bare; i++) bare = strchr(plain, a[i]) && a[i];
        if (bare) { put(o, a, n); return; }
        put(o, "'", 1);
        for (size_t i = 0; i < n; i++) {
            if (a[i] == '\'') puts_(o, "'\\''");
            else put(o, a + i, 1);
        }
        put(o, "'", 1);
        return;
    }
    put(o, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        if (a[i] == '\x01') {
            size_t e = find_ch(a, i, n, '}');
            put(o, a + i + 1, e + (e < n) - i - 1);
            i = e;
            continue;
        }
        if (strchr("$`\"\\", a[i])) put(o, "\\", 1);
        put(o, a + i, 1);
    }
    put(o, "\"", 1);
}

/* "--api-key" (without '='): the next argument is the secret. */
static bool flag_takes_secret(const char *a) {
    return a[0] == '-' && !strchr(a, '=') && redact_name_is_secret(a, strlen(a));
}

char *redact_command_line(int argc, char *const argv[]) {
    sbuf line = {0};
    scan c = { .params = true, .add = true };
    for (int i = 0; i < argc; i++) {
        sbuf arg = {0};
        c.out = &arg;
        const char *a = argv[i];
        size_t n = strlen(a);
        if (i > 0 && flag_takes_secret(argv[i - 1]) && a[0] != '-' && !skip_ref(a, 0, n)) {
            char var[64];
            var_name(argv[i - 1], strlen(argv[i - 1]), var, sizeof var);
            pthread_mutex_lock(&g_lock);
            emit(&c, var, a, n);
            pthread_mutex_unlock(&g_lock);
        } else scan_text(&c, a, n);
        if (i) put(&line, " ", 1);
        if (arg.oom) line.oom = true;
        else put_quoted(&line, arg.p ? arg.p : "", arg.n);
        free(arg.p);
    }
    return take(&line);
}

const char *redact_command_note(const char *cmd) {
    if (!cmd || !strstr(cmd, ":?redacted ")) return NULL;
    return "Credentials in this command were replaced by shell variables, ${NAME:?redacted ...}: set each before running "
           "it (the shell stops and names any that is unset). The type prefix and #fingerprint tell keys apart without "
           "revealing them.";
}
