/* Real workloads against `dsperf serve` on loopback, checked on what the server received
 * (serve --log-prompts) and what the client recorded (--save-requests):
 *  - a Mooncake-format trace written here (300 requests; 6 system prompts of 3 blocks, 40
 *    conversations adding up to 4 blocks of their own, a unique partial tail each): every block two
 *    requests share by id is byte- and token-identical in the prompts the server got, every prompt
 *    counts exactly input_length tokens with BOS (completions) or the chat template (chat), each
 *    request's schedule is its trace timestamp x --time-scale to the nanosecond, none was sent
 *    before it, and the workload's hit-rate bound equals the one counted here;
 *  - multi-turn sessions: each turn's prompt is the previous turn's prompt, the server's own answer
 *    to it (the words serve generated for that request), and a new user message; a turn the server
 *    fails ends its conversation, and no later turn of it is sent.
 * Wall-clock timing is never asserted: the machine is shared. */
#include "harness.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"
#include "server/server_oai.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_REQ 300
#define BS 16

typedef struct {
    double ts_ms;
    int in, out, n_ids;
    long ids[8];
} treq;

/* The trace: request r belongs to conversation c = r % 40 (system prompt c % 6) and is its
 * (r / 40)th request; it holds the system prompt's 3 blocks, the first min(turn + 1, 4) of the
 * conversation's own blocks, and a partial tail of 1..15 tokens of its own. */
static void make_trace(treq *t, const char *path) {
    FILE *f = fopen(path, "w");
    for (int r = 0; r < N_REQ; r++) {
        int c = r % 40, g = c % 6, turn = r / 40, own = turn + 1 < 4 ? turn + 1 : 4, tail = 1 + (r * 7) % 15;
        treq *q = &t[r];
        q->n_ids = 0;
        for (int k = 0; k < 3; k++) q->ids[q->n_ids++] = g * 100 + k + 1;
        for (int k = 0; k < own; k++) q->ids[q->n_ids++] = 1000 + c * 10 + k;
        q->ids[q->n_ids++] = 100000 + r;
        q->in = (q->n_ids - 1) * BS + tail;
        q->out = 1 + r;   /* unique: it tells the server's log entries apart */
        q->ts_ms = r * 7.0 + (r * 37) % 5 + (r % 3) * 0.25;
        fprintf(f, "{\"timestamp\": %.2f, \"input_length\": %d, \"output_length\": %d, \"hash_ids\": [", q->ts_ms, q->in, q->out);
        for (int k = 0; k < q->n_ids; k++) fprintf(f, k ? ", %ld" : "%ld", q->ids[k]);
        fprintf(f, "]}\n");
    }
    fclose(f);
}

/* The bound counted here: the leading run of ids any earlier request held, in tokens. */
static long long bound_tokens(const treq *t, int n) {
    long long sum = 0;
    for (int r = 0; r < n; r++) {
        int k = 0;
        for (; k < t[r].n_ids; k++) {
            bool seen = false;
            for (int p = 0; p < r && !seen; p++)
                for (int j = 0; j < t[p].n_ids && !seen; j++) seen = t[p].ids[j] == t[r].ids[k];
            if (!seen) break;
        }
        sum += k * BS < t[r].in ? k * BS : t[r].in;
    }
    return sum;
}

static char **read_lines(const char *path, int *n) {
    FILE *f = fopen(path, "r");
    char **v = calloc(4096, sizeof *v);
    *n = 0;
    if (!f) return v;
    char *line = NULL;
    size_t cap = 0;
    while (*n < 4096 && getline(&line, &cap, f) > 0) v[(*n)++] = strdup(line);
    free(line);
    fclose(f);
    return v;
}

static void free_lines(char **v, int n) { for (int i = 0; i < n; i++) free(v[i]); free(v); }

/* The prompt text of a logged request: the completions prompt or the first message's content. */
static const char *logged_prompt(json_t *entry) {
    json_t *req = json_object_get(entry, "request");
    const char *p = json_string_value(json_object_get(req, "prompt"));
    if (p) return p;
    return json_string_value(json_object_get(json_array_get(json_object_get(req, "messages"), 0), "content"));
}

