#!/bin/bash
# run_scenarios.sh — runs the real-engine scenario corpus (tests/scenarios/*.scn) outside the test
# suite: for each scenario it starts llama-server with the scenario's flags (on a loopback port the
# kernel picks), runs its load with full telemetry (--server-metrics, --server-pid, --host-metrics),
# then `dsperf diagnose` (text and --json), and prints one line: the expected first finding against
# what diagnose says. The same .scn files drive tests/scenario_test.c, so this script and the tests
# cannot disagree on what a scenario is.
#
#   bash scripts/run_scenarios.sh                   # every scenario, into build/scenarios/
#   bash scripts/run_scenarios.sh admission faults  # only these
#   OUT=/tmp/s DSPERF_ENGINE_DIR=/path bash scripts/run_scenarios.sh
#
# Writes OUT/NAME.sweep.json (the sweep), OUT/NAME.diag.json, OUT/NAME.diag.txt, OUT/NAME.server.log,
# OUT/NAME.sweep.log and OUT/SUMMARY.txt. Exit 0 when every scenario's first finding is the expected
# one, 1 otherwise, 2 on bad input.
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)
ENGINE=${DSPERF_ENGINE_DIR:-$ROOT/build-engine}
OUT=${OUT:-$ROOT/build/scenarios}
DSPERF=${DSPERF:-$ROOT/dsperf}
SERVER="$ENGINE/bin/llama-server"

[ -x "$DSPERF" ] || { echo "run_scenarios: $DSPERF is missing: run make build first" >&2; exit 2; }
[ -x "$SERVER" ] || { echo "run_scenarios: $SERVER is missing: run make real-engine (or set DSPERF_ENGINE_DIR)" >&2; exit 2; }
mkdir -p "$OUT" || { echo "run_scenarios: cannot create $OUT" >&2; exit 2; }

# scn_get FILE KEY: the value of "KEY: value" (first match), empty when absent.
scn_get() { sed -n "s/^$2:[[:space:]]*//p" "$1" | head -n 1; }

SRV_PID=""
stop_server() {
  [ -n "$SRV_PID" ] || return 0
  kill -TERM "$SRV_PID" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$SRV_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$SRV_PID" 2>/dev/null

  SRV_PID=""
}
trap stop_server EXIT

# start_server MODEL_PATH ARGS LOG: llama-server on a kernel-picked loopback port; sets SRV_PID and
# SRV_URL once /health answers 200 (model loaded); 1 when it did not come up within 180 s.
start_server() {
  # shellcheck disable=SC2086  # ARGS is a flag list, split on spaces on purpose
  "$SERVER" -m "$1" --host 127.0.0.1 --port 0 --metrics $2 >"$3" 2>&1 &
  SRV_PID=$!
  disown "$SRV_PID"   # its abort on SIGTERM (a known bug of this version) is no news
  local port="" _
  for _ in $(seq 1800); do
    kill -0 "$SRV_PID" 2>/dev/null || { SRV_PID=""; return 1; }
    [ -n "$port" ] || port=$(sed -n 's/.*HTTP server is listening.*port: \([0-9]*\).*/\1/p' "$3" | head -n 1)
    if [ -n "$port" ] && [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ]; then
      SRV_URL="http://127.0.0.1:$port"; return 0
    fi
    sleep 0.1
  done
  return 1
}

# The fault of a scenario ("kill_after_decodes: N"): SIGKILL the server once its /metrics counts N
# decode steps, so it dies mid-level whatever the machine's speed.
fault_killer() {
  local url=$1 pid=$2 n=$3 d
  while kill -0 "$pid" 2>/dev/null; do
    d=$(curl -s "$url/metrics" | sed -n 's/^llamacpp:n_decode_total \([0-9]*\).*/\1/p')
    if [ -n "$d" ] && [ "$d" -ge "$n" ]; then kill -KILL "$pid"; return; fi
    sleep 0.1
  done
}

