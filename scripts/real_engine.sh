#!/bin/sh
# real_engine.sh — builds the real inference engine the tests run against: llama.cpp's
# llama-server from ../shared/engines (a test input, never copied into the repo), on the CPU, into
# build-engine/ (ignored), once; then the random-weight DeepSeek-V2 GGUFs the tests load, written by
# ../shared/tools/make_random_deepseek_gguf.py with DeepSeek's real tokenizer. A second run finds
# everything in place and does nothing. Exit 0 with everything built; 3 when ../shared/engines is
# absent (the caller decides whether that is allowed); 1 when a step fails.
#
#   sh scripts/real_engine.sh            # build-engine/bin/llama-server, build-engine/models/*.gguf
#   DSPERF_ENGINE_DIR=/path sh scripts/real_engine.sh   (the folder the tests read too)
#
# Models (same seed and shape give the same file byte for byte, so a rebuild is a no-op):
#   tiny.gguf        29.6M params, the shared tool's `tiny` preset: the wire tests and the scenario corpus
#   tiny-peaked.gguf the same shape with --std 0.08: logprobs peaked enough that the K-cache type
#                    measurably moves them
#   tiny-kq.gguf     peaked, with a K head of 64 (qk_nope 48 + rope 16): this llama.cpp quantizes a K
#                    cache (q8_0, q4_0) only in blocks of 32, so drift's K-cache ordering test loads this
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SHARED=${DSPERF_SHARED:-$ROOT/../shared}
OUT=${DSPERF_ENGINE_DIR:-${ENGINE_DIR:-$ROOT/build-engine}}
TARBALL="$SHARED/engines/llama.cpp-c392e50-src.tar.gz"
TOOL="$SHARED/tools/make_random_deepseek_gguf.py"
JOBS=${JOBS:-2}

if [ ! -f "$TARBALL" ] || [ ! -f "$TOOL" ]; then
  echo "real-engine: $TARBALL or $TOOL is missing (the shared engine source sits beside the repo as ../shared)" >&2
  exit 3
fi

need_pkgs=""
command -v cmake >/dev/null 2>&1 || need_pkgs="$need_pkgs cmake"
command -v g++ >/dev/null 2>&1 || need_pkgs="$need_pkgs g++"
/usr/bin/python3 -c 'import numpy' 2>/dev/null || need_pkgs="$need_pkgs python3-numpy"
/usr/bin/python3 -c 'import sentencepiece' 2>/dev/null || need_pkgs="$need_pkgs python3-sentencepiece"
if [ -n "$need_pkgs" ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "real-engine: installing$need_pkgs" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need_pkgs) >&2 || {
      echo "real-engine: apt-get install failed; run: apt-get install$need_pkgs" >&2; exit 1; }
  else
    echo "real-engine: missing packages; run: sudo apt-get install$need_pkgs" >&2
    exit 1
  fi
fi

mkdir -p "$OUT/bin" "$OUT/models"
# One build at a time per folder: a second `make test` beside a first (two checkouts sharing
# DSPERF_ENGINE_DIR) waits here, then finds everything built, instead of deleting the source tree
# the first is compiling.
if command -v flock >/dev/null 2>&1 && [ -z "${REAL_ENGINE_LOCKED:-}" ]; then
  export REAL_ENGINE_LOCKED=1
  exec flock "$OUT/.lock" sh "$ROOT/scripts/real_engine.sh" "$@"
fi
SRC="$OUT/src"
stamp="$OUT/bin/.built-from"
want=$(sha256sum "$TARBALL" | cut -c1-16)
if [ ! -x "$OUT/bin/llama-server" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  rm -rf "$SRC" && mkdir -p "$SRC"
  tar xzf "$TARBALL" -C "$SRC"
  top=$(ls "$SRC" | head -n 1)
  [ -f "$SRC/CMakeLists.txt" ] || { [ -n "$top" ] && [ -f "$SRC/$top/CMakeLists.txt" ] && SRC="$SRC/$top"; }
  echo "real-engine: building llama-server (CPU, -j$JOBS) in $SRC" >&2
  # GIT_CEILING_DIRECTORIES: llama.cpp's build-info step must not read this repository's commit
  (cd "$SRC" && GIT_CEILING_DIRECTORIES="$(dirname "$SRC")" cmake -S . -B build -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF \
      -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=ON -DGGML_CCACHE=OFF >"$OUT/cmake.log" 2>&1 \
    && cmake --build build -j"$JOBS" --target llama-server >>"$OUT/cmake.log" 2>&1) || {
      echo "real-engine: the llama.cpp build failed; its log: $OUT/cmake.log" >&2; tail -n 20 "$OUT/cmake.log" >&2; exit 1; }
  cp "$SRC/build/bin/llama-server" "$OUT/bin/llama-server"
  rm -rf "$OUT/gguf-py" && cp -r "$SRC/gguf-py" "$OUT/gguf-py"
  echo "$want" > "$stamp"
  rm -rf "$SRC/build"   # ~300 MB of objects nobody reads again
fi

model() {   # model NAME ARGS...: writes $OUT/models/NAME.gguf unless it is already there
  name=$1; shift
  f="$OUT/models/$name.gguf"
  [ -s "$f" ] && return 0
  /usr/bin/python3 "$TOOL" --gguf-py "$OUT/gguf-py" "$@" "$f.tmp" >"$OUT/models/$name.log" 2>&1 || {
    echo "real-engine: writing $name.gguf failed; its log: $OUT/models/$name.log" >&2; tail -n 5 "$OUT/models/$name.log" >&2; exit 1; }
  mv "$f.tmp" "$f"
}
model tiny --size tiny
model tiny-peaked --size tiny --std 0.08
model tiny-kq --size tiny --set qk_nope_head_dim=48 --std 0.08
echo "real-engine: $OUT/bin/llama-server, models in $OUT/models" >&2
