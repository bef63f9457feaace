/* Tests of the redaction rules: table-driven cases of what is masked and what is left alone,
 * idempotence, fingerprints (checked against Python's hashlib.pbkdf2_hmac), held secrets, and
 * command lines that a shell runs back into the original argv. */
#include "harness.h"
#include "common/redact.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The text with every "#xxxxxx" fingerprint written "#F", so expectations read plainly. */
static char *norm(const char *s) {
    char *o = strdup(s ? s : "(null)"), *w = o;
    for (const char *p = o; *p;) {
        bool fp = p[0] == '#' && strspn(p + 1, "0123456789abcdef") >= 6;
        if (fp) { *w++ = '#'; *w++ = 'F'; p += 7; }
        else *w++ = *p++;
    }
    *w = 0;
    return o;
}

static void check_text(const char *in, const char *want, const char *file, int line) {
    char *r = redact_text(in), *n = norm(r);
    if (strcmp(n, want)) harness_fail(file, line, "redact_text(\"%s\")\n      got  \"%s\"\n      want \"%s\"", in, n, want);
    char *again = redact_text(r);   /* redacting twice changes nothing */
    if (strcmp(again, r)) harness_fail(file, line, "not idempotent: \"%s\" became \"%s\"", r, again);
    free(again);
    free(n);
    free(r);
}
#define TEXT(in, want) check_text(in, want, __FILE__, __LINE__)

