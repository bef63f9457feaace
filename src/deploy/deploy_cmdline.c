/* deploy_cmdline — what llama-server was told on its command line (telemetry.host.numa.server.cmdline,
 * recorded from /proc/PID/cmdline when a run gives --server-pid): the settings its HTTP API does not
 * report (-t, -b, -ub, -ctk, -ngl; over several GPUs -sm and -ts) and, where /props was silent, -np and the
 * context per slot. A flag not on the command line is this llama.cpp version's default where that is
 * a fixed value (-b 2048, -ub 512, f16 KV, -sm layer); the default thread count depends on the host,
 * so it stays unknown, and the default tensor split follows each GPU's free memory at load. */
#include "deploy/deploy_int.h"
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value after flag `a` (or `--long`, or `--long=V`) at argv[i]; NULL when argv[i] is not it. */
static const char *flag_value(const json_t *argv, size_t i, const char *shrt, const char *lng) {
    const char *a = json_string_value(json_array_get(argv, i));
    if (!a) return NULL;
    size_t ll = lng ? strlen(lng) : 0;
    if (lng && !strncmp(a, lng, ll) && a[ll] == '=') return a + ll + 1;
    if ((shrt && !strcmp(a, shrt)) || (lng && !strcmp(a, lng))) return json_string_value(json_array_get(argv, i + 1));
    return NULL;
}

static int positive_int(const char *v) {
    if (!v) return 0;
    char *end;
    long n = strtol(v, &end, 10);
    return *end == 0 && n > 0 && n < (1L << 30) ? (int)n : 0;
}

/* llama.cpp's cache type names onto the dtypes the cost model knows (q8_0 is 8.5 bits: int8's width). */
static int kv_dtype_of(const char *v, model_dtype *out) {
    if (!v) return -1;
    if (!strcmp(v, "f16")) *out = DT_FP16;
    else if (!strcmp(v, "bf16")) *out = DT_BF16;
    else if (!strcmp(v, "q8_0")) *out = DT_INT8;
    else if (!strcmp(v, "q4_0") || !strcmp(v, "q4_1")) *out = DT_Q4;
    else return -1;
    return 0;
}

void deploy_from_cmdline(deploy *d, const json_t *argv) {
    const char *prog = json_string_value(json_array_get(argv, 0));
    if (!prog) return;
    const char *base = strrchr(prog, '/');
    base = base ? base + 1 : prog;
    if (strncmp(base, "llama-server", 12) != 0) return;   /* only llama-server's flags are known here */
    int threads = 0, batch = 0, ubatch = 0, slots = 0, ctx = 0, ngl = -1;
    bool ngl_given = false;
    const char *ctk = NULL, *sm = NULL, *ts = NULL;
    for (size_t i = 1; i < json_array_size(argv); i++) {
        const char *v;
        if ((v = flag_value(argv, i, "-t", "--threads"))) threads = positive_int(v);
        else if ((v = flag_value(argv, i, "-b", "--batch-size"))) batch = positive_int(v);
        else if ((v = flag_value(argv, i, "-ub", "--ubatch-size"))) ubatch = positive_int(v);
        else if ((v = flag_value(argv, i, "-np", "--parallel"))) slots = positive_int(v);
        else if ((v = flag_value(argv, i, "-c", "--ctx-size"))) ctx = positive_int(v);
        else if ((v = flag_value(argv, i, "-ctk", "--cache-type-k"))) ctk = v;
        else if ((v = flag_value(argv, i, "-sm", "--split-mode"))) sm = v;
        else if ((v = flag_value(argv, i, "-ts", "--tensor-split"))) ts = v;
        else if ((v = flag_value(argv, i, "-ngl", "--gpu-layers")) || (v = flag_value(argv, i, NULL, "--n-gpu-layers")))
            ngl_given = true, ngl = !strcmp(v, "0") ? 0 : positive_int(v) ? positive_int(v) : -1;
    }
    /* layers on the GPUs: c392e50's llama_model_default_params puts none there unless told (-ngl);
     * a value that is not a count (a later build's "auto" or "all") stays unknown, and so does the
     * default of a build past the era this project has read (the GPU memory held still tells) */
    long build = deploy_llamacpp_build(d);
    if (ngl >= 0) {
        d->gpu_layers = ngl;
        deploy_set(&d->gpu_layers_s, false, "llama-server -ngl %d (the server's command line)", ngl);
    } else if (!ngl_given && build < LLAMACPP_MOE_REWORK_BUILD) {
        d->gpu_layers = 0;
        deploy_set(&d->gpu_layers_s, false, "llama-server's default -ngl 0 (no -ngl on its command line)");
    }
    if (threads) {
        d->cpu_threads = threads;
        deploy_set(&d->cpu_threads_s, false, "llama-server -t %d (the server's command line)", threads);
    }
    /* llama.cpp's n_batch is the most tokens one step takes (vLLM's max_num_batched_tokens); the
     * physical batch n_ubatch is how many go through one forward pass */
    d->max_num_batched_tokens = batch ? batch : 2048;
    deploy_set(&d->max_num_batched_tokens_s, false, batch ? "llama-server -b %d (the server's command line)"
               : "llama-server's default -b %d (not on its command line)", d->max_num_batched_tokens);
    d->ubatch_tokens = ubatch ? ubatch : 512;
    deploy_set(&d->ubatch_tokens_s, false, ubatch ? "llama-server -ub %d (the server's command line)"
               : "llama-server's default -ub %d (not on its command line)", d->ubatch_tokens);
    if (d->ubatch_tokens > d->max_num_batched_tokens) d->ubatch_tokens = d->max_num_batched_tokens;   /* as llama.cpp clamps it */
    model_dtype kv;
    if (ctk && kv_dtype_of(ctk, &kv) == 0) {
        d->kv_dtype = kv;
        deploy_set(&d->kv_dtype_s, false, "llama-server -ctk %s (the server's command line)", ctk);
    } else if (!ctk && (!d->kv_dtype_s.known || d->kv_dtype_s.assumed)) {
        d->kv_dtype = DT_FP16;
        deploy_set(&d->kv_dtype_s, false, "llama-server's default -ctk f16 (not on its command line)");
    }
    /* how the layers go over several GPUs (common/arg.cpp: -sm none|layer|row, default layer) */
    if (sm && (!strcmp(sm, "none") || !strcmp(sm, "layer") || !strcmp(sm, "row"))) {
        snprintf(d->split_mode, sizeof d->split_mode, "%s", sm);
        deploy_set(&d->split_mode_s, false, "llama-server -sm %s (the server's command line)", sm);
    } else if (!sm) {
        snprintf(d->split_mode, sizeof d->split_mode, "layer");
        deploy_set(&d->split_mode_s, false, "llama-server's default -sm layer (not on its command line)");
    }
    if (ts && *ts && strlen(ts) < sizeof d->tensor_split) {
        snprintf(d->tensor_split, sizeof d->tensor_split, "%s", ts);
        deploy_set(&d->tensor_split_s, false, "llama-server -ts %s (the server's command line)", ts);
    }
    /* /props states these itself; the command line only fills what it left unknown */
    if (slots && !d->max_num_seqs_s.known) {
        d->max_num_seqs = slots;
        deploy_set(&d->max_num_seqs_s, false, "llama-server -np %d (the server's command line)", slots);
    }
    int per_slot = ctx / (slots ? slots : 1);
    if (per_slot > 0 && !d->context_per_seq_s.known) {
        d->context_per_seq = per_slot;
        deploy_set(&d->context_per_seq_s, false, "llama-server -c %d / -np %d (the server's command line)", ctx, slots ? slots : 1);
    }
}
