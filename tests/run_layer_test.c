/* run_layer_test — the layering the code keeps (issue 29): the CLI parses, calls the run layer
 * (src/run) and prints; it does not call the client, the load runner, the engine, a multi-host
 * job's lifecycle (src/dist), the monitor's probe loop, the telemetry sampler, drift's comparison
 * or tune's rendering of its configurations itself, no command calls another through an argv or a
 * process of dsperf, no result comes back through a global pointer, and includes point down: only
 * the CLI (and main.c) includes cli/, only the CLI and main.c include run/. Reads the sources, so
 * it runs from the repository root as every test. */
#include "harness.h"
#include <ctype.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The file's text with comments and string/char literals blanked (so a comment that names a
 * function is no call). NULL when it cannot be read. */
static char *code_of(const char *path, bool keep_strings) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) { fclose(f); free(s); return NULL; }
    fclose(f);
    s[n] = 0;
    enum { CODE, LINE, BLOCK, STR, CHR } st = CODE;
    for (long i = 0; i < n; i++) {
        char c = s[i], d = i + 1 < n ? s[i + 1] : 0;
        switch (st) {
        case CODE:
            if (c == '/' && d == '/') { st = LINE; s[i] = ' '; }
            else if (c == '/' && d == '*') { st = BLOCK; s[i] = ' '; s[++i] = ' '; }
            else if (c == '"') st = STR;
            else if (c == '\'') st = CHR;
            break;
        case LINE: if (c == '\n') st = CODE; else s[i] = ' '; break;
        case BLOCK:
            if (c == '*' && d == '/') { st = CODE; s[i] = ' '; s[++i] = ' '; }
            else if (c != '\n') s[i] = ' ';
            break;
        case STR: case CHR:
            if (c == '\\') { if (!keep_strings) { s[i] = ' '; if (i + 1 < n) s[++i] = ' '; } else i++; }
            else if (c == (st == STR ? '"' : '\'')) st = CODE;
            else if (!keep_strings && c != '\n') s[i] = ' ';
            break;
        }
    }
    return s;
}

/* Whether code calls name: "name" as a whole word followed by '('. */
static bool calls(const char *code, const char *name) {
    size_t len = strlen(name);
    for (const char *p = strstr(code, name); p; p = strstr(p + 1, name)) {
        if (p > code && (isalnum((unsigned char)p[-1]) || p[-1] == '_')) continue;
        const char *q = p + len;
        if (isalnum((unsigned char)*q) || *q == '_') continue;
        while (*q == ' ' || *q == '\t') q++;
        if (*q == '(') return true;
    }
    return false;
}

typedef struct { char **v; size_t n, cap; } names;
static void add_name(names *ns, const char *s, size_t len) {
    for (size_t i = 0; i < ns->n; i++) if (strlen(ns->v[i]) == len && !strncmp(ns->v[i], s, len)) return;
    if (ns->n == ns->cap) { ns->cap = ns->cap ? 2 * ns->cap : 64; ns->v = realloc(ns->v, ns->cap * sizeof *ns->v); }
    ns->v[ns->n++] = strndup(s, len);
}

static void drop_name(names *ns, const char *s) {
    for (size_t i = 0; i < ns->n; i++)
        if (!strcmp(ns->v[i], s)) { free(ns->v[i]); ns->v[i] = ns->v[--ns->n]; return; }
}

/* The functions a header declares: at the start of a line (not a typedef, not a macro), the
 * identifier just before the first '('. */
static void declared_functions(const char *header, names *ns) {
    char *code = code_of(header, false);
    CHECK_MSG(code != NULL, "cannot read %s (run the tests from the repository root)", header);
    if (!code) return;
    for (char *line = code; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (!isalpha((unsigned char)*line) || !strncmp(line, "typedef", 7) || !strncmp(line, "struct", 6) ||
            !strncmp(line, "enum", 4) || !strncmp(line, "extern", 6))
            continue;
        char *paren = strchr(line, '('), *nl = strchr(line, '\n');
        if (!paren || (nl && paren > nl)) continue;
        char *e = paren;
        while (e > line && e[-1] == ' ') e--;
        char *b = e;
        while (b > line && (isalnum((unsigned char)b[-1]) || b[-1] == '_')) b--;
        if (e > b && b[0] != '*') add_name(ns, b, (size_t)(e - b));
    }
    free(code);
}

