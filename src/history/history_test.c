/* Tests of the history's database on real SQLite files: the schema in step with the columns,
 * recording and reading back, two processes recording at once, a process killed with SIGKILL in
 * the middle of its writes, the migration from the first schema, a newer schema, a damaged file
 * and a file that is not SQLite (both left byte for byte as they were), and the query language. */
#include "harness.h"
#include "history/hist_internal.h"
#include "history/hist_testdata.h"
#include "results/results.h"
#include "metrics/record.h"
#include "common/rng.h"
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char *db_path(const char *name) {
    char *p = NULL;
    if (asprintf(&p, "%s/%s", harness_tmpdir(), name) < 0) return NULL;
    return p;
}

static long long count(history *h, const char *sql) {
    sqlite3_stmt *st;
    long long n = -1;
    if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

TEST(history_schema_has_every_headline_column) {
    char *p = db_path("cols.db"), err[512];
    history *h;
    CHECK_EQ_INT(history_open(p, HISTORY_WRITE, &h, err, sizeof err), 0);
    if (!h) { free(p); return; }
    CHECK_EQ_INT(history_schema_version(h), HISTORY_SCHEMA_VERSION);
    for (size_t i = 0; i < hist_n_cols; i++) {
        char sql[200];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM pragma_table_info('run') WHERE name = '%s'", hist_cols[i]);
        CHECK_MSG(count(h, sql) == 1, "column %s missing", hist_cols[i]);
    }
    /* v2 moved labels, bands and configurations out of the run row */
    CHECK_EQ_INT(count(h, "SELECT count(*) FROM pragma_table_info('run') WHERE name IN ('labels', 'config') OR name LIKE '%\\_lo' ESCAPE '\\'"), 0);
    CHECK_EQ_INT(count(h, "SELECT count(*) FROM pragma_table_info('run')"), 20 + (long long)hist_n_cols);
    CHECK_EQ_INT(count(h, "PRAGMA application_id"), HIST_APPLICATION_ID);
    char jm[32] = "";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h->db, "PRAGMA journal_mode", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        snprintf(jm, sizeof jm, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    CHECK_STR(jm, "wal");
    history_close(h);
    free(p);
}

TEST(history_records_and_reads_back) {
    char *p = db_path("rw.db"), err[512];
    json_t *doc = hist_test_run(20, 1, 200, 4, 7, "random:in=8,out=4");
    const char *labels[] = {"release=v0.9.1", "branch=main"};
    history_record_opts ro = { .labels = labels, .n_labels = 2 };
    int64_t id = 0;
    CHECK_EQ_INT(history_record_to(p, doc, &ro, &id, err, sizeof err), 0);
    CHECK_EQ_INT(id, 1);
    history *h;
    CHECK_EQ_INT(history_open(p, HISTORY_READ, &h, err, sizeof err), 0);
    if (!h) { json_decref(doc); free(p); return; }
    /* the document comes back exactly; the headline columns hold its numbers */
    json_t *back = history_load_doc(h, 1, err, sizeof err);
    CHECK(back && json_equal(back, doc));
    json_decref(back);
    sqlite3_stmt *st;
    CHECK(sqlite3_prepare_v2(h->db, "SELECT mean_ttft_ms, m.lo, m.hi, p99_ttft_ms, completed, model, kind, producer, run.config_hash "
                             "FROM run JOIN run_metric m ON m.name = 'mean_ttft_ms' AND m.run_id = run.id WHERE id = 1", -1, &st, NULL) == SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW) {
        double mean = json_number_value(json_object_get(doc, "mean_ttft_ms"));
        CHECK_NEAR(sqlite3_column_double(st, 0), mean, 1e-9);
        /* a uniform +-1 ms around 20: the mean's band is a few hundredths of a ms wide, around the mean */
        CHECK(sqlite3_column_double(st, 1) < mean && sqlite3_column_double(st, 2) > mean);
        CHECK(sqlite3_column_double(st, 2) - sqlite3_column_double(st, 1) < 0.3);
        CHECK_NEAR(sqlite3_column_double(st, 3), json_number_value(json_object_get(doc, "p99_ttft_ms")), 1e-9);
        CHECK_NEAR(sqlite3_column_double(st, 4), 200, 0);
        CHECK_STR((const char *)sqlite3_column_text(st, 5), "m");
        CHECK_STR((const char *)sqlite3_column_text(st, 6), "results");
        CHECK_STR((const char *)sqlite3_column_text(st, 7), "bench");
        CHECK_EQ_INT(strlen((const char *)sqlite3_column_text(st, 8)), 16);
    } else CHECK_MSG(0, "no row");
    sqlite3_finalize(st);
    char *lt = hist_labels_text(h, 1);
    CHECK_STR(lt, "branch=main, release=v0.9.1");
    free(lt);
    /* list and show print; the same document again is not a second run */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    history_list_opts lo = { .limit = 10 };
    CHECK_EQ_INT(history_list(h, "label:release=v0.9.*", &lo, f, err, sizeof err), 0);
    CHECK_EQ_INT(history_show(h, 1, false, f, err, sizeof err), 0);
    fclose(f);
    CHECK(buf && strstr(buf, "release=v0.9.1") && strstr(buf, "(1 run)") && strstr(buf, "mean_ttft_ms"));
    free(buf);
    bool existed = false;
    CHECK_EQ_INT(history_record(h, doc, NULL, &id, &existed, err, sizeof err), 0);
    CHECK(existed);
    CHECK_EQ_INT(id, 1);
    CHECK_EQ_INT(count(h, "SELECT count(*) FROM run"), 1);
    CHECK_EQ_INT(history_show(h, 2, false, stdout, err, sizeof err), -1);
    CHECK(strstr(err, "no run 2") != NULL);
    /* a document holding credentials (an imported file of an older dsperf): nothing of them is stored */
    static const char secret[] = "sk-proj-abcdefghijklmnopqrstuvwxyz0123";
    char cmdline[256], url[128];
    snprintf(cmdline, sizeof cmdline, "dsperf bench --url http://u:hunter2secret@10.0.0.5:8000 --header 'Authorization: Bearer %s'", secret);
    snprintf(url, sizeof url, "http://u:hunter2secret@10.0.0.5:8000/?api_key=%s", secret);
    json_object_set_new(doc, "command_line", json_string(cmdline));
    json_object_set_new(json_object_get(doc, "config"), "url", json_string(url));
    CHECK_EQ_INT(history_record(h, doc, NULL, &id, &existed, err, sizeof err), 0);
    CHECK_EQ_INT(id, 2);
    json_t *stored = history_load_doc(h, 2, err, sizeof err);
    char *text = stored ? json_dumps(stored, 0) : NULL;
    CHECK(text && !strstr(text, secret) && !strstr(text, "hunter2secret") && strstr(text, "redacted"));
    free(text);
    json_decref(stored);
    CHECK_EQ_INT(count(h, "SELECT count(*) FROM run WHERE id = 2 AND (command LIKE '%abcdefghijklmnop%' OR endpoint LIKE '%hunter2%')"), 0);
    CHECK_EQ_INT(count(h, "SELECT count(*) FROM run WHERE id = 2 AND command LIKE '%redacted%' AND endpoint LIKE '%redacted%'"), 1);
    history_close(h);
    json_decref(doc);
    free(p);
}

/* Records `n` distinct documents (seeds seed0..) into path, opening the database once per run as
 * a command does. Returns the number recorded. */
static int record_many(const char *path, int n, uint64_t seed0, size_t requests) {
    int ok = 0;
    for (int i = 0; i < n; i++) {
        json_t *doc = hist_test_run(20, 2, requests, 8, seed0 + (uint64_t)i, "random:in=8,out=8");
        char err[512];
        int64_t id;
        if (doc && history_record_to(path, doc, NULL, &id, err, sizeof err) == 0) ok++;
        else fprintf(stderr, "record_many: %s\n", err);
        json_decref(doc);
    }
    return ok;
}

TEST(history_two_processes_record_at_once_and_lose_nothing) {
    char *p = db_path("two.db"), err[512];
    CHECK_EQ_INT(history_prepare(p, err, sizeof err), 0);
    enum { PER = 60 };
    pid_t kids[2];
    for (int k = 0; k < 2; k++) {
        kids[k] = fork();
        if (kids[k] == 0) _exit(record_many(p, PER, 1000 + (uint64_t)k * 100000, 300) == PER ? 0 : 1);
    }
    for (int k = 0; k < 2; k++) {
        int st = 0;
        waitpid(kids[k], &st, 0);
        CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer %d failed (status %d)", k, st);
    }
    history *h;
    CHECK_EQ_INT(history_open(p, HISTORY_READ, &h, err, sizeof err), 0);
    if (h) {
        CHECK_EQ_INT(count(h, "SELECT count(*) FROM run"), 2 * PER);
        CHECK_EQ_INT(count(h, "SELECT count(*) FROM run_doc"), 2 * PER);
        CHECK_EQ_INT(count(h, "SELECT count(DISTINCT doc_hash) FROM run"), 2 * PER);
        char rep[256];
        CHECK_EQ_INT(history_integrity(h, rep, sizeof rep), 0);
        history_close(h);
    }
    free(p);
}

TEST(history_kill9_during_writes_leaves_a_consistent_database) {
    char *p = db_path("kill.db"), err[512];
    CHECK_EQ_INT(history_prepare(p, err, sizeof err), 0);
    /* three rounds, killed after different numbers of runs and at different offsets into one */
    long long before = 0;
    for (int round = 0; round < 3; round++) {
        pid_t kid = fork();
        if (kid == 0) {
            /* one large document (20,000 requests) recorded again and again under new command lines:
             * the child's time is then mostly inside history_record's transaction */
            json_t *doc = hist_test_run(20, 2, 20000, 8, 5000000 + (uint64_t)round, "random:in=8,out=8");
            history *w;
            if (history_open(p, HISTORY_WRITE, &w, err, sizeof err) < 0) _exit(1);
            for (long i = 0;; i++) {
                char cmd[64];
                snprintf(cmd, sizeof cmd, "bench round %d run %ld", round, i);
                json_object_set_new(doc, "command_line", json_string(cmd));
                int64_t id;
                if (history_record(w, doc, NULL, &id, NULL, err, sizeof err) < 0) _exit(2);
            }
        }
        history *h = NULL;
        long long n = before;
        for (int wait = 0; wait < 3000 && n < before + 2 + round; wait++) {
            usleep(10000);
            if (history_open(p, HISTORY_READ, &h, err, sizeof err) == 0) { n = count(h, "SELECT count(*) FROM run"); history_close(h); }
        }
        usleep((useconds_t)(round * 7000));
        kill(kid, SIGKILL);
        int st;
        waitpid(kid, &st, 0);
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        /* the next writer recovers the WAL; every run is whole */
        CHECK_EQ_INT(history_open(p, HISTORY_WRITE, &h, err, sizeof err), 0);
        if (!h) break;
        char rep[256];
        CHECK_EQ_INT(history_integrity(h, rep, sizeof rep), 0);
        long long runs = count(h, "SELECT count(*) FROM run");
        CHECK(runs >= before + 2 + round);
        CHECK_EQ_INT(count(h, "SELECT count(*) FROM run_doc"), runs);
        CHECK_EQ_INT(count(h, "SELECT count(*) FROM run_view"), runs);
        CHECK_EQ_INT(count(h, "SELECT count(*) FROM run WHERE mean_ttft_ms IS NULL"), 0);
        CHECK_EQ_INT(count(h, "SELECT count(DISTINCT run_id) FROM run_metric WHERE name = 'p99_ttft_ms'"), runs);
        for (long long id = 1; id <= runs; id++) {
            json_t *d = history_load_doc(h, id, err, sizeof err);
            CHECK_MSG(d != NULL, "run %lld: %s", id, err);
            json_decref(d);
        }
        before = runs;
        history_close(h);
    }
    free(p);
}

/* A database at schema 1, built from the first migration alone, holding one run as that schema
 * stored it (labels as a JSON column). */
static int make_v1(const char *path, const json_t *doc) {
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK) return -1;
    int rc = sqlite3_exec(db, hist_schema_v1, NULL, NULL, NULL);
    char sql[200];
    snprintf(sql, sizeof sql, "PRAGMA user_version = 1; PRAGMA application_id = %d;", HIST_APPLICATION_ID);
    rc |= sqlite3_exec(db, sql, NULL, NULL, NULL);
    rc |= sqlite3_exec(db, "INSERT INTO run (id, recorded_at, run_time, kind, producer, model, config_hash, config, labels, "
                           "doc_hash, mean_ttft_ms) VALUES (7, 1767225600, 1767225600, 'results', 'bench', 'm', "
                           "'00000000000000aa', '{\"kind\":\"results\"}', '{\"release\":\"v0.8.2\",\"team\":\"perf\"}', "
                           "'00000000000000bb', 20.5)", NULL, NULL, NULL);
    char *text = json_dumps(doc, JSON_COMPACT);
    unsigned char *z;
    size_t zl;
    hist_deflate(text, strlen(text), &z, &zl);
    sqlite3_stmt *st;
    const char *ins[] = {"INSERT INTO run_doc (run_id, doc, doc_bytes) VALUES (7, ?, ?)", "INSERT INTO run_view (run_id, view, view_bytes) VALUES (7, ?, ?)"};
    for (int i = 0; i < 2; i++) {
        rc |= sqlite3_prepare_v2(db, ins[i], -1, &st, NULL);
        sqlite3_bind_blob(st, 1, z, (int)zl, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)strlen(text));
        rc |= sqlite3_step(st) == SQLITE_DONE ? 0 : 1;
        sqlite3_finalize(st);
    }
    free(z);
    free(text);
    sqlite3_close(db);
    return rc ? -1 : 0;
}

