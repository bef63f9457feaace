/* cmd_tokenize — `dsperf tokenize`: encode, count or decode text with a tokenizer.json or the vocabulary
 * of a GGUF file, exactly as Hugging Face tokenizers would. The hidden --bench FILE times loading and
 * encoding for scripts/bench_tokenizer.sh. */
#include "cli/cli.h"
#include "tokenizer/tokenizer.h"
#include "common/clock.h"
#include "common/fileio.h"
#include "common/log.h"
#include <jansson.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f) {
    fprintf(f,
            "usage: dsperf tokenize --tokenizer PATH [--ids|--count|--decode] [--bos] [--chat] [TEXT|-]\n\n"
            "Encodes TEXT (or standard input when TEXT is '-' or absent) with a Hugging Face tokenizer.json\n"
            "or the vocabulary of a GGUF file, identically to Hugging Face tokenizers.\n\n"
            "  --tokenizer PATH  tokenizer.json (tokenizer_config.json beside it is read too), a model\n"
            "                    directory holding them, or a .gguf file\n"
            "  --ids             print the token ids, space-separated (default)\n"
            "  --count           print the number of tokens\n"
            "  --decode          read ids (space/comma separated) and print the text\n"
            "  --bos             prepend the BOS token (the servers do when the model asks for it)\n"
            "  --chat            TEXT is a JSON array of {\"role\", \"content\"} messages: encode the prompt the\n"
            "                    server renders with the model's chat template (DeepSeek-V3/R1, LLM/V2)\n"
            "  --render          with --chat: print the rendered prompt text instead\n\n"
            "examples:\n"
            "  dsperf tokenize --tokenizer deepseek-v3/tokenizer.json 'Hello world'\n"
            "  dsperf tokenize --tokenizer ggml-vocab-deepseek-llm.gguf --count - < prompt.txt\n"
            "  dsperf tokenize --tokenizer tokenizer.json --decode '19923 2058'\n"
            "  dsperf tokenize --tokenizer tokenizer.json --chat --count '[{\"role\":\"user\",\"content\":\"Hi\"}]'\n");
}

static int read_stdin(char **out, size_t *len) {
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap + 1);
    if (!b) return -1;
    for (;;) {
        size_t got = fread(b + n, 1, cap - n, stdin);
        n += got;
        if (got == 0) break;
        if (n == cap) {
            char *nb = realloc(b, cap * 2 + 1);
            if (!nb) { free(b); return -1; }
            b = nb;
            cap *= 2;
        }
    }
    if (ferror(stdin)) { free(b); return -1; }
    b[n] = 0;
    *out = b;
    *len = n;
    return 0;
}

static int parse_ids(const char *s, int32_t **ids, size_t *n) {
    size_t cap = 64, k = 0;
    int32_t *a = malloc(cap * sizeof *a);
    if (!a) return -1;
    while (*s) {
        while (*s == ' ' || *s == ',' || *s == '\n' || *s == '\t' || *s == '\r' || *s == '[' || *s == ']') s++;
        if (!*s) break;
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || errno || v < 0 || v > INT32_MAX) { free(a); return -2; }
        if (k == cap) {
            int32_t *na = realloc(a, cap * 2 * sizeof *na);
            if (!na) { free(a); return -1; }
            a = na;
            cap *= 2;
        }
        a[k++] = (int32_t)v;
        s = end;
    }
    *ids = a;
    *n = k;
    return 0;
}

static long rss_kb(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t fl = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, fl)) v = strtol(line + fl + 1, NULL, 10);
    if (f) fclose(f);
    return v;
}