/* Runs one replay and checks it; window_n: how many of the trace's first requests it covers. */
static void replay_and_check(const treq *t, const char *trace, const tokenizer *tok, bool chat, int window_n) {
    test_server s;
    char log[512], out[512], reqs[512], cmd[2048];
    snprintf(log, sizeof log, "%s/prompts-%d.jsonl", harness_tmpdir(), chat);
    snprintf(out, sizeof out, "%s/trace-%d.json", harness_tmpdir(), chat);
    snprintf(reqs, sizeof reqs, "%s/trace-%d.requests.jsonl", harness_tmpdir(), chat);
    snprintf(cmd, sizeof cmd, "--ttft 1ms --itl 0 --log-prompts %s", log);
    if (test_serve_start(&s, cmd) != 0) { CHECK_MSG(0, "serve did not start"); return; }
    const char *tpath = harness_testdata_file("tokenizers/deepseek-v3/tokenizer.json");
    char window[64] = "";
    if (window_n < N_REQ) snprintf(window, sizeof window, "--trace-window ..%.3fms", t[window_n].ts_ms - 0.01);
    snprintf(cmd, sizeof cmd, "bench --url %s --quiet --api %s --dataset mooncake:%s --trace-block-size %d --arrival trace "
             "--time-scale 0.25 %s --tokenizer %s --out %s --save-requests %s", s.url, chat ? "chat" : "completions",
             trace, BS, window, tpath, out, reqs);
    int rc = test_run(cmd, NULL, NULL);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    json_t *res = test_load_json(out);
    int n_log = 0, n_rec = 0;
    char **logl = read_lines(log, &n_log), **recl = read_lines(reqs, &n_rec);
    CHECK_EQ_INT(n_log, window_n);
    CHECK_EQ_INT(n_rec, window_n);
    CHECK(res && test_num(res, "completed") == window_n);
    /* the workload's bound, exactly as counted here */
    long long want_bound = bound_tokens(t, window_n), want_prompt = 0;
    for (int r = 0; r < window_n; r++) want_prompt += t[r].in;
    json_t *pc = json_object_get(res, "prefix_cache");
    CHECK_EQ_INT(test_num(pc, "cacheable_tokens"), want_bound);
    CHECK_EQ_INT(test_num(pc, "prompt_tokens_sent"), want_prompt);
    /* the client's schedule: trace offsets x 0.25, to the nanosecond; nothing sent early */
    long long sched0 = 0;
    for (int i = 0; i < n_rec && i < window_n; i++) {
        json_t *r = json_loads(recl[i], 0, NULL);
        int idx = (int)test_num(r, "index");
        CHECK_EQ_INT(idx, i);
        long long sched = (long long)test_num(r, "sched_ns"), send = (long long)test_num(r, "send_ns");
        if (i == 0) sched0 = sched;
        long long want = llround((t[i].ts_ms - t[0].ts_ms) * 1e6 * 0.25);
        CHECK_MSG(llabs(sched - sched0 - want) <= 1, "request %d scheduled at %lld ns, the trace says %lld", i, sched - sched0, want);
        CHECK_MSG(send >= sched, "request %d sent %lld ns before its schedule", i, sched - send);
        CHECK_EQ_INT(test_num(r, "in_tokens"), t[i].in);       /* as the server counts it */
        CHECK_EQ_INT(test_num(r, "max_tokens"), t[i].out);
        json_decref(r);
    }
    /* what the server got: every prompt identified by its unique tail block, lengths exact,
     * shared blocks identical in bytes and in tokens */
    char **prompts = calloc((size_t)window_n, sizeof *prompts);
    int32_t **ids = calloc((size_t)window_n, sizeof *ids);
    size_t *nid = calloc((size_t)window_n, sizeof *nid);
    int bos = tokenizer_add_bos_default(tok) ? 1 : 0;
    for (int i = 0; i < n_log; i++) {
        json_t *e = json_loads(logl[i], 0, NULL);
        const char *p = logged_prompt(e);
        int32_t *v = NULL;
        size_t nv = 0;
        CHECK(p && tokenizer_encode(tok, p, strlen(p), false, &v, &nv) == 0);
        /* which request: max_tokens is unique in this trace */
        int out_tok = (int)test_num(json_object_get(e, "request"), "max_tokens");
        size_t counted = nv + (size_t)bos;
        if (chat) {
            const char *role = "user";
            CHECK(tokenizer_chat_prompt_tokens(tok, &role, &p, 1, &counted) == 0);
        }
        int match = out_tok >= 1 && out_tok <= window_n && !prompts[out_tok - 1] ? out_tok - 1 : -1;
        CHECK_MSG(match >= 0, "logged request %d (max_tokens %d) matches no trace request", i, out_tok);
        if (match >= 0) CHECK_MSG(t[match].in == (int)counted, "request %d: the server got %zu tokens, the trace says %d", match, counted, t[match].in);
        if (match >= 0) { prompts[match] = strdup(p); ids[match] = v; nid[match] = nv; } else free(v);
        json_decref(e);
    }
    long shared_pairs = 0;
    for (int a = 0; a < window_n; a++)
        for (int b = a + 1; b < window_n; b++) {
            if (!prompts[a] || !prompts[b]) continue;
            for (int k = 0; k < t[a].n_ids && k < t[b].n_ids; k++) {
                size_t lo = (size_t)k * BS, hi = lo + BS;
                if (hi > nid[a]) hi = nid[a];
                if (hi > nid[b]) hi = nid[b];
                if (t[a].ids[k] != t[b].ids[k]) {
                    /* blocks with different ids differ */
                    if (hi > lo + 4) CHECK(memcmp(ids[a] + lo, ids[b] + lo, (hi - lo) * sizeof *ids[a]) != 0);
                    break;
                }
                shared_pairs++;
                CHECK_MSG(!memcmp(ids[a] + lo, ids[b] + lo, (hi - lo) * sizeof *ids[a]), "requests %d and %d: block %d (id %ld) differs in tokens", a, b, k, t[a].ids[k]);
                /* bytes: every token is one word with its space, so block k is words [16k, 16k+16) */
                char *pa = prompts[a], *pb = prompts[b];
                size_t wa = 0, wb = 0, ia = 0, ib = 0;
                while (pa[ia] && wa < lo) wa += pa[++ia] == ' ';
                while (pb[ib] && wb < lo) wb += pb[++ib] == ' ';
                size_t ja = ia, jb = ib, ca = wa, cb = wb;
                while (pa[ja] && ca < hi) ca += pa[++ja] == ' ';
                while (pb[jb] && cb < hi) cb += pb[++jb] == ' ';
                CHECK_MSG(ja - ia == jb - ib && !memcmp(pa + ia, pb + ib, ja - ia), "requests %d and %d: block %d differs in bytes", a, b, k);
            }
        }
    CHECK_MSG(shared_pairs > 1000, "only %ld shared block pairs checked", shared_pairs);
    for (int r = 0; r < window_n; r++) { free(prompts[r]); free(ids[r]); }
    free(prompts); free(ids); free(nid);
    free_lines(logl, n_log);
    free_lines(recl, n_rec);
    json_decref(res);
}