/* src/DIR's .c and .h files (tests left out), each as "src/DIR/NAME". */
static size_t sources(const char *dir, char out[][600], size_t cap) {
    char path[300];
    snprintf(path, sizeof path, "src/%s", dir);
    DIR *dp = opendir(path);
    CHECK_MSG(dp != NULL, "no folder %s (run the tests from the repository root)", path);
    if (!dp) return 0;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(dp)) && n < cap) {
        size_t len = strlen(de->d_name);
        if (len < 3 || (strcmp(de->d_name + len - 2, ".c") && strcmp(de->d_name + len - 2, ".h"))) continue;
        if (len > 7 && !strcmp(de->d_name + len - 7, "_test.c")) continue;
        snprintf(out[n++], 600, "src/%s/%s", dir, de->d_name);
    }
    closedir(dp);
    return n;
}

static char files[128][600];

TEST(cli_calls_no_client_runner_or_engine) {
    names ns = { 0 };
    static const char *const headers[] = {
        "src/client/client.h", "src/load/runner.h", "src/engine/engine.h", "src/engine/sim_run.h",
        "src/engine/sim_calibrate.h", "src/engine/sim_validate.h", "src/server/server.h",
        /* a multi-host job's lifecycle is the run layer's too (run/job.h), queries included: the
         * CLI needs none of them (rank 0's quiet followers, the job's size are run/job.h's) */
        "src/dist/dist.h", "src/dist/mpi_load.h",
        /* monitor's probe loop and exporter (run/monitor.h), the telemetry sampler that gpu
         * --record runs on its own (run/gpu_record.h) */
        "src/monitor/monitor.h", "src/telemetry/telemetry.h",
    };
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) declared_functions(headers[i], &ns);
    /* --gpu-ids is parsed where the other options are (bench's, gpu's): a parser, not the sampler */
    drop_name(&ns, "telemetry_parse_gpu_list");
    /* the engines' constructors live beside their option setters, which the CLI's parsers use */
    add_name(&ns, "engine_sim_create", strlen("engine_sim_create"));
    add_name(&ns, "engine_fixed_create", strlen("engine_fixed_create"));
    /* drift's and tune's headers also hold what the CLI rightly calls (their option parsers, the
     * table printers, a saved document loaded): only the run is named. drift's comparison and
     * gate are run/drift.h's; tune's configurations rendered for --dry-run are run/tune.h's. */
    static const char *const runs[] = { "drift_run_all", "drift_run_free", "drift_doc_build", "drift_gate",
                                        "tune_template_render", "tune_grid_label" };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) add_name(&ns, runs[i], strlen(runs[i]));
    /* the check itself would pass on nothing: these are in the list */
    bool seen_preflight = false, seen_run = false, seen_sim = false, seen_join = false, seen_launched = false, seen_mpi = false;
    bool seen_monitor = false, seen_telemetry = false, seen_drift = false, seen_render = false, seen_gpu_list = false;
    for (size_t i = 0; i < ns.n; i++) {
        seen_preflight |= !strcmp(ns.v[i], "client_preflight");
        seen_run |= !strcmp(ns.v[i], "load_run");
        seen_sim |= !strcmp(ns.v[i], "sim_run");
        seen_join |= !strcmp(ns.v[i], "dist_join");
        seen_launched |= !strcmp(ns.v[i], "dist_launched");
        seen_mpi |= !strcmp(ns.v[i], "mpi_api_load");
        seen_monitor |= !strcmp(ns.v[i], "monitor_run");
        seen_telemetry |= !strcmp(ns.v[i], "telemetry_start");
        seen_drift |= !strcmp(ns.v[i], "drift_run_all");
        seen_render |= !strcmp(ns.v[i], "tune_template_render");
        seen_gpu_list |= !strcmp(ns.v[i], "telemetry_parse_gpu_list");
    }
    CHECK(seen_preflight && seen_run && seen_sim);
    CHECK(seen_join && seen_launched && seen_mpi);
    CHECK(seen_monitor && seen_telemetry && seen_drift && seen_render && !seen_gpu_list);
    CHECK(ns.n > 20);
    size_t n = sources("cli", files, 128);
    CHECK(n > 20);
    for (size_t f = 0; f < n; f++) {
        char *code = code_of(files[f], false);
        CHECK_MSG(code != NULL, "cannot read %s", files[f]);
        if (!code) continue;
        for (size_t i = 0; i < ns.n; i++)
            CHECK_MSG(!calls(code, ns.v[i]), "%s calls %s(): orchestration belongs in src/run (the CLI parses, calls "
                      "the run layer and prints)", files[f], ns.v[i]);
        free(code);
    }
    for (size_t i = 0; i < ns.n; i++) free(ns.v[i]);
    free(ns.v);
}