/* --chat: renders the messages (JSON array of {role, content}) into *text with the chat template. */
static int chat_text(const tokenizer *t, const char *json, char **text, size_t *len) {
    json_error_t je;
    json_t *arr = json_loads(json, 0, &je);
    if (!json_is_array(arr)) {
        log_error("tokenize: --chat expects a JSON array of {\"role\", \"content\"} messages (%s)", arr ? "not an array" : je.text);
        json_decref(arr);
        return EXIT_USAGE;
    }
    size_t n = json_array_size(arr);
    const char **roles = calloc(n + 1, sizeof *roles), **contents = calloc(n + 1, sizeof *contents);
    int rc = roles && contents ? EXIT_OK : EXIT_RUN_FAILED;
    for (size_t i = 0; i < n && rc == EXIT_OK; i++) {
        json_t *m = json_array_get(arr, i);
        roles[i] = json_string_value(json_object_get(m, "role"));
        contents[i] = json_string_value(json_object_get(m, "content"));
        if (!roles[i] || !contents[i]) {
            log_error("tokenize: --chat message %zu needs string \"role\" and \"content\"", i);
            rc = EXIT_USAGE;
        }
    }
    if (rc == EXIT_OK) {
        int r = tokenizer_chat_render(t, roles, contents, n, text, len);
        if (r == -2) { log_error("tokenize: this tokenizer has no chat template dsperf can render (DeepSeek-V3/R1 or LLM/V2 family)"); rc = EXIT_USAGE; }
        else if (r) { log_error("tokenize: rendering the chat prompt failed"); rc = EXIT_RUN_FAILED; }
    }
    free(roles);
    free(contents);
    json_decref(arr);
    return rc;
}

/* Hidden: each line of FILE is a JSON string; prints its ids (" id id ...") one line per input, the
 * format scripts/tokenizer_diff.sh compares with Hugging Face's output. */