TEST(workload_mooncake_trace_replay_exact) {
    const char *tpath = harness_testdata_file("tokenizers/deepseek-v3/tokenizer.json");
    if (!tpath) SKIP_NO_SHARED_DATA("tokenizers/deepseek-v3/tokenizer.json");
    tokenizer *tok = NULL;
    char err[256], trace[512];
    CHECK(tokenizer_load(tpath, &tok, err, sizeof err) == 0);
    if (!tok) return;
    static treq t[N_REQ];
    snprintf(trace, sizeof trace, "%s/trace.jsonl", harness_tmpdir());
    make_trace(t, trace);
    /* dsperf trace: the same bound, the distinct blocks counted here, and an LRU that holds
     * everything reaching it */
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd, "trace mooncake:%s --trace-block-size %d --json", trace, BS);
    CHECK_EQ_INT(test_run(cmd, &out, NULL), 0);
    json_t *sum = out ? json_loads(out, 0, NULL) : NULL;
    long long in = 0, distinct = 0;
    for (int r = 0; r < N_REQ; r++) {
        in += t[r].in;
        for (int k = 0; k < t[r].n_ids; k++) {
            bool earlier = false;
            for (int p = 0; p < r && !earlier; p++)
                for (int j = 0; j < t[p].n_ids && !earlier; j++) earlier = t[p].ids[j] == t[r].ids[k];
            distinct += !earlier;
        }
    }
    CHECK_EQ_INT(test_num(sum, "requests"), N_REQ);
    CHECK_EQ_INT(test_num(sum, "distinct_blocks"), distinct);
    CHECK_NEAR(test_num(sum, "hit_rate_bound"), (double)bound_tokens(t, N_REQ) / in, 1e-12);
    json_t *all = json_array_get(json_object_get(sum, "lru_kv_for_hit_rate"), 4);
    CHECK_NEAR(test_num(all, "share_of_bound"), 1, 0);
    CHECK(test_num(all, "kv_tokens") > 0 && test_num(all, "kv_tokens") <= test_num(sum, "working_set_tokens") + BS);
    /* dsperf plan sizes the KV for the trace's bound the same way, against the deployment's KV */
    snprintf(cmd, sizeof cmd, "plan --model deepseek-v2-lite --gpu h200 --json --trace %s --block-size %d", trace, BS);
    char *pout = NULL;
    CHECK_EQ_INT(test_run(cmd, &pout, NULL), 0);
    json_t *plan = pout ? json_loads(pout, 0, NULL) : NULL, *ppc = json_object_get(plan, "prefix_cache");
    CHECK_NEAR(test_num(ppc, "hit_rate_bound"), test_num(sum, "hit_rate_bound"), 1e-9);
    CHECK_EQ_INT(test_num(ppc, "kv_tokens_needed"), test_num(all, "kv_tokens"));
    CHECK(json_is_true(json_object_get(ppc, "fits")));   /* a few thousand tokens on an H200 */
    CHECK_NEAR(test_num(ppc, "hit_rate_at_kv_tokens"), test_num(sum, "hit_rate_bound"), 1e-9);
    json_decref(plan);
    free(pout);
    snprintf(cmd, sizeof cmd, "plan --model deepseek-v2-lite --gpu h200 --trace %s --block-size %d --hit-rate 99%%", trace, BS);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 2);   /* above what the trace allows: one line, usage */
    json_decref(sum);
    free(out);
    replay_and_check(t, trace, tok, false, N_REQ);
    /* chat: the shared blocks lead the user message, the template around them; a window of the
     * first 120 requests */
    replay_and_check(t, trace, tok, true, 120);
    tokenizer_free(tok);
}

