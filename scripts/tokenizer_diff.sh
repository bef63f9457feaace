#!/bin/sh
# tokenizer_diff.sh — differential test of dsperf's tokenizer against Hugging Face `tokenizers` (npm,
# Rust core): random mixed-script texts (scripts/tok_hf.js gen) encoded by both, ids compared line by
# line, for the V3 tokenizer.json and both GGUF vocabularies (converted to tokenizer.json for HF); then
# random conversations rendered by the V3 chat template with @huggingface/jinja against
# `dsperf tokenize --chat --render`. Not part of `make test` (needs npm). Exit 1 when anything differs.
#
#   sh scripts/tokenizer_diff.sh [N_TEXTS] [SEED] [TESTDATA_DIR]
set -eu
cd "$(dirname "$0")/.."
N=${1:-3000}
SEED=${2:-1}
TD=${3:-../shared/testdata}/tokenizers
[ -x ./dsperf ] || make -s build >/dev/null
if [ ! -d node_modules/tokenizers ] || [ ! -d node_modules/@huggingface/jinja ]; then
    npm install --no-save --no-audit --no-fund tokenizers@0.23.2 @huggingface/jinja@0.5.11 >/dev/null 2>&1 ||
        { echo "tokenizer_diff: npm install tokenizers failed" >&2; exit 1; }
fi
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
node scripts/tok_hf.js gen "$N" "$SEED" > "$W/texts.jsonl"
status=0
for v in deepseek-v3/tokenizer.json deepseek-llm/ggml-vocab-deepseek-llm.gguf deepseek-coder/ggml-vocab-deepseek-coder.gguf; do
    [ -f "$TD/$v" ] || { echo "skip $v (absent)"; continue; }
    node scripts/tok_hf.js encode "$TD/$v" "$W/texts.jsonl" > "$W/hf.out"
    ./dsperf tokenize --tokenizer "$TD/$v" --lines "$W/texts.jsonl" > "$W/ds.out"
    bad=$(paste -d '\t' "$W/hf.out" "$W/ds.out" | awk -F '\t' '$1 != $2 { n++ } END { print n + 0 }')
    echo "$v: $bad of $N texts differ"
    if [ "$bad" != 0 ]; then
        status=1
        paste -d '\t' "$W/hf.out" "$W/ds.out" | awk -F '\t' '$1 != $2 { print NR }' | head -3 | while read -r l; do
            echo "  text:   $(sed -n "${l}p" "$W/texts.jsonl")"
            echo "  hf:    $(sed -n "${l}p" "$W/hf.out")"
            echo "  dsperf:$(sed -n "${l}p" "$W/ds.out")"
        done
    fi
done
cfg="$TD/deepseek-v3/tokenizer_config.json"
if [ -f "$cfg" ]; then
    NC=$((N / 100 + 10))
    node scripts/tok_hf.js chat "$cfg" "$NC" "$SEED" "$W"
    bad=0
    i=0
    while read -r conv; do
        i=$((i + 1))
        printf '%s' "$conv" | ./dsperf tokenize --tokenizer "$TD/deepseek-v3/tokenizer.json" --chat --render - > "$W/got.txt"
        # compare as JSON strings (the renderings hold newlines)
        node -e 'const fs=require("fs");const g=fs.readFileSync(process.argv[1],"utf8");
                 const w=JSON.parse(fs.readFileSync(process.argv[2],"utf8").split("\n")[Number(process.argv[3])-1]);
                 process.exit(g===w?0:1)' "$W/got.txt" "$W/chat_hf.jsonl" "$i" || bad=$((bad + 1))
    done < "$W/chat_convs.jsonl"
    echo "deepseek-v3 chat template: $bad of $i conversations render differently from @huggingface/jinja"
    [ "$bad" = 0 ] || status=1
fi
exit $status
