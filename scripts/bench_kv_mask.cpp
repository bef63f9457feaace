/* bench_kv_mask.cpp: llama.cpp's KV mask loop (c392e50 src/llama-context.cpp, llama_set_inputs)
 * replicated, to time what the simulator's ggml_mask_s and ggml_mask_row_s stand for. Cells hold
 * a position and a std::set of sequence ids (llama_kv_cell); for each token of a ubatch the loop
 * looks up every cell of the window in its set and stores 0 or -inf, then stores -inf over the
 * padding rows up to a multiple of 32 (GGML_KQ_MASK_PAD). Timed twice: with the cells' sets
 * allocated in cell order, and after 2,000 requests of REQ tokens went through the slots (each
 * request frees its slot's cells and refills them, with other heap traffic between, as a server's
 * strings and vectors make), which scatters the sets' nodes over the heap.
 *
 *   c++ -O2 scripts/bench_kv_mask.cpp -o /tmp/bench_kv_mask && /tmp/bench_kv_mask [WINDOW [TOKENS]]
 */
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <vector>

namespace {
const int REQ = 384;   /* cells a request leaves in its slot: 256 in + 128 out, the sweeps' shape */

struct cell {
    int pos = -1;
    std::set<int> seq_id;
};

/* seconds per ubatch of `tokens` against the first `window` cells, for a sequence that holds none */
double time_mask(const std::vector<cell> &cells, int window, int tokens, int reps) {
    const int padded = (tokens + 31) / 32 * 32, seq = -1;
    std::vector<float> mask((size_t)padded * window);
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; r++) {
        for (int j = 0; j < tokens; j++) {
            const int pos = 1 << 20;
            for (int i = 0; i < window; i++) {
                bool hidden = cells[i].seq_id.find(seq) == cells[i].seq_id.end() || cells[i].pos > pos;
                mask[(size_t)j * window + i] = hidden ? -INFINITY : 0.0f;
            }
        }
        for (int j = tokens; j < padded; j++)
            for (int i = 0; i < window; i++) mask[(size_t)j * window + i] = -INFINITY;
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
    volatile float keep = mask[(size_t)window / 2];
    (void)keep;
    return s;
}
}   // namespace

int main(int argc, char **argv) {
    const int window = argc > 1 ? atoi(argv[1]) : 7744, tokens = argc > 2 ? atoi(argv[2]) : 257;
    if (window < REQ || tokens < 1) {
        fprintf(stderr, "usage: bench_kv_mask [WINDOW >= %d [TOKENS >= 1]]\n", REQ);
        return 2;
    }
    std::vector<cell> cells(window);
    for (int i = 0; i < window; i++) {
        cells[i].pos = i % REQ;
        cells[i].seq_id.insert(i / REQ);
    }
    const double ordered = time_mask(cells, window, tokens, 5);
    std::mt19937 rng(1);
    std::vector<std::vector<char>> other;
    const int slots = window / REQ;
    for (int r = 0; r < 2000; r++) {
        int s = r % slots;
        for (int i = s * REQ; i < (s + 1) * REQ; i++) cells[i].seq_id.clear();
        for (int i = s * REQ; i < (s + 1) * REQ; i++) {
            cells[i].seq_id.insert(s);
            cells[i].pos = i - s * REQ;
            if (rng() % 4 == 0) other.emplace_back(16 + rng() % 96);
            if (other.size() > 4096) other.erase(other.begin() + rng() % other.size());
        }
    }
    const double churned = time_mask(cells, window, tokens, 5);
    const double per = 1e9 / ((double)window * tokens);
    printf("window %d cells, %d tokens: in cell order %.2f ms (%.2f ns a token and cell), after churn %.2f ms (%.2f ns)\n", window, tokens,
           ordered * 1e3, ordered * per, churned * 1e3, churned * per);
    return 0;
}