/* No command runs another: no cmd_X() call outside its own definition and main.c's table, no
 * process of dsperf itself, no result handed back through a global pointer. */
TEST(commands_do_not_reenter_commands) {
    static const char *const cmds[] = { "cmd_bench", "cmd_sweep", "cmd_serve", "cmd_sim", "cmd_plan", "cmd_diagnose",
        "cmd_report", "cmd_compare", "cmd_tune", "cmd_gpu", "cmd_monitor", "cmd_tokenize", "cmd_env", "cmd_trace",
        "cmd_drift", "cmd_history" };
    static const char *const dirs[] = { "cli", "run" };
    for (size_t d = 0; d < 2; d++) {
        size_t n = sources(dirs[d], files, 128);
        for (size_t f = 0; f < n; f++) {
            /* headers declare the commands; a call is in a .c file */
            bool header = files[f][strlen(files[f]) - 1] == 'h';
            char *code = code_of(files[f], false), *text = code_of(files[f], true);
            if (!code || !text) { free(code); free(text); CHECK_MSG(0, "cannot read %s", files[f]); continue; }
            for (size_t c = 0; !header && c < sizeof cmds / sizeof cmds[0]; c++) {
                char own[64], def[80];
                snprintf(own, sizeof own, "src/cli/%s.c", cmds[c]);
                snprintf(def, sizeof def, "int %s(int argc", cmds[c]);
                bool defined_here = !strcmp(files[f], own) && strstr(code, def);
                if (defined_here) {
                    /* its definition is its one mention followed by '(' */
                    const char *p = strstr(code, def) + strlen(def);
                    CHECK_MSG(!calls(p, cmds[c]), "%s calls itself through %s()", files[f], cmds[c]);
                } else {
                    CHECK_MSG(!calls(code, cmds[c]), "%s calls %s(): commands share the run layer, not each other's argv",
                              files[f], cmds[c]);
                }
            }
            CHECK_MSG(!strstr(text, "/proc/self/exe"), "%s runs dsperf's own binary: call the run layer in-process", files[f]);
            CHECK_MSG(!strstr(code, "extern json_t"), "%s hands a result through a global pointer: return it", files[f]);
            free(code);
            free(text);
        }
    }
}

/* Includes point down: cli/ is the top (only main.c and the CLI include it), run/ under it. */
TEST(module_edges_point_down) {
    DIR *dp = opendir("src");
    CHECK_MSG(dp != NULL, "no folder src (run the tests from the repository root)");
    if (!dp) return;
    struct dirent *de;
    size_t checked = 0;
    while ((de = readdir(dp))) {
        if (de->d_name[0] == '.' || strchr(de->d_name, '.')) continue;
        size_t n = sources(de->d_name, files, 128);
        bool cli = !strcmp(de->d_name, "cli"), run = !strcmp(de->d_name, "run");
        for (size_t f = 0; f < n; f++) {
            char *text = code_of(files[f], true);
            if (!text) continue;
            checked++;
            if (!cli) CHECK_MSG(!strstr(text, "#include \"cli/"), "%s includes a cli/ header: the CLI is the top layer", files[f]);
            if (!cli && !run) CHECK_MSG(!strstr(text, "#include \"run/"), "%s includes a run/ header: the run layer sits "
                                        "under the CLI only", files[f]);
            free(text);
        }
    }
    closedir(dp);
    CHECK(checked > 100);
}
