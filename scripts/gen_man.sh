#!/bin/sh
# gen_man.sh — the dsperf(1) man page, generated from the binary's --help and every command's
# --help (one section each), so the page says what the binary says:
#   sh scripts/gen_man.sh build/dsperf > dsperf.1 && man -l dsperf.1
set -eu
BIN=${1:-build/dsperf}
# roff: backslashes doubled, a line starting with . or ' protected
esc() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }
ver=$("$BIN" --version 2>/dev/null | head -1 || echo dsperf)
cmds=$("$BIN" --help | awk '/^commands:/ {on=1; next} on && /^  [a-z]/ {print $1} on && /^$/ {on=0}')
echo '.\" -*- coding: UTF-8 -*-'
echo ".TH DSPERF 1 \"\" \"$ver\" \"User Commands\""
echo ".SH NAME"
printf '%s\n' 'dsperf \- load-test, diagnose and tune LLM inference deployments'
echo ".SH SYNOPSIS"
echo ".B dsperf"
printf '%s\n' '\fIcommand\fR [\fIoptions\fR]'
echo ".SH DESCRIPTION"
echo ".nf"
"$BIN" --help | esc
echo ".fi"
for c in $cmds; do
  echo ".SH \"DSPERF $(echo "$c" | tr a-z A-Z)\""
  echo ".nf"
  "$BIN" "$c" --help 2>/dev/null | esc
  echo ".fi"
done