if [ $# -gt 0 ]; then
  files=(); for n in "$@"; do
    f="tests/scenarios/$n.scn"; [ -f "$f" ] || { echo "run_scenarios: no scenario $f" >&2; exit 2; }; files+=("$f"); done
else
  files=(tests/scenarios/*.scn)
fi

summary="$OUT/SUMMARY.txt"; : >"$summary"
bad=0
for f in "${files[@]}"; do
  name=$(basename "$f" .scn)
  model=$(scn_get "$f" model); model_path="$ENGINE/models/${model:-tiny}.gguf"
  args=$(scn_get "$f" server)
  load=$(scn_get "$f" load); load=${load//@MODEL@/$model_path}
  want_class=$(scn_get "$f" expect_class)
  want_flag=$(scn_get "$f" expect_flag)
  want_current=$(scn_get "$f" expect_current)
  kill_after=$(scn_get "$f" kill_after_decodes)
  want_rc=$(scn_get "$f" expect_sweep_rc); want_rc=${want_rc:-0}
  [ -f "$model_path" ] || { echo "$name: model $model_path is missing" | tee -a "$summary"; bad=1; continue; }
  if ! start_server "$model_path" "$args" "$OUT/$name.server.log"; then
    echo "$name: llama-server did not start ($OUT/$name.server.log)" | tee -a "$summary"; bad=1; stop_server; continue
  fi
  killer=""
  if [ -n "$kill_after" ]; then fault_killer "$SRV_URL" "$SRV_PID" "$kill_after" & killer=$!; fi
  start=$(date +%s)
  # eval: the load line groups --class specs with single quotes, as tests/testutil's test_run does
  eval "\"$DSPERF\" $load --url $SRV_URL --server-metrics $SRV_URL/metrics --server-pid $SRV_PID --host-metrics \
        --quiet --out \"$OUT/$name.sweep.json\"" >"$OUT/$name.sweep.log" 2>&1
  sweep_rc=$?
  secs=$(( $(date +%s) - start ))
  [ -n "$killer" ] && { kill "$killer" 2>/dev/null; wait "$killer" 2>/dev/null; }
  stop_server
  "$DSPERF" diagnose "$OUT/$name.sweep.json" >"$OUT/$name.diag.txt" 2>&1
  "$DSPERF" diagnose "$OUT/$name.sweep.json" --json >"$OUT/$name.diag.json" 2>>"$OUT/$name.diag.txt"
  got=$(/usr/bin/python3 - "$OUT/$name.diag.json" "$want_flag" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("no diagnosis (%s)" % e); sys.exit()
f = (d.get("findings") or [None])[0]
if not f:
    print("no finding"); sys.exit()
knob = "-"
for k in f.get("knobs") or []:
    # the flag text before its first space, split on '/': "-b/-ub", "-c (total, split over -np slots)"
    # (a dsperf setting such as "--timeout" has no flag: its name is the flag)
    text = k.get("flag") or (k.get("knob") if (k.get("knob") or "").startswith("-") else "")
    flags = (text.split(" ") + [""])[0].split("/")
    if sys.argv[2] and any(x == sys.argv[2] for x in flags):
        knob = "%s %s (current %s)" % (k.get("knob"), k.get("flag"), k.get("current"))
        break
else:
    ks = f.get("knobs") or []
    if ks:
        knob = "; ".join("%s %s (current %s)" % (k.get("knob"), k.get("flag"), k.get("current")) for k in ks[:2])
print("%s | %s | %s" % (f.get("class"), knob, f.get("title")))
EOF
)
  want="$want_class${want_flag:+ $want_flag=$want_current}"
  line="$name: expected $want | diagnose: $got | sweep rc $sweep_rc (expected $want_rc), ${secs}s"
  echo "$line" | tee -a "$summary"
  got_class=${got%% |*}
  if [ "$sweep_rc" != "$want_rc" ]; then bad=1
  elif [ "$got_class" != "$want_class" ]; then bad=1
  elif [ -n "$want_flag" ] && [[ "$got" != *"(current $want_current)"* ]]; then bad=1; fi
done
exit $bad
