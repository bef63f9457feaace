#!/bin/sh
# bench_tokenizer.sh — dsperf's tokenizer against Hugging Face `tokenizers` (npm, Rust core) on the same
# text in the same run: one-thread encode throughput (MB/s), load time and resident memory, with the
# token counts checked equal. Not part of `make test`.
#
#   sh scripts/bench_tokenizer.sh [TESTDATA_DIR]     (default ../shared/testdata)
#
# The text (~1.8 MB) is built here: English prose and C code from files every Debian system has, plus
# mixed-script text (CJK, Cyrillic, Greek, Arabic, Devanagari, Thai, emoji, whitespace runs, digits,
# code) from scripts/tok_hf.js's generator with a fixed seed. HF only runs on tokenizer.json (it does
# not read GGUF), so the GGUF vocabularies are timed on dsperf's side only.
set -eu
cd "$(dirname "$0")/.."
TD=${1:-../shared/testdata}/tokenizers
[ -f "$TD/deepseek-v3/tokenizer.json" ] || { echo "bench_tokenizer: no $TD/deepseek-v3/tokenizer.json" >&2; exit 2; }
BIN=${DSPERF_BIN:-./dsperf}
[ -x "$BIN" ] || make -s build >/dev/null
if [ ! -d node_modules/tokenizers ]; then
    npm install --no-save --no-audit --no-fund tokenizers@0.23.2 >/dev/null 2>&1 ||
        { echo "bench_tokenizer: npm install tokenizers failed" >&2; exit 1; }
fi
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
{ cat /usr/share/common-licenses/* 2>/dev/null; cat /usr/include/stdio.h /usr/include/stdlib.h /usr/include/string.h \
    /usr/include/unistd.h 2>/dev/null; } | head -c 450000 > "$W/en_code.txt"
# Stable pieces only (no random code points): characters Unicode assigned after PCRE2's tables would be
# counted differently (see src/tokenizer/README.md), and the counts must match to compare speeds.
node scripts/tok_hf.js genbench 20000 7 > "$W/multi.txt"
cat "$W/en_code.txt" "$W/multi.txt" > "$W/mixed.txt"
echo "text: $(wc -c < "$W/mixed.txt") bytes ($(wc -c < "$W/en_code.txt") English/C, $(wc -c < "$W/multi.txt") mixed-script)"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), one thread"
v3="$TD/deepseek-v3/tokenizer.json"
ours=$("$BIN" tokenize --tokenizer "$v3" --bench "$W/mixed.txt")
hf=$(node scripts/tok_hf.js bench "$v3" "$W/mixed.txt")
field() { echo "$1" | sed -n "s/.*\"$2\": *\([0-9.]*\).*/\1/p"; }
# memory: dsperf = resident growth while loading (the tables), HF = resident size of the node process.
printf '%-26s %10s %10s %10s %16s\n' vocabulary tokens MB/s load_ms memory_MB
printf '%-26s %10s %10s %10s %16s\n' "deepseek-v3 dsperf" "$(field "$ours" tokens)" "$(field "$ours" mb_per_s)" \
    "$(field "$ours" load_ms)" "$(field "$ours" rss_tokenizer_mb) tables"
printf '%-26s %10s %10s %10s %16s\n' "deepseek-v3 HF tokenizers" "$(field "$hf" tokens)" "$(field "$hf" mb_per_s)" \
    "$(field "$hf" load_ms)" "$(field "$hf" rss_mb) process"
for g in deepseek-llm/ggml-vocab-deepseek-llm.gguf deepseek-coder/ggml-vocab-deepseek-coder.gguf; do
    [ -f "$TD/$g" ] || continue
    o=$("$BIN" tokenize --tokenizer "$TD/$g" --bench "$W/mixed.txt")
    printf '%-26s %10s %10s %10s %16s\n' "$(dirname $g) dsperf" "$(field "$o" tokens)" "$(field "$o" mb_per_s)" \
        "$(field "$o" load_ms)" "$(field "$o" rss_tokenizer_mb) tables"
done
if [ "$(field "$ours" tokens)" != "$(field "$hf" tokens)" ]; then
    echo "MISMATCH: dsperf and HF token counts differ on the same text" >&2
    exit 1
fi
awk -v a="$(field "$ours" mb_per_s)" -v b="$(field "$hf" mb_per_s)" \
    'BEGIN { printf "token counts identical; dsperf is %.1fx HF on one thread\n", a / b }'