static int run_lines(const char *tok_path, const char *file) {
    tokenizer *t;
    char err[512];
    if (tokenizer_load(tok_path, &t, err, sizeof err)) { log_error("tokenize: %s", err); return EXIT_USAGE; }
    FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;
    if (!f) { log_error("tokenize: cannot open '%s': %s", file, strerror(errno)); tokenizer_free(t); return EXIT_USAGE; }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = EXIT_OK;
    while (rc == EXIT_OK && (n = getline(&line, &cap, f)) > 0) {
        json_error_t je;
        json_t *j = json_loadb(line, (size_t)n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        if (!json_is_string(j)) { log_error("tokenize: line is not a JSON string: %s", je.text); rc = EXIT_USAGE; json_decref(j); break; }
        int32_t *ids;
        size_t ni;
        if (tokenizer_encode(t, json_string_value(j), json_string_length(j), false, &ids, &ni)) { rc = EXIT_RUN_FAILED; json_decref(j); break; }
        for (size_t i = 0; i < ni; i++) printf(" %d", ids[i]);
        printf("\n");
        free(ids);
        json_decref(j);
    }
    free(line);
    if (f != stdin) fclose(f);
    tokenizer_free(t);
    return rc;
}

/* Hidden: load time, then encode FILE whole (several rounds, best kept) on this one thread. */
static int run_bench(const char *tok_path, const char *file) {
    long rss0 = rss_kb("VmRSS:");
    int64_t t0 = clock_now_ns();
    tokenizer *t;
    char err[512];
    if (tokenizer_load(tok_path, &t, err, sizeof err)) { log_error("%s", err); return EXIT_USAGE; }
    int64_t load_ns = clock_now_ns() - t0;
    long rss1 = rss_kb("VmRSS:");
    char *text;
    size_t len;
    if (fileio_read_all(file, &text, &len)) { log_error("cannot read '%s': %s", file, strerror(errno)); tokenizer_free(t); return EXIT_USAGE; }
    int64_t best = INT64_MAX;
    size_t n = 0;
    for (int round = 0; round < 3; round++) {
        int64_t s = clock_now_ns();
        n = tokenizer_count(t, text, len);
        int64_t d = clock_now_ns() - s;
        if (d < best) best = d;
    }
    printf("{\"bytes\": %zu, \"tokens\": %zu, \"load_ms\": %.1f, \"encode_s\": %.4f, \"mb_per_s\": %.2f, "
           "\"rss_tokenizer_mb\": %.1f, \"rss_peak_mb\": %.1f}\n",
           len, n, load_ns / 1e6, best / 1e9, len / 1e6 / (best / 1e9), (rss1 - rss0) / 1024.0, rss_kb("VmHWM:") / 1024.0);
    free(text);
    tokenizer_free(t);
    return EXIT_OK;
}

int cmd_tokenize(int argc, char **argv) {
    static const struct option opts[] = {
        {"tokenizer", required_argument, 0, 't'}, {"ids", no_argument, 0, 'i'}, {"count", no_argument, 0, 'c'},
        {"decode", no_argument, 0, 'd'}, {"bos", no_argument, 0, 'b'}, {"bench", required_argument, 0, 'B'}, {"lines", required_argument, 0, 'L'},
        {"chat", no_argument, 0, 'C'}, {"render", no_argument, 0, 'R'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
    };
    const char *path = NULL, *bench = NULL, *lines = NULL;
    char mode = 'i';
    bool bos = false, chat = false, render = false;
    int c;
    optind = 1;
    opterr = 0;     /* cli_bad_option says it, in one line */
    cli_option_table("tokenize", opts);   /* DSPERF_OPTION_TABLE: the table, for completion */
    while ((c = getopt_long(argc, argv, "t:h", opts, NULL)) != -1) {
        switch (c) {
        case 't': path = optarg; break;
        case 'i': case 'c': case 'd': mode = (char)c; break;
        case 'b': bos = true; break;
        case 'B': bench = optarg; break;
        case 'L': lines = optarg; break;
        case 'C': chat = true; break;
        case 'R': render = true; break;
        case 'h': usage(stdout); return EXIT_OK;
        default: return cli_bad_option("tokenize", opts, argc, argv, optind, optopt);
        }
    }
    if (!path) { log_error("tokenize: --tokenizer PATH is required (a tokenizer.json or a .gguf file)"); return EXIT_USAGE; }
    if (bench) return run_bench(path, bench);
    if (lines) return run_lines(path, lines);
    if (argc - optind > 1) { log_error("tokenize: one TEXT argument at most (quote it), or '-' for standard input"); return EXIT_USAGE; }
    char *text;
    size_t len;
    if (optind < argc && strcmp(argv[optind], "-")) {
        text = strdup(argv[optind]);
        len = text ? strlen(text) : 0;
    } else if (read_stdin(&text, &len)) {
        log_error("tokenize: cannot read standard input");
        return EXIT_RUN_FAILED;
    }
    if (!text) { log_error("tokenize: out of memory"); return EXIT_RUN_FAILED; }
    tokenizer *t;
    char err[512];
    if (tokenizer_load(path, &t, err, sizeof err)) {
        log_error("tokenize: %s", err);
        free(text);
        return EXIT_USAGE;
    }
    int rc = EXIT_OK;
    if (chat) {
        char *rendered;
        size_t rl;
        rc = mode == 'd' ? EXIT_USAGE : chat_text(t, text, &rendered, &rl);
        if (mode == 'd') log_error("tokenize: --chat and --decode do not go together");
        if (rc == EXIT_OK) {
            free(text);
            text = rendered;
            len = rl;
            bos = false; /* the template writes the BOS itself */
            if (render) {
                fwrite(text, 1, len, stdout);
                mode = 0;
            }
        }
    }
    if (rc != EXIT_OK || mode == 0) {
        /* done */
    } else if (mode == 'd') {
        int32_t *ids = NULL;
        size_t n = 0;
        int pr = parse_ids(text, &ids, &n);
        char *out;
        size_t ol;
        /* The library skips unknown ids as HF does; asked on the command line, an id that names no token
         * is a mistake to report, not text to drop silently. */
        size_t bad = SIZE_MAX;
        for (size_t i = 0; pr == 0 && i < n && bad == SIZE_MAX; i++)
            if (!tokenizer_id_known(t, ids[i])) bad = i;
        if (pr == -2) { log_error("tokenize: --decode expects token ids (non-negative integers)"); rc = EXIT_USAGE; }
        else if (bad != SIZE_MAX) {
            log_error("tokenize: --decode: id %d is not a token of this vocabulary (ids 0..%zu)", ids[bad], tokenizer_vocab_size(t) - 1);
            rc = EXIT_USAGE;
        }
        else if (pr || tokenizer_decode(t, ids, n, &out, &ol)) { log_error("tokenize: out of memory"); rc = EXIT_RUN_FAILED; }
        else {
            fwrite(out, 1, ol, stdout);
            if (isatty(STDOUT_FILENO)) fputc('\n', stdout);
            free(out);
        }
        if (!pr) free(ids);
    } else {
        int32_t *ids;
        size_t n;
        if (tokenizer_encode(t, text, len, bos, &ids, &n)) { log_error("tokenize: encoding failed"); rc = EXIT_RUN_FAILED; }
        else if (mode == 'c') printf("%zu\n", n);
        else {
            for (size_t i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
            printf("\n");
        }
        if (rc == EXIT_OK) free(ids);
    }
    tokenizer_free(t);
    free(text);
    return rc;
}