TEST(history_migrates_a_database_of_the_first_schema) {
    char *p = db_path("v1.db"), err[512];
    json_t *doc = hist_test_run(20, 1, 50, 4, 3, "random:in=8,out=4");
    CHECK_EQ_INT(make_v1(p, doc), 0);
    history *h;
    CHECK_EQ_INT(history_open(p, HISTORY_READ, &h, err, sizeof err), 0);   /* reading migrates a writable file */
    if (!h) { json_decref(doc); free(p); return; }
    CHECK_EQ_INT(history_schema_version(h), 2);
    CHECK_EQ_INT(count(h, "PRAGMA user_version"), 2);
    char *lt = hist_labels_text(h, 7);
    CHECK_STR(lt, "release=v0.8.2, team=perf");
    free(lt);
    /* the v1 metric column and configuration moved to run_metric and config_def */
    CHECK_EQ_INT(count(h, "SELECT count(*) FROM run_metric WHERE name = 'mean_ttft_ms' AND run_id = 7 AND value = 20.5"), 1);
    CHECK_EQ_INT(count(h, "SELECT count(*) FROM run WHERE id = 7 AND mean_ttft_ms = 20.5 AND config_hash = '00000000000000aa'"), 1);
    char *cfg = hist_config_of(h, 7);
    CHECK_STR(cfg, "{\"kind\":\"results\"}");
    free(cfg);
    history_ids ids;
    CHECK_EQ_INT(history_select(h, "label:release=v0.8.*", &ids, err, sizeof err), 0);
    CHECK(ids.n == 1 && ids.ids[0] == 7);
    history_ids_free(&ids);
    json_t *back = history_load_doc(h, 7, err, sizeof err);
    CHECK(back && json_equal(back, doc));
    json_decref(back);
    /* and it takes new runs at schema 2 */
    history_close(h);
    int64_t id;
    CHECK_EQ_INT(history_record_to(p, doc, NULL, &id, err, sizeof err), 0);   /* a different doc_hash than the fake one */
    CHECK_EQ_INT(id, 8);
    json_decref(doc);
    free(p);
}