/* The requests of one conversation chain in the log: each turn's prompt is an earlier prompt,
 * then the words serve generated for that earlier request, then "\n\nUser:". Returns the number
 * of chains of exactly `turns` prompts. */
static int count_chains(char **logl, int n, int turns, bool check_answers) {
    char **p = calloc((size_t)n, sizeof *p);
    int *maxtok = calloc((size_t)n, sizeof *maxtok), *depth = calloc((size_t)n, sizeof *depth);
    for (int i = 0; i < n; i++) {
        json_t *e = json_loads(logl[i], 0, NULL);
        p[i] = strdup(logged_prompt(e) ? logged_prompt(e) : "");
        maxtok[i] = (int)test_num(json_object_get(e, "request"), "max_tokens");
        json_decref(e);
    }
    int complete = 0;
    for (int i = 0; i < n; i++) {
        /* its previous turn: the longest earlier prompt it starts with */
        int prev = -1;
        size_t best = 0;
        for (int j = 0; j < i; j++) {
            size_t l = strlen(p[j]);
            if (l > best && !strncmp(p[i], p[j], l)) { prev = j; best = l; }
        }
        depth[i] = prev < 0 ? 1 : depth[prev] + 1;
        if (prev >= 0 && check_answers) {
            /* serve's answer to log entry prev (arrival seq prev + 1, one loop, no faults) */
            char want[4096] = "";
            for (int k = 0; k < maxtok[prev]; k++) strncat(want, oai_word((uint64_t)prev + 1, k), sizeof want - strlen(want) - 1);
            strncat(want, "\n\nUser:", sizeof want - strlen(want) - 1);
            CHECK_MSG(!strncmp(p[i] + best, want, strlen(want)), "turn after request %d does not carry serve's answer:\n got  '%.80s'\n want '%.80s'", prev, p[i] + best, want);
        }
        complete += depth[i] == turns;
    }
    for (int i = 0; i < n; i++) free(p[i]);
    free(p); free(maxtok); free(depth);
    return complete;
}

