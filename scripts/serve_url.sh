# serve_url.sh — sourced by the scripts that start `dsperf serve --port 0` in the background:
# wait_serve_url FILE WHO [LOG] waits (up to 10 s) for serve's "listening on" line in FILE and sets
# URL from it; otherwise it says WHO could not start serve (and where its log is) and exits 1.
wait_serve_url() {
  _tries=0
  while ! grep -q 'listening on' "$1" 2>/dev/null; do
    _tries=$((_tries + 1))
    [ $_tries -gt 100 ] && { echo "$2: dsperf serve did not start${3:+ (see $3)}" >&2; exit 1; }
    sleep 0.1
  done
  URL=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$1")
}