static char *file_bytes(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, f);
    fclose(f);
    return b;
}

TEST(history_refuses_newer_damaged_and_foreign_files_and_leaves_them_alone) {
    char err[512];
    history *h;
    /* a newer schema */
    char *p = db_path("newer.db");
    sqlite3 *db;
    sqlite3_open(p, &db);
    char sql[128];
    snprintf(sql, sizeof sql, "CREATE TABLE x (a); PRAGMA user_version = 9; PRAGMA application_id = %d;", HIST_APPLICATION_ID);
    sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_close(db);
    CHECK_EQ_INT(history_open(p, HISTORY_WRITE, &h, err, sizeof err), -1);
    CHECK(strstr(err, "newer dsperf") && strstr(err, "schema 9") && !strchr(err, '\n'));
    free(p);
    /* not SQLite at all */
    p = db_path("notes.txt");
    FILE *f = fopen(p, "w");
    fputs("these are my notes, not a database\n", f);
    fclose(f);
    CHECK_EQ_INT(history_open(p, HISTORY_WRITE, &h, err, sizeof err), -1);
    CHECK(strstr(err, "not an SQLite database") != NULL);
    size_t len;
    char *b = file_bytes(p, &len);
    CHECK(b && len == 35 && !memcmp(b, "these are my notes", 18));
    free(b);
    free(p);
    /* SQLite, but someone else's */
    p = db_path("other.db");
    sqlite3_open(p, &db);
    sqlite3_exec(db, "CREATE TABLE invoices (n)", NULL, NULL, NULL);
    sqlite3_close(db);
    CHECK_EQ_INT(history_open(p, HISTORY_WRITE, &h, err, sizeof err), -1);
    CHECK(strstr(err, "not a dsperf history") != NULL);
    free(p);
    /* damaged: a history whose b-tree pages are overwritten in the middle */
    p = db_path("damaged.db");
    CHECK_EQ_INT(record_many(p, 6, 42, 2000), 6);
    size_t n0;
    char *orig = file_bytes(p, &n0);
    int fd = open(p, O_WRONLY);
    char junk[4096];
    memset(junk, 0x5a, sizeof junk);
    for (off_t off = 4096 * 2; off + (off_t)sizeof junk <= (off_t)n0; off += 4096 * 4) pwrite(fd, junk, sizeof junk, off);
    close(fd);
    size_t n1;
    char *damaged = file_bytes(p, &n1);
    CHECK_EQ_INT(history_open(p, HISTORY_WRITE, &h, err, sizeof err), -1);
    CHECK_MSG(strstr(err, "damaged") != NULL, "%s", err);
    CHECK_MSG(strstr(err, "left") || strstr(err, "leaves"), "%s", err);
    CHECK_EQ_INT(history_open(p, HISTORY_READ, &h, err, sizeof err), -1);
    size_t n2;
    char *after = file_bytes(p, &n2);
    CHECK(n1 == n2 && !memcmp(damaged, after, n1));   /* never rewritten */
    CHECK(n0 == n1 && memcmp(orig, damaged, n0) != 0);
    struct stat st;
    char wal[600];
    snprintf(wal, sizeof wal, "%s-wal", p);
    CHECK(stat(wal, &st) != 0 || st.st_size == 0);
    free(orig); free(damaged); free(after);
    free(p);
}