TEST(workload_sessions_carry_real_answers) {
    test_server s;
    char log[512], out[512], cmd[2048];
    snprintf(log, sizeof log, "%s/sess.jsonl", harness_tmpdir());
    snprintf(out, sizeof out, "%s/sess.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "--ttft 2ms --itl 1ms --log-prompts %s", log);
    if (test_serve_start(&s, cmd) != 0) { CHECK_MSG(0, "serve did not start"); return; }
    snprintf(cmd, sizeof cmd, "bench --url %s --quiet --concurrency 3 --dataset sessions:n=8,turns=4,first=30,user=6,out=5,think=10ms,system=12 "
             "--out %s", s.url, out);
    int rc = test_run(cmd, NULL, NULL);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    int n = 0;
    char **logl = read_lines(log, &n);
    CHECK_EQ_INT(n, 32);
    CHECK_EQ_INT(count_chains(logl, n, 4, true), 8);
    free_lines(logl, n);
    json_t *res = test_load_json(out);
    json_t *ss = json_object_get(res, "sessions");
    CHECK_EQ_INT(test_num(ss, "conversations"), 8);
    CHECK_EQ_INT(test_num(ss, "completed"), 8);
    json_t *by = json_object_get(ss, "by_turn");
    CHECK_EQ_INT(json_array_size(by), 4);
    double prev_in = 0;
    for (size_t t = 0; t < json_array_size(by); t++) {
        json_t *e = json_array_get(by, t);
        CHECK_EQ_INT(test_num(e, "completed"), 8);
        /* words: 12 system + 30 first, then each turn adds the 5-word answer, "User:", 6 words and "Assistant:" */
        CHECK_NEAR(test_num(e, "mean_input_tokens"), t ? prev_in + 5 + 1 + 6 + 1 : 12 + 1 + 30 + 1, 1e-9);
        prev_in = test_num(e, "mean_input_tokens");
        CHECK(test_num(json_object_get(e, "ttft"), "n") == 8);
    }
    /* the bound: turn t could reuse the previous prompt and its answer */
    CHECK(test_num(json_array_get(by, 3), "hit_rate_bound") > 0.8);
    json_decref(res);
    /* the report shows the conversations by turn */
    char html[600];
    snprintf(html, sizeof html, "%s/sess.html", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "report %s -o %s", out, html);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    char *page = NULL;
    size_t plen = 0;
    FILE *f = fopen(html, "r");
    if (f) { page = malloc(1 << 22); plen = fread(page, 1, (1 << 22) - 1, f); page[plen] = 0; fclose(f); }
    CHECK(page && strstr(page, "<section id=\"cache\">") && strstr(page, "8 conversations: 8 completed"));
    free(page);
}

TEST(workload_session_error_ends_conversation) {
    test_server s;
    char out[512], reqs[512], cmd[2048];
    snprintf(out, sizeof out, "%s/sessf.json", harness_tmpdir());
    snprintf(reqs, sizeof reqs, "%s/sessf.requests.jsonl", harness_tmpdir());
    if (test_serve_start(&s, "--ttft 1ms --itl 1ms --fail-rate 0.25 --seed 5") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    /* two client threads: conversations are dealt out to both, each handled by one */
    snprintf(cmd, sizeof cmd, "bench --url %s --quiet --concurrency 4 --client-threads 2 --dataset sessions:n=12,turns=5,first=10,user=4,out=3 "
             "--out %s --save-requests %s", s.url, out, reqs);
    int rc = test_run(cmd, NULL, NULL);
    test_serve_stop(&s);
    CHECK(rc == 0 || rc == 1);
    json_t *res = test_load_json(out);
    json_t *ss = json_object_get(res, "sessions");
    long conv = (long)test_num(ss, "conversations"), done = (long)test_num(ss, "completed"), err = (long)test_num(ss, "ended_by_error");
    CHECK_EQ_INT(conv, 12);
    CHECK_EQ_INT(done + err + (long)test_num(ss, "cut_by_run_end"), 12);
    CHECK_MSG(err >= 1, "a 25%% fail rate over 12 conversations of 5 turns failed none");
    /* in the per-request file: a failed turn is its conversation's last, and turns run 0, 1, ... */
    int n = 0;
    char **l = read_lines(reqs, &n);
    int last_turn[12], failed_at[12];
    for (int i = 0; i < 12; i++) last_turn[i] = -1, failed_at[i] = -1;
    for (int i = 0; i < n; i++) {
        json_t *r = json_loads(l[i], 0, NULL);
        int sid = (int)test_num(r, "session"), turn = (int)test_num(r, "turn");
        CHECK(sid >= 0 && sid < 12);
        if (sid < 0 || sid >= 12) { json_decref(r); continue; }
        CHECK_MSG(failed_at[sid] < 0, "conversation %d sent turn %d after its turn %d failed", sid, turn, failed_at[sid]);
        CHECK_EQ_INT(turn, last_turn[sid] + 1);
        last_turn[sid] = turn;
        if (strcmp(json_string_value(json_object_get(r, "outcome")), "ok")) failed_at[sid] = turn;
        json_decref(r);
    }
    long requests = 0;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(ss, "per_session"), i, p) {
        const char *end = json_string_value(json_object_get(p, "end"));
        int sid = (int)test_num(p, "session");
        requests += (long)test_num(p, "turns") + !strcmp(end, "error");
        if (!strcmp(end, "error")) CHECK_EQ_INT(failed_at[sid], test_num(p, "turns"));
        else CHECK_EQ_INT(test_num(p, "turns"), 5);
    }
    CHECK_EQ_INT(requests, n);
    free_lines(l, n);
    json_decref(res);
}
