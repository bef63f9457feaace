/* cmd_drift — `dsperf drift`: accuracy drift between two deployments of one model (see
 * drift/drift.h). Checks the gate rules and the output paths before any measurement, runs the
 * comparison through run/drift.h (the tokenizer, both endpoints, the buckets, the gate), prints the
 * table, writes dsperf.drift/1 atomically (partial on Ctrl-C) and returns 1 when a gate rule fails. */
#include "cli/cli.h"
#include "common/stop.h"
#include "run/history_opts.h"
#include "run/drift.h"
#include "common/redact.h"
#include "results/results.h"
#include "common/log.h"
#include "common/units.h"
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
"usage: dsperf drift --baseline URL --candidate URL [options]\n"
"What does a deployment change cost in accuracy? Two deployments of the same model that differ in\n"
"one setting (KV-cache dtype, weight dtype, engine version, TP) are compared token by token, by\n"
"context length:\n"
"  teacher-forced  the baseline decodes greedily with top-k logprobs; the candidate scores the same\n"
"                  text (prompt + the baseline's tokens), so position i of both sees the same prefix:\n"
"                  top-1 agreement, the baseline token's logprob change, its rank on the candidate,\n"
"                  KL(baseline||candidate) from the top-k lists (a lower bound; the mass it cannot see\n"
"                  is reported as kl_tail_mass)\n"
"  free-running    both decode greedily: exact matches and the first differing position\n"
"  perplexity      delta PPL of the continuation, and of a reference text with --text\n"
"with 95% bootstrap intervals over prompts, against the noise floor: the baseline scored against\n"
"itself (a candidate indistinguishable from it is reported as indistinguishable from the noise floor).\n\n"
"Options:\n"
"  --baseline URL, --candidate URL   the two deployments (base URLs, as for bench)\n"
"  --model M               model name for both (default: each endpoint's first listed model)\n"
"  --baseline-model M, --candidate-model M\n"
"  --api completions|chat  endpoint (default completions; chat scores stepwise)\n"
"  --contexts LIST         prompt lengths, k = 1024 (default 1k,4k,16k); exact with --tokenizer\n"
"                          (BOS included, as the server counts), else in words\n"
"  --prompts N             prompts per context (default 8)\n"
"  --gen-tokens N          tokens decoded and compared per prompt (default 32)\n"
"  --top-logprobs K        top-k per position, 1..32 (default 5; vLLM caps it at --max-logprobs, 20)\n"
"  --dataset SPEC          prompts from a dataset (jsonl:FILE, sharegpt:FILE, ...) instead of random words:\n"
"                          each prompt joins the smallest context that holds it\n"
"  --text FILE             reference text: delta PPL over windows of each context length\n"
"  --windows N             text windows per context (default 4)\n"
"  --tokenizer PATH        the model's tokenizer.json, model directory or GGUF (exact token lengths)\n"
"  --score METHOD          how a side scores a given text: auto (default: echo, else vLLM prompt_logprobs,\n"
"                          else stepwise), echo, prompt_logprobs or stepwise (one request per position)\n"
"  --no-floor              skip the noise floor (the baseline scored against itself)\n"
"  --gate RULES            floors/ceilings on any bucket metric, holding at every context unless\n"
"                          @CONTEXT is given; X% is X/100: 'top1_agreement>=0.99,delta_ppl<=+2%,kl@16k<=0.01'\n"
"  --out FILE              write the dsperf.drift/1 document (atomic; partial after Ctrl-C)\n"
"  --save-positions FILE   one JSON line per compared position: both sides' top-k, logprobs, agreement,\n"
"                          rank, KL (where the drift happens, token by token)\n"
"  --db PATH               record the result in this results history (SQLite; default $DSPERF_DB): its\n"
"                          longest context's agreement, delta PPL, KL ... over time (dsperf history --help)\n"
"  --label KEY=VALUE       a label for the run in the history (repeatable), e.g. kv=fp8\n"
"  --concurrency N         requests in flight (default 4)\n"
"  --timeout D             per request (default 600s)\n"
"  --header 'Name: value'  extra header (repeatable); OPENAI_API_KEY is sent as a bearer token\n"
"  --insecure              skip TLS verification\n"
"  --seed N                prompts (default 1)\n"
"  -q, --quiet             no progress lines\n"
"  -h, --help\n\n"
"Exit codes: 0 ok; 1 a gate rule failed or the run was interrupted; 2 bad input, or a server that\n"
"cannot be compared (unreachable, no logprobs).\n\n"
"Examples:\n"
"  dsperf drift --baseline http://gpu1:8000 --candidate http://gpu2:8000 --tokenizer ./DeepSeek-V3 \\\n"
"      --contexts 1k,4k,16k,64k --out drift.json --gate 'top1_agreement>=0.99,delta_ppl<=+2%'\n"
"  dsperf drift --baseline http://h:8080 --candidate http://h:8081 --text wiki.txt --tokenizer m.gguf\n"
"  dsperf report drift.json -o drift.html\n"
"  dsperf diagnose sweep.json --drift drift.json     # the KV-dtype advice with its accuracy cost\n";

