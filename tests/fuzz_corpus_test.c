/* Replays the fuzz corpus: every file of tests/fuzz-corpus/<target>/ through the same entry point
 * `make fuzz` runs under libFuzzer (fuzz/fuzz.h), here with the normal compiler, so the seeds and
 * every input a fuzzer once failed on keep being run by `make test` (and by `make test-asan`, where
 * undefined behaviour and leaks are reported) on machines without clang. */
#include "harness.h"
#include "../fuzz/fuzz.h"
#include "common/fileio.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CORPUS_DIR "tests/fuzz-corpus"

/* Runs every input of one target; returns how many ran. */
static int replay(const fuzz_target *ft) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", CORPUS_DIR, ft->name);
    DIR *dp = opendir(dir);
    CHECK_MSG(dp != NULL, "no corpus folder %s (run the tests from the repository root)", dir);
    if (!dp) return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(dp))) {
        if (de->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        char *data;
        size_t len;
        if (fileio_read_all(path, &data, &len)) { CHECK_MSG(0, "cannot read %s", path); continue; }
        /* an exact-size copy, as libFuzzer hands it: reading one byte past it is an ASan error */
        uint8_t *copy = malloc(len ? len : 1);
        if (copy) memcpy(copy, data, len);
        free(data);
        if (!copy) continue;
        CHECK_MSG(ft->fn(copy, len) == 0, "fuzz target %s fails on %s", ft->name, path);
        free(copy);
        n++;
    }
    closedir(dp);
    return n;
}

TEST(fuzz_corpus_replays) {
    for (const fuzz_target *ft = fuzz_targets; ft->name; ft++) {
        int n = replay(ft);
        CHECK_MSG(n >= 1, "the corpus of %s is empty", ft->name);
    }
}