TEST(redact_headers) {
    static const char *const cases[][2] = {
        {"Authorization: Bearer sk-hdrsecret456", "Authorization: Bearer [redacted #F]"},
        {"Authorization: Bearer sk-hdrsecret456abcdef", "Authorization: Bearer [redacted sk-... #F]"},
        {"X-Api-Key: xk-789secret", "X-Api-Key: [redacted #F]"},
        {"api-key:abc", "api-key:[redacted #F]"},
        {"Api-Key: sk-proj-abcdefghijklmnopqrstuvwxyz-ZZ9", "Api-Key: [redacted sk-...ZZ9 #F]"},
        {"Cookie: session=abc; id=def", "Cookie: [redacted #F]"},
        {"Set-Cookie: a=b; Path=/", "Set-Cookie: [redacted #F]"},
        {"Proxy-Authorization: Basic dXNlcjpwYXNz", "Proxy-Authorization: Basic [redacted #F]"},
        {"Authorization: sk-noscheme", "Authorization: [redacted #F]"},
        {"X-Goog-Api-Key: AIzaSy0", "X-Goog-Api-Key: [redacted #F]"},
        {"X-Auth-Token: t0k", "X-Auth-Token: [redacted #F]"},
        {"X-Client-Secret: s3", "X-Client-Secret: [redacted #F]"},
        {"Content-Type: application/json", "Content-Type: application/json"},
        {"X-Request-Id: 42", "X-Request-Id: 42"},
        {"a: 1\nX-Api-Key: line2  \nb: 2", "a: 1\nX-Api-Key: [redacted #F]  \nb: 2"},
        {"bad value 'Authorization: Bearer abc def' for --header", "bad value 'Authorization: Bearer [redacted #F]' for --header"},
        {"{\"api_key\": \"abc\", \"max_tokens\": 5, \"token\": null}", "{\"api_key\": \"[redacted #F]\", \"max_tokens\": 5, \"token\": null}"},
        {"{\"password\":\"a\\\"b\"}", "{\"password\":\"[redacted #F]\"}"},
        /* mask secrets, not messages: dsperf's own warning is prose, left whole (it once read
         * "...has no authentication: [redacted #c8213c]") */
        {"dsperf serve listens on 0.0.0.0, which is not loopback, and has no authentication: anyone who can reach "
         "this machine can use it", "dsperf serve listens on 0.0.0.0, which is not loopback, and has no "
         "authentication: anyone who can reach this machine can use it"},
        /* mid-line, a header value of one token (or a scheme and a token) is still masked */
        {"sent header Authorization: Bearer sk-mid123", "sent header Authorization: Bearer [redacted #F]"},
        {"got X-Api-Key: xk-789secret", "got X-Api-Key: [redacted #F]"},
        /* a unit, not a credential: serve's own error reads whole (it once read
         * "unknown option --prefill-per-token [redacted #1552af] --engine sim") */
        {"unknown option --prefill-per-token for --engine sim (see dsperf serve --help)",
         "unknown option --prefill-per-token for --engine sim (see dsperf serve --help)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) TEXT(cases[i][0], cases[i][1]);
}

TEST(redact_urls_assignments_flags) {
    static const char *const cases[][2] = {
        {"http://user:hunter2@127.0.0.1:8000/v1", "http://user:[redacted #F]@127.0.0.1:8000/v1"},
        {"https://ghp_abcdefghijklmnop@github.com/x", "https://[redacted ghp_... #F]@github.com/x"},
        {"cannot reach http://u:p@h/v1/models: refused", "cannot reach http://u:[redacted #F]@h/v1/models: refused"},
        {"http://h/metrics?api_key=abc123&x=1&sig=zzz", "http://h/metrics?api_key=[redacted #F]&x=1&sig=[redacted #F]"},
        {"http://h/?X-Amz-Signature=f00&X-Amz-Credential=AK/1&access_token=t", "http://h/?X-Amz-Signature=[redacted #F]&X-Amz-Credential=[redacted #F]&access_token=[redacted #F]"},
        {"http://127.0.0.1:8000/v1/models", "http://127.0.0.1:8000/v1/models"},
        {"HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz vllm serve m --api-key sk-12345678 --max-num-batched-tokens 8192 --tokenizer x",
         "HF_TOKEN=[redacted hf_...xyz #F] vllm serve m --api-key [redacted #F] --max-num-batched-tokens 8192 --tokenizer x"},
        {"--api-key=abcdef --hf-token 'two words'", "--api-key=[redacted #F] --hf-token '[redacted #F]'"},
        {"Namespace(api_key='sk-x1y2z3', hf_token=None, max_tokens=5)", "Namespace(api_key='[redacted #F]', hf_token=None, max_tokens=5)"},
        {"AWS_SECRET_ACCESS_KEY=abc AWS_REGION=us", "AWS_SECRET_ACCESS_KEY=[redacted #F] AWS_REGION=us"},
        {"apiKey=x1 clientSecret=x2 mypassword=x3", "apiKey=[redacted #F] clientSecret=[redacted #F] mypassword=[redacted #F]"},
        /* references and masks stay: the command still says where the value comes from */
        {"Authorization: Bearer $ENV{OPENAI_API_KEY}", "Authorization: Bearer $ENV{OPENAI_API_KEY}"},
        {"--api-key $KEY HF_TOKEN=${HF_TOKEN} X-Api-Key: ${X:?redacted #abcdef}", "--api-key $KEY HF_TOKEN=${HF_TOKEN} X-Api-Key: ${X:?redacted #F}"},
        {"\"http://u:${URL_PASSWORD:?redacted pw-...337 #a76b84}@h/?api_key=${API_KEY:?redacted #5e8991}\" --header \"X-Api-Key: ${X_API_KEY:?redacted #86cbf7}\"",
         "\"http://u:${URL_PASSWORD:?redacted pw-...337 #F}@h/?api_key=${API_KEY:?redacted #F}\" --header \"X-Api-Key: ${X_API_KEY:?redacted #F}\""},
        {"HF_TOKEN=${X:-hf_default_value}", "HF_TOKEN=[redacted #F]}"},
        /* not credentials */
        {"--ssl-keyfile /k.pem --auth-type basic --gpus-key tp --max-tokens 10 tokenizer=t.json author: me",
         "--ssl-keyfile /k.pem --auth-type basic --gpus-key tp --max-tokens 10 tokenizer=t.json author: me"},
        {"--token --other", "--token --other"},
        {"x-api-key-header=1 a-b-c", "x-api-key-header=1 a-b-c"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) TEXT(cases[i][0], cases[i][1]);
}

TEST(redact_names) {
    static const char *const yes[] = {"Authorization", "Proxy-Authorization", "X-Api-Key", "Api-Key", "apikey", "Cookie",
                                      "Set-Cookie", "HF_TOKEN", "--hf-token", "--api-key", "access_token", "apiKey",
                                      "X-Amz-Signature", "sig", "password", "db_passwd", "client_secret", "x-auth",
                                      "HUGGING_FACE_HUB_TOKEN", "OPENAI_API_KEY", "credentials", "--ssl-keyfile-password", NULL};
    static const char *const no[] = {"max_tokens", "--max-num-batched-tokens", "--tokenizer", "--ssl-keyfile", "--auth-type",
                                     "--gpus-key", "author", "authority", "Content-Type", "monkeys", "--api-key-file",
                                     "token_url", "keyboard", "--header", "--prefill-per-token", "", "---", NULL};
    for (const char *const *p = yes; *p; p++) CHECK_MSG(redact_name_is_secret(*p, strlen(*p)), "%s should name a credential", *p);
    for (const char *const *p = no; *p; p++) CHECK_MSG(!redact_name_is_secret(*p, strlen(*p)), "%s should not name a credential", *p);
}

/* Fingerprints are PBKDF2-HMAC-SHA256(key, "dsperf-redact/1", 20000), first 3 bytes; the values
 * come from Python: hashlib.pbkdf2_hmac('sha256', key, b'dsperf-redact/1', 20000, 3).hex(). */
TEST(redact_fingerprints_tell_keys_apart) {
    char a[64], b[64], a2[64];
    redact_mask("sk-hdrsecret456", 15, a, sizeof a);
    redact_mask("xk-789secret", 12, b, sizeof b);
    CHECK_STR(a, "[redacted #d8ff4a]");
    CHECK_STR(b, "[redacted #3c0d11]");
    /* two long keys alike in prefix and tail differ in their fingerprints; one key is stable */
    const char *k1 = "sk-proj-AAAAAAAAAAAAAAAAAAAAAAAAAAAA123", *k2 = "sk-proj-AAAAAAAAAAAAAAAAAAAAAAAAAAAB123";
    redact_mask(k1, strlen(k1), a, sizeof a);
    redact_mask(k2, strlen(k2), b, sizeof b);
    redact_mask(k1, strlen(k1), a2, sizeof a2);
    CHECK(strcmp(a, b) != 0);
    CHECK_STR(a, a2);
    CHECK(!strncmp(a, "[redacted sk-...123 #", 21));
    /* nothing of a short secret shows but its fingerprint */
    redact_mask("hunter2", 7, a, sizeof a);
    CHECK(strlen(a) == strlen("[redacted #xxxxxx]") && !strstr(a, "hun") && !strstr(a, "r2"));
}

TEST(redact_held_secrets) {
    redact_add_secret("TEST_KEY", "held-secret-0xC0FFEE");
    redact_add_secret("TEST_SHORT", "abc");   /* too short to register: would mask words */
    char *r = redact_text("server said: invalid key held-secret-0xC0FFEE! abc");
    char *n = norm(r);
    CHECK_STR(n, "server said: invalid key [redacted held-... #F]! abc");
    free(n);
    free(r);
    const char doc[] = "{\"error\":\"held-secret-0xC0FFEE\",\"n\":1}";
    size_t len = 0;
    char *k = redact_known(doc, sizeof doc - 1, &len);
    CHECK(k && !strstr(k, "C0FFEE") && len == strlen(k) && !strncmp(k, "{\"error\":\"[redacted ", 20));
    free(k);
    CHECK(redact_known("nothing here", 12, &len) == NULL);
    redact_add_header("X-Api-Key: header-held-value-77");
    r = redact_text("echo header-held-value-77");
    CHECK(r && !strstr(r, "held-value"));
    free(r);
    char buf[40];
    redact_into(buf, sizeof buf, "Authorization: Bearer abcdefghijklmnopqrstuvwxyz");
    CHECK(strlen(buf) == 39 && !strstr(buf, "klmnop"));
}

/* Runs sh -c 'printf "%s\n" LINE' with env set; its stdout and stderr (malloc'd). */
static char *shell_words(const char *line, const char *const *env) {
    int fd[2];
    if (pipe(fd) < 0) return NULL;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        close(fd[0]);
        char script[4096];
        snprintf(script, sizeof script, "printf '%%s\\n' %s", line);
        execle("/bin/sh", "sh", "-c", script, (char *)NULL, (char *const *)env);
        _exit(127);
    }
    close(fd[1]);
    char *out = calloc(1, 8192);
    size_t n = 0;
    ssize_t r;
    while ((r = read(fd[0], out + n, 8191 - n)) > 0) n += (size_t)r;
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    return out;
}

TEST(redact_command_line_runs_back) {
    char *argv[] = {"bench", "--url", "http://u:pw123456@h:1/?token=qq1234", "--header", "Authorization: Bearer sk-abcdef123456",
                    "--header", "X-Api-Key: xk-1", "--header", "X-Api-Key: xk-2", "--api-key", "s3cr3t-val",
                    "--server-cmd", "HF_TOKEN=hf_tok123 vllm serve --api-key s3cr3t-val --port {port} 'q' \"$HOME\"",
                    "--slo", "ttft=200ms", "it's", ""};
    int argc = (int)(sizeof argv / sizeof *argv);
    char *line = redact_command_line(argc, argv), *n = norm(line);
    CHECK_STR(n, "bench --url \"http://u:${URL_PASSWORD:?redacted #F}@h:1/?token=${TOKEN:?redacted #F}\" "
                 "--header \"Authorization: Bearer ${OPENAI_API_KEY:?redacted #F}\" "
                 "--header \"X-Api-Key: ${X_API_KEY:?redacted #F}\" --header \"X-Api-Key: ${X_API_KEY_2:?redacted #F}\" "
                 "--api-key \"${API_KEY:?redacted #F}\" "
                 "--server-cmd \"HF_TOKEN=${HF_TOKEN:?redacted #F} vllm serve --api-key ${API_KEY:?redacted #F} --port {port} 'q' \\\"\\$HOME\\\"\" "
                 "--slo ttft=200ms 'it'\\''s' ''");
    CHECK(redact_command_note(line) != NULL);
    CHECK(redact_command_note("bench --url http://h") == NULL);
    /* with the variables set, a shell gives back the original argv word for word */
    const char *env[] = {"URL_PASSWORD=pw123456", "TOKEN=qq1234", "OPENAI_API_KEY=sk-abcdef123456", "X_API_KEY=xk-1",
                         "X_API_KEY_2=xk-2", "API_KEY=s3cr3t-val", "HF_TOKEN=hf_tok123", NULL};
    char *words = shell_words(line, env);
    char want[4096] = "";
    for (int i = 0; i < argc; i++) snprintf(want + strlen(want), sizeof want - strlen(want), "%s\n", argv[i]);
    CHECK_STR(words, want);
    free(words);
    /* unset, the shell refuses and names the variable rather than sending a wrong key */
    const char *none[] = {NULL};
    words = shell_words(line, none);
    CHECK(words && !strstr(words, "Bearer") && strstr(words, "URL_PASSWORD: redacted #"));
    free(words);
    /* the secrets found are held now: they are masked wherever they appear later */
    char *r = redact_text("echo s3cr3t-val hf_tok123 qq1234");
    CHECK(r && !strstr(r, "s3cr3t") && !strstr(r, "hf_tok") && !strstr(r, "qq1234"));
    free(r);
    free(n);
    free(line);
}