enum {
    O_BASE = 1000, O_CAND, O_MODEL, O_BMODEL, O_CMODEL, O_API, O_CONTEXTS, O_PROMPTS, O_GEN, O_TOPK, O_DATASET, O_TEXT,
    O_WINDOWS, O_TOKENIZER, O_SCORE, O_NOFLOOR, O_GATE, O_OUT, O_CONC, O_TIMEOUT, O_HEADER, O_INSECURE, O_SEED, O_POS,
    O_DB, O_LABEL,
};

static int int_opt(const char *name, const char *v, long long lo, long long hi, int *out) {
    long long n;
    if (units_parse_int(v, lo, hi, &n) < 0) { log_error("drift: --%s wants an integer %lld..%lld, got '%s'", name, lo, hi, v); return -1; }
    *out = (int)n;
    return 0;
}

int cmd_drift(int argc, char **argv) {
    static const struct option opts[] = {
        {"baseline", 1, 0, O_BASE}, {"candidate", 1, 0, O_CAND}, {"model", 1, 0, O_MODEL}, {"baseline-model", 1, 0, O_BMODEL},
        {"candidate-model", 1, 0, O_CMODEL}, {"api", 1, 0, O_API}, {"contexts", 1, 0, O_CONTEXTS}, {"prompts", 1, 0, O_PROMPTS},
        {"gen-tokens", 1, 0, O_GEN}, {"top-logprobs", 1, 0, O_TOPK}, {"dataset", 1, 0, O_DATASET}, {"text", 1, 0, O_TEXT},
        {"windows", 1, 0, O_WINDOWS}, {"tokenizer", 1, 0, O_TOKENIZER}, {"score", 1, 0, O_SCORE}, {"no-floor", 0, 0, O_NOFLOOR},
        {"gate", 1, 0, O_GATE}, {"out", 1, 0, O_OUT}, {"concurrency", 1, 0, O_CONC}, {"timeout", 1, 0, O_TIMEOUT},
        {"header", 1, 0, O_HEADER}, {"insecure", 0, 0, O_INSECURE}, {"seed", 1, 0, O_SEED}, {"save-positions", 1, 0, O_POS}, {"quiet", 0, 0, 'q'},
        {"db", 1, 0, O_DB}, {"label", 1, 0, O_LABEL},
        {"help", 0, 0, 'h'}, {0, 0, 0, 0},
    };
    run_drift_opts ro;
    run_drift_defaults(&ro);
    drift_opts *o = &ro.drift;
    history_opts hist;
    history_opts_init(&hist);
    const char *model = NULL, *out_path = NULL;
    const char *headers[33] = { 0 };
    int n_headers = 0, n_rules = 0, rc = EXIT_USAGE;
    drift_rule rules[32];
    char err[1024];
    long long v;
    int c;
    optind = 1;
    opterr = 0;
    cli_option_table("drift", opts);   /* DSPERF_OPTION_TABLE: the table, for completion */
    while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
        const char *a = optarg;
        switch (c) {
        case O_BASE: o->baseline_url = a; break;
        case O_CAND: o->candidate_url = a; break;
        case O_MODEL: model = a; break;
        case O_BMODEL: o->baseline_model = a; break;
        case O_CMODEL: o->candidate_model = a; break;
        case O_API:
            if (!strcmp(a, "chat")) o->chat = true;
            else if (strcmp(a, "completions")) { log_error("drift: --api wants completions or chat, got '%s'", a); return EXIT_USAGE; }
            break;
        case O_CONTEXTS:
            if (drift_parse_contexts(a, o, err, sizeof err) < 0) { log_error("drift: %s", err); return EXIT_USAGE; }
            break;
        case O_PROMPTS: if (int_opt("prompts", a, 1, 100000, &o->prompts) < 0) return EXIT_USAGE; break;
        case O_GEN: if (int_opt("gen-tokens", a, 1, 4096, &o->gen_tokens) < 0) return EXIT_USAGE; break;
        case O_TOPK: if (int_opt("top-logprobs", a, 1, DRIFT_MAX_TOP_K, &o->top_k) < 0) return EXIT_USAGE; break;
        case O_WINDOWS: if (int_opt("windows", a, 1, 100000, &o->max_windows) < 0) return EXIT_USAGE; break;
        case O_CONC: if (int_opt("concurrency", a, 1, 1024, &o->concurrency) < 0) return EXIT_USAGE; break;
        case O_DATASET: o->dataset = a; break;
        case O_TEXT: o->text_path = a; break;
        case O_TOKENIZER: ro.tokenizer_path = a; break;
        case O_SCORE:
            if (!strcmp(a, "auto")) o->score = DRIFT_SCORE_AUTO;
            else if (!strcmp(a, "echo")) o->score = DRIFT_SCORE_ECHO;
            else if (!strcmp(a, "prompt_logprobs") || !strcmp(a, "prompt-logprobs")) o->score = DRIFT_SCORE_PROMPT_LOGPROBS;
            else if (!strcmp(a, "stepwise")) o->score = DRIFT_SCORE_STEPWISE;
            else { log_error("drift: --score wants auto, echo, prompt_logprobs or stepwise, got '%s'", a); return EXIT_USAGE; }
            break;
        case O_NOFLOOR: o->floor = false; break;
        case O_GATE:
            if (drift_parse_rules(a, rules, 32, &n_rules, err, sizeof err) < 0) { log_error("drift: %s", err); return EXIT_USAGE; }
            break;
        case O_OUT: out_path = a; break;
        case O_POS: o->positions_path = a; break;
        case O_TIMEOUT:
            if (units_parse_duration_ns(a, &o->timeout_ns) < 0 || o->timeout_ns <= 0) {
                log_error("drift: --timeout wants a duration like 600s, got '%s'", a);
                return EXIT_USAGE;
            }
            break;
        case O_HEADER:
            if (n_headers == 32 || !strchr(a, ':')) { log_error("drift: --header wants 'Name: value' (at most 32), got '%s'", a); return EXIT_USAGE; }
            headers[n_headers++] = a;
            break;
        case O_INSECURE: o->insecure = true; break;
        case O_DB: case O_LABEL:
            if (history_opts_apply(&hist, c == O_DB ? "db" : "label", a, NULL) != DS_OK) return EXIT_USAGE;
            break;
        case O_SEED:
            if (units_parse_int(a, 0, INT64_MAX, &v) < 0) { log_error("drift: --seed wants a non-negative integer, got '%s'", a); return EXIT_USAGE; }
            o->seed = (uint64_t)v;
            break;
        case 'q': log_set_quiet(1); break;
        case 'h': fputs(usage_text, stdout); return EXIT_OK;
        default:
            return cli_bad_option("drift", opts, argc, argv, optind, optopt);
        }
    }
    if (optind < argc) { log_error("drift: unexpected argument '%s'; see dsperf drift --help", argv[optind]); return EXIT_USAGE; }
    if (!o->baseline_url || !o->candidate_url) {
        log_error("drift: give both deployments: dsperf drift --baseline URL --candidate URL (the same URL twice measures the noise floor)");
        return EXIT_USAGE;
    }
    if (!o->baseline_model) o->baseline_model = model;
    if (!o->candidate_model) o->candidate_model = model;
    o->headers = headers;
    o->api_key = getenv("OPENAI_API_KEY");
    /* credentials never leave the process: every text written masks them (common/redact.h) */
    redact_add_secret("OPENAI_API_KEY", o->api_key);
    for (int i = 0; i < n_headers; i++) redact_add_header(headers[i]);
    /* a path that cannot be written would lose the measurements: refuse before measuring */
    if (cli_check_output("--out", out_path) || cli_check_output("--save-positions", o->positions_path) ||
        history_opts_check(&hist) != DS_OK) return EXIT_USAGE;
    char *cmdline = cli_command_line(argc, argv);
    o->command_line = cmdline;
    ro.rules = rules;
    ro.n_rules = n_rules;
    run_drift_result res;
    ds_result r = run_drift(&ro, &res, err, sizeof err);
    if (r != DS_OK) log_error("drift: %s", err);
    rc = ds_exit_code(r);
    if (!res.doc) goto out;
    if (r == DS_OK && (res.interrupted || res.gate_failed)) rc = EXIT_RUN_FAILED;
    drift_print(cli_summary_stream(), res.doc);
    fflush(cli_summary_stream());
    if (out_path) {
        if (results_write_json(out_path, res.doc, err, sizeof err) < 0) {
            log_error("drift: %s", err);
            rc = EXIT_RUN_FAILED;
        } else {
            log_info("drift: %s written%s", out_path, res.interrupted ? " (partial: interrupted)" : "");
        }
    }
    if (history_opts_record(&hist, res.doc, NULL, 0) != DS_OK && rc == EXIT_OK) rc = EXIT_RUN_FAILED;
out:
    json_decref(res.doc);
    free(cmdline);
    return rc;
}