TEST(history_query_terms) {
    char *p = db_path("q.db"), err[512];
    history *h;
    CHECK_EQ_INT(history_open(p, HISTORY_WRITE, &h, err, sizeof err), 0);
    if (!h) { free(p); return; }
    const char *rel[] = {"release=v0.8.0", "release=v0.8.1", "release=v0.9.0", "release=v0.9.1"};
    for (int i = 0; i < 4; i++) {
        json_t *doc = hist_test_run(20 + i, 1, 30, 4, 100 + (uint64_t)i, i < 3 ? "random:in=8,out=4" : "random:in=16,out=4");
        history_record_opts ro = { .labels = &rel[i], .n_labels = 1 };
        int64_t id;
        CHECK_EQ_INT(history_record(h, doc, &ro, &id, NULL, err, sizeof err), 0);
        json_decref(doc);
    }
    struct { const char *q; int n; int64_t first; } cases[] = {
        {"", 4, 1}, {"label:release=v0.8.*", 2, 1}, {"label:release", 4, 1}, {"label:team", 0, 0}, {"last:2", 2, 3},
        {"latest", 1, 4}, {"2..3", 2, 2}, {"id:4", 1, 4}, {"model:m kind:results", 4, 1}, {"model:x*", 0, 0},
        {"since:1d", 4, 1}, {"until:2001-01-01", 0, 0}, {"label:release=v0.9.* last:1", 1, 4}, {"partial:no", 4, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        history_ids ids;
        CHECK_MSG(history_select(h, cases[i].q, &ids, err, sizeof err) == 0, "'%s': %s", cases[i].q, err);
        CHECK_MSG((int)ids.n == cases[i].n, "'%s': %zu runs, want %d", cases[i].q, ids.n, cases[i].n);
        if (ids.n && cases[i].n) CHECK_MSG(ids.ids[0] == cases[i].first, "'%s' starts at %lld", cases[i].q, (long long)ids.ids[0]);
        history_ids_free(&ids);
    }
    const char *bad[] = {"modle:x", "last:0", "since:yesterday", "config:xyz", "partial:maybe", "label:", "5..2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        history_ids ids;
        err[0] = 0;
        CHECK_MSG(history_select(h, bad[i], &ids, err, sizeof err) == -1, "'%s' accepted", bad[i]);
        CHECK(err[0] && !strchr(err, '\n'));
    }
    /* comparable: the newest run (in=16) is alone in its configuration; the note says what differs */
    hist_query *q;
    CHECK_EQ_INT(hist_query_parse("", &q, err, sizeof err), 0);
    size_t n = 0;
    char *note = NULL, ref[17];
    CHECK_EQ_INT(hist_comparable_select(h, q, NULL, &n, &note, ref, err, sizeof err), 0);
    CHECK_EQ_INT(n, 1);
    char *want = hist_config_hash_of(h, 4);
    CHECK_STR(ref, want);
    free(want);
    CHECK(note && strstr(note, "3 matching runs of 1 other configuration left out") &&
          strstr(note, "dataset (random:in=16,out=4, random:in=8,out=4)"));
    free(note);
    hist_query_free(q);
    CHECK_EQ_INT(hist_query_parse("config:any", &q, err, sizeof err), 0);
    CHECK_EQ_INT(hist_comparable_select(h, q, NULL, &n, &note, ref, err, sizeof err), 0);
    CHECK(n == 4 && note && strstr(note, "span 2 configurations"));
    free(note);
    hist_query_free(q);
    /* a label query: only the runs it names count */
    CHECK_EQ_INT(hist_query_parse("label:release=v0.8.*", &q, err, sizeof err), 0);
    CHECK_EQ_INT(hist_comparable_select(h, q, "mean_ttft_ms", &n, &note, ref, err, sizeof err), 0);
    CHECK(n == 2 && note == NULL);
    free(note);
    hist_query_free(q);
    history_close(h);
    free(p);
}
