/* sim_pc — the simulated engine's prefix cache, modelled on vLLM V1's automatic prefix caching
 * (SGLang's radix cache at block granularity behaves alike): every full KV block a request
 * computes — prompt blocks and, once complete, blocks of generated tokens — is cached; finished or
 * preempted requests leave their blocks in one free queue, evictable in least-recently-used order
 * (a request's deepest block first, as vLLM frees a request's blocks in reverse); a new request
 * reuses the longest run of its leading blocks found there, which skips their prefill but still
 * holds their KV blocks.
 *
 * A block can be found again only when its content has an identity: engine_request.block_hashes
 * (a trace's hash ids, or a server's hashes of the prompt and of the tokens it will generate) or
 * prefix_id + prefix_len (a shared system prompt). Blocks past that identity are unique to their
 * request: they stay in the queue as an anonymous run (so they are evicted in vLLM's order) that
 * only the same request can reuse, when it is scheduled again after a preemption (vLLM V1 hashes
 * them with the real token ids, which no other request shares). The engine keeps the free-block
 * count; the cache tells it how many blocks a hit takes out of the free pool and how many a
 * release puts back, and evicts when the pool's truly free part runs short. */
#ifndef DSP_SIM_PC_H
#define DSP_SIM_PC_H
#include "engine/engine.h"
#include <stdint.h>

typedef struct sim_pc sim_pc;

typedef struct {
    uint64_t *hash;       /* chained hash of each full block with an identity (prompt, then output) */
    int32_t *id;          /* cache entry per leading block held by the request (hits, then its own) */
    int32_t cap;          /* allocated length of hash and id */
    int32_t n_hash;       /* blocks with a hash */
    int32_t n_id;         /* leading blocks whose entries the request references */
    int32_t run;          /* its anonymous run left in the cache at its last release (-1 none) */
    uint32_t run_gen;     /* ... the entry's generation then (the entry may have been reused since) */
    int32_t run_from;     /* ... the block the run starts at */
} sim_pc_req;

sim_pc *sim_pc_create(long long capacity_blocks);
void sim_pc_destroy(sim_pc *c);
void sim_pc_req_free(sim_pc_req *r);
/* Computes the request's block hashes (arrays reused across requests): full blocks of the first
 * q->hashed_tokens tokens (prompt_tokens when 0) that block_hashes or prefix_id describe.
 * 0 ok, -1 out of memory. */
int sim_pc_prepare(sim_pc_req *r, const engine_request *q, int block_size);
/* Longest cached run of r's leading blocks, at most max_blocks: its hashed blocks get a reference,
 * and when they reach the start of r's own anonymous run (after a preemption) what is left of that
 * run is taken back. *was_free: how many of them were evictable (they leave the free pool).
 * Returns the blocks hit. */
int32_t sim_pc_match(sim_pc *c, sim_pc_req *r, int32_t max_blocks, int32_t *was_free);
/* r has computed its first full_blocks blocks: those with a hash enter the cache, referenced by r
 * (until a block is found computed twice at once: the first copy is kept, r's later blocks are
 * its own). */
void sim_pc_commit(sim_pc *c, sim_pc_req *r, int32_t full_blocks);
/* Before n blocks leave a free pool of free_blocks: evicts least-recently-used cached blocks until
 * the pool's uncached part covers n. */
void sim_pc_make_room(sim_pc *c, long long free_blocks, int32_t n);
/* r lets go of its blocks (blocks_held in all, the first full_blocks of them full): returns how
 * many return to the free pool (all but the cached ones another request still references). Its
 * full blocks stay cached: hashed ones findable by anyone, the rest as r's anonymous run. */
long long sim_pc_release(sim_pc *c, sim_pc_req *r, int32_t blocks_held, int32_t full_blocks);
/* Cached blocks currently evictable (in the free pool but holding KV). */
long long sim_pc_evictable(const sim_pc *c);
#endif
