/* redact — credentials never leave the process. Every text dsperf writes that may hold a command
 * line, a URL, a header or a server command goes through here: documents, per-request files,
 * reports, logs, error messages. It masks
 *   - values of credential headers (Authorization and Proxy-Authorization keep their scheme word,
 *     X-Api-Key, Api-Key, Cookie, Set-Cookie, any header named like *token*, *secret*, *key*,
 *     *auth*, *password*, *signature*): "Name: value", and JSON's "name": "value";
 *   - userinfo in URLs (http://user:pass@host keeps user, http://token@host masks token);
 *   - NAME=value where NAME is credential-like: URL query parameters (?api_key=..., &sig=...),
 *     environment assignments in a server command (HF_TOKEN=...), --flag=value;
 *   - the word after a credential-like flag (--api-key X, --hf-token X);
 *   - anywhere, a secret the process knows it holds (redact_add_secret), e.g. a key a server
 *     echoes back in its error message.
 * A masked value reads "[redacted sk-...456 #1a2b3c]": a public type prefix ("sk-", "hf_") when
 * there is one, the last 3 characters only when the secret is 24 characters or longer, and a
 * 6-hex fingerprint so two keys stay distinguishable (the same key gives the same fingerprint in
 * every run and on every machine). The fingerprint is the first 24 bits of PBKDF2-HMAC-SHA256
 * (libcrypto; fixed salt, 20,000 iterations): 24 bits cannot single out a key from any space
 * bigger than ~16 million candidates, and the iterations make each dictionary guess of a weak
 * password cost 20,000 SHA-256 evaluations. A value that is a shell or $ENV{} reference, or is
 * already masked, is left as is, so redacting twice changes nothing.
 *
 * Command lines are written runnable instead (redact_command_line): a secret becomes a shell
 * parameter "${X_API_KEY:?redacted xk-... #9f8e7d}" inside double quotes, so the Reproduce
 * command runs once the variable is set and otherwise stops, naming it.
 * All functions are thread-safe. */
#ifndef DSP_REDACT_H
#define DSP_REDACT_H
#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

/* The masked copy of text (malloc'd; the caller frees). NULL in gives NULL; NULL also when out
 * of memory. */
char *redact_text(const char *text);
/* The masked text as a new JSON string (null for NULL), for documents' fields. */
json_t *redact_json(const char *text);
/* Masks every string value in a JSON tree, in place (a document saved before redaction existed,
 * read back to be reported or compared). */
void redact_json_tree(json_t *doc);
/* The masked text into buf (cap bytes, always NUL-terminated, cut at cap-1). Returns buf. */
char *redact_into(char *buf, size_t cap, const char *text);
/* Only the secrets the process holds (redact_add_secret), for arbitrary data such as a whole
 * document: NULL when data holds none of them, else a malloc'd copy with each masked
 * (*out_len its length). The mask holds no quote, backslash, comma or angle bracket, so JSON,
 * CSV and HTML stay well-formed. */
char *redact_known(const char *data, size_t len, size_t *out_len);
/* Rewrites a file (a server's log) with its credentials masked, atomically; 0, or -1 + errno. */
int redact_file(const char *path);

/* argv as one shell line for a results file's command_line, each argument quoted as a POSIX
 * shell needs it and every secret a "${NAME:?redacted ...}" parameter (NAME from where it was:
 * OPENAI_API_KEY for a Bearer token, X_API_KEY for that header, HF_TOKEN for HF_TOKEN=...,
 * URL_PASSWORD for userinfo). Also registers each secret it finds (redact_add_secret). malloc'd. */
char *redact_command_line(int argc, char *const argv[]);
/* One line for a report beside a command line that holds such parameters; NULL when it holds
 * none. */
const char *redact_command_note(const char *command_line);

/* Registers a secret the process holds (a header value, an API key, a password) under a name
 * for the runnable command line (NULL: derived). Secrets shorter than 6 characters are not
 * registered (they would mask ordinary words); the rules above still mask them in context. */
void redact_add_secret(const char *name, const char *secret);
/* Registers the credential parts of one "Name: value" header (the value, or for
 * Authorization: Bearer X the X) when Name is credential-like. */
void redact_add_header(const char *header);
/* Whether a header, parameter, variable or flag name (leading dashes ignored) names a
 * credential: HF_TOKEN, X-Api-Key, apiKey, --api-key, Authorization, Cookie yes; max_tokens,
 * --tokenizer, --ssl-keyfile, --auth-type no. */
bool redact_name_is_secret(const char *name, size_t len);
/* The mask of one secret, "[redacted sk-... #1a2b3c]", into buf (at least 48 bytes). */
void redact_mask(const char *secret, size_t len, char *buf, size_t cap);
#endif
