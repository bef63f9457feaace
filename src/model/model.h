/* model — the model and hardware catalogs: DeepSeek architectures (built in, or read from a
 * Hugging Face config.json), parameter counts derived from the architecture, KV-cache bytes per
 * token, and the GPUs' memory, bandwidth, FLOPS and link bandwidth. Everything the cost model and
 * the calculators know about "what is served on what" comes from here. */
#ifndef DSP_MODEL_H
#define DSP_MODEL_H
#include <stddef.h>
#include <stdio.h>
#include <jansson.h>

/* DT_FP4: NVFP4 (4-bit values + fp8 scale per 16: 4.5 bits); DT_Q4: GGUF Q4_0 (4.5 bits);
 * DT_MXFP4: OCP MXFP4 (4-bit values + an 8-bit power-of-two scale per 32: 4.25 bits). */
typedef enum { DT_BF16, DT_FP16, DT_FP8, DT_INT8, DT_INT4, DT_FP4, DT_Q4, DT_MXFP4, DT_COUNT } model_dtype;

double model_dtype_bytes(model_dtype d);         /* 2, 2, 1, 1, 0.5, 0.5625, 0.5625 */
const char *model_dtype_name(model_dtype d);     /* "bf16", "fp16", "fp8", "int8", "int4", "fp4", "q4" */
/* Parses a dtype name ("bf16", "bfloat16", "fp16", "half", "fp8", "fp8_e4m3", "int8", "int4",
 * "fp4"/"nvfp4"/"mxfp4", "q4"/"q4_0"/"q4_k_m";
 * "auto" gives dflt). 0 ok, -1 unknown. */
int model_dtype_parse(const char *s, model_dtype dflt, model_dtype *out);

/* The architecture, with the config.json field names in comments. */
typedef struct {
    char name[64];
    int hidden;             /* hidden_size */
    int layers;             /* num_hidden_layers (MTP layers not included) */
    int heads;              /* num_attention_heads */
    int kv_heads;           /* num_key_value_heads (MHA/GQA); MLA stores one latent "head" */
    int head_dim;           /* MHA/GQA head dimension (head_dim, else hidden / heads) */
    int vocab;              /* vocab_size */
    int tie_embeddings;     /* tie_word_embeddings */
    int max_position;       /* max_position_embeddings */
    /* MLA (kv_lora_rank > 0) */
    int q_lora_rank;        /* 0: plain q_proj (V2-Lite) */
    int kv_lora_rank;
    int qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
    /* FFN */
    int intermediate;       /* intermediate_size of dense layers */
    int n_routed_experts;   /* 0: dense model */
    int n_shared_experts;
    int top_k;              /* num_experts_per_tok */
    int moe_intermediate;   /* moe_intermediate_size */
    int first_k_dense;      /* first_k_dense_replace */
    int moe_layer_freq;
    int mtp_layers;         /* num_nextn_predict_layers (excluded from the totals) */
    model_dtype native_dtype; /* dtype of the released weights ("auto") */
    double published_total_b, published_active_b; /* for the catalog listing; 0 unknown */
} model_arch;

/* Parameter counts (in parameters, not bytes), derived from the architecture the way the HF
 * checkpoint stores them: embed_tokens, per layer input/post-attention RMSNorms, attention (MLA:
 * q_a_proj + q_a_layernorm + q_b_proj or q_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj,
 * o_proj; MHA/GQA: q, k, v, o), dense MLP (gate, up, down) or MoE (routed experts, shared experts,
 * router gate), final norm, lm_head. No biases (DeepSeek has none). V3's MTP module is counted
 * apart (mtp) and excluded from total: the published 671B excludes it.
 * active = parameters a token goes through in matmuls: total minus the embedding table (a lookup,
 * not a matmul) minus the routed experts it is not routed to. */
typedef struct {
    double embed, lm_head, final_norm;
    double attn_per_layer;          /* incl. the two per-layer RMSNorms */
    double dense_mlp_per_layer;
    double expert;                  /* one routed expert */
    double shared_per_moe_layer;    /* all shared experts of one MoE layer */
    double gate_per_moe_layer;      /* the router */
    int n_dense_layers, n_moe_layers;
    double total, active;
    double routed_total;            /* all routed experts, all layers */
    double nonexpert;               /* total - routed experts (read every step: attention, dense, shared, head, embed) */
    double mtp;                     /* MTP module(s) as the HF checkpoint stores them (own embed/head copies) */
} model_params;

