/* sim_pc — the simulated engine's prefix cache (vLLM's automatic prefix caching, SGLang's radix
 * cache at block granularity): every full KV block of a prompt gets a chained hash (its content id
 * and the hash of the block before it); finished or preempted requests leave their blocks in the
 * cache, evictable in least-recently-used order; a new request reuses the longest run of its
 * leading blocks found there, which skips their prefill but still holds their KV blocks.
 *
 * A request's identity comes from engine_request: block_hashes (trace hash ids, each covering
 * hash_block_tokens tokens) or prefix_id + prefix_len (a shared system prompt). Requests without
 * either are looked up too (and miss). The engine keeps the free-block count; the cache tells it
 * how many blocks a hit takes out of the free pool and how many a release puts back, and evicts
 * when the pool's truly free part runs short. */
#ifndef DSP_SIM_PC_H
#define DSP_SIM_PC_H
#include "engine/engine.h"
#include <stdint.h>

typedef struct sim_pc sim_pc;

typedef struct {
    uint64_t *hash;       /* chained hash of each full prompt block with an identity */
    int32_t *id;          /* cache entry per leading block held by the request (hits, then its own) */
    int32_t cap;          /* allocated length of hash and id */
    int32_t n_hash;       /* blocks with a hash */
    int32_t n_id;         /* leading blocks whose entries the request references */
} sim_pc_req;

sim_pc *sim_pc_create(long long capacity_blocks);
void sim_pc_destroy(sim_pc *c);
void sim_pc_req_free(sim_pc_req *r);
/* Computes the request's block hashes (arrays reused across requests). 0 ok, -1 out of memory. */
int sim_pc_prepare(sim_pc_req *r, const engine_request *q, int block_size);
/* Longest cached run of r's leading blocks, at most max_blocks: each gets a reference. *was_free:
 * how many of them were evictable (they leave the free pool). Returns the blocks hit. */
int32_t sim_pc_match(sim_pc *c, sim_pc_req *r, int32_t max_blocks, int32_t *was_free);
/* r has computed its first full_blocks blocks: those with a hash enter the cache, referenced by r. */
void sim_pc_commit(sim_pc *c, sim_pc_req *r, int32_t full_blocks);
/* Before n blocks leave a free pool of free_blocks: evicts least-recently-used cached blocks until
 * the pool's uncached part covers n. */
void sim_pc_make_room(sim_pc *c, long long free_blocks, int32_t n);
/* r lets go of its blocks (blocks_held in all): returns how many return to the free pool (its
 * uncached blocks, and cached ones no other request references). */
long long sim_pc_release(sim_pc *c, sim_pc_req *r, int32_t blocks_held);
/* Cached blocks currently evictable (in the free pool but holding KV). */
long long sim_pc_evictable(const sim_pc *c);
#endif
