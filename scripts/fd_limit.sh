# fd_limit.sh — sourced by the bench scripts: raise_fd_limit lifts this shell's descriptor limits
# as far as it may, for the scripts' tens of thousands of streams (client and `dsperf serve` each
# hold one descriptor per stream). The hard limit goes up to fs.nr_open (at most 1,048,576), which
# takes root with CAP_SYS_RESOURCE (ulimit -Hn, else prlimit); then the soft limit to the hard one.
# Where the hard limit cannot be raised (no CAP_SYS_RESOURCE: e.g. a container started with
# --ulimit nofile=...), FD_LIMIT_WHY says so and the scripts work within it.
raise_fd_limit() {
  FD_LIMIT_WHY=""
  _want=$(cat /proc/sys/fs/nr_open 2>/dev/null || echo 1048576)
  [ "$_want" -gt 1048576 ] && _want=1048576
  _hard=$(ulimit -Hn)
  if [ "$_hard" != unlimited ] && [ "$_hard" -lt "$_want" ]; then
    ulimit -Hn "$_want" 2>/dev/null || prlimit --pid $$ --nofile="$_want:$_want" 2>/dev/null || true
    if [ "$(ulimit -Hn)" = "$_hard" ]; then
      FD_LIMIT_WHY="the hard limit cannot be raised here"
      if grep -q '^CapEff' /proc/self/status 2>/dev/null; then
        _cap=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
        [ $(( 0x$_cap >> 24 & 1 )) = 0 ] && FD_LIMIT_WHY="$FD_LIMIT_WHY (no CAP_SYS_RESOURCE)"
      fi
    fi
  fi
  ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
}