/* Model lookup by name ("deepseek-v3", "DeepSeek-R1", "deepseek-ai/DeepSeek-V2-Lite-Chat", "v2-lite",
 * "deepseek-llm-67b-chat", ...). NULL when unknown. */
const model_arch *model_find(const char *name);
/* Catalog iteration: i-th built-in model, NULL past the end. */
const model_arch *model_catalog(size_t i);
/* Reads a Hugging Face config.json. 0 ok, -1 with a one-line err (missing file, bad JSON,
 * missing hidden_size/num_hidden_layers/num_attention_heads/vocab_size). */
int model_load_hf_config(const char *path, model_arch *out, char *err, size_t errlen);
/* The same from a parsed config object (what names it in messages; name when it has no
 * _name_or_path). */
int model_arch_from_hf_json(const json_t *root, const char *what, const char *name, model_arch *out, char *err,
                            size_t errlen);
/* The architecture in Hugging Face config.json names: reads back through model_arch_from_hf_json. */
json_t *model_arch_to_hf_json(const model_arch *m);

int model_is_mla(const model_arch *m);
int model_is_moe(const model_arch *m);
/* Layer i (0-based) is an MoE layer. */
int model_layer_is_moe(const model_arch *m, int i);
void model_count_params(const model_arch *m, model_params *out);

/* KV-cache bytes per token held by ONE GPU of a tp-way tensor-parallel instance: MLA stores
 * kv_lora_rank + qk_rope_head_dim values per layer, replicated on each rank; MHA/GQA stores
 * 2 x kv_heads x head_dim per layer, kv heads split by tp (at least one per rank). */
double model_kv_bytes_per_token(const model_arch *m, model_dtype kv, int tp);

/* Hardware (src/model/hw.c). FLOPS are dense (no sparsity), per GPU, from the vendors' datasheets.
 * fp8_flops 0 = no fp8 tensor cores (fp8 weights are upcast and run at bf16 rate); fp4_flops 0 = no
 * fp4 tensor cores. link_bytes_per_s is the GPU-to-GPU bandwidth as marketed (NVLink/xGMI
 * aggregate, both directions; PCIe: both directions); nic_bytes_per_s the scale-out network per
 * GPU, one direction (400 Gb/s = 50 GB/s); domain_gpus how many GPUs share the fast link (8 in an
 * HGX node, 72 in a GB200 NVL72 rack, 1 for a PCIe card). */
typedef struct {
    char name[32];
    char descr[64];
    double mem_bytes;          /* total device memory as the driver reports it */
    double hbm_bytes_per_s;
    double bf16_flops, fp8_flops, int8_ops;
    double link_bytes_per_s;
    char link_name[24];
    double fp4_flops;
    double nic_bytes_per_s;
    int domain_gpus;
    int pcie;                  /* 1: GPUs talk over PCIe (no NVLink) */
    /* the GPU's architecture: "hopper" (sm90: WGMMA, fp8 without block-scaled MMA, so kernels
     * written for it apply), "blackwell", "blackwell-geforce", "ampere", "ada", "cdna3" (MI300X,
     * MI325X: fp8 MFMA without block scales), "cdna4"; what an engine's kernels are built for */
    char arch[20];
    /* the share of the datasheet's matmul peak a large tuned GEMM reaches, relative to the H200's
     * (0.80 bf16, 0.73 fp8: cost_factors.compute_eff): a GPU whose clock falls far below its boost
     * under dense MFMA work reaches less; 0 = the same as the H200 (not published otherwise) */
    double gemm_rate_x;
} hw_gpu;

const hw_gpu *hw_find(const char *name);
int hw_arch_is(const hw_gpu *g, const char *arch);   /* g's architecture is arch */   /* "h200", "H100", "a100-80g", "mi300x", "b200", ... */
const hw_gpu *hw_catalog(size_t i);
/* Peak matmul rate for weights stored in dtype d: fp8/fp4/int8 tensor cores where the GPU has them
 * (GGUF q4 runs as int8 MMQ), else bf16. */
double hw_matmul_flops(const hw_gpu *g, model_dtype d);
/* The GPU names, comma-separated (for error messages and --help). */
const char *hw_names(void);
void hw_print_catalog(FILE *f);

/* Prints both catalogs as tables (plan --list). */
void model_print_catalogs(FILE *f);
#endif
