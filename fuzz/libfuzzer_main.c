/* libFuzzer's entry for one target, picked at compile time with -DFUZZ_TARGET=fuzz_<name>. A failed
 * property aborts, which libFuzzer records as a crash with its input. */
#include "fuzz.h"
#include <stdlib.h>

#ifndef FUZZ_TARGET
#error "build with -DFUZZ_TARGET=fuzz_<name>"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len) {
    if (FUZZ_TARGET(data, len)) abort();
    return 0;
}
