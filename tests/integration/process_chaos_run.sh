#!/usr/bin/env bash
# Process chaos (docs/testing.md#process-chaos): three `cafmesh-node --app echo` silos with
# membership on a one-member etcd (no process special), one cafmesh-client sending
# DURATION_S seconds of SCENARIO's traffic, and a schedule of signals drawn from SEED: a
# graceful stop (SIGTERM) and restart, a kill (SIGKILL) and restart, a second signal (SIGTERM
# twice, 300 ms apart: a non-graceful stop) and restart, or a freeze (SIGSTOP for 1 to 3 s,
# shorter than failure detection, then SIGCONT). One fault at a time; the next waits until the
# silo it hit is Active again.
#
# Passes (exit 0) when, from the client's ledger and report and the nodes' exit codes:
# - every accepted delivery has exactly one terminal outcome (one terminal ledger line per
#   accepted id; a landing followed by "its outcome is unknown" is allowed only in a run with
#   a kill or a second signal), none is lost (but for one-way deliveries in a run with a kill
#   or second signal: a killed silo's accepted posts are lost with it), and no request ended
#   by its deadline;
# - per-stream order holds (no order violation) and no stale frame was dropped;
# - every SIGTERM (one signal) ended its node with exit 0, every restarted silo became
#   Active, every frozen silo lived on, and the final stop of every silo exited 0.
# The schedule and every figure are printed; the same SEED gives the same schedule. A failed
# run keeps its directory (client ledger, report, every process's log) and names it;
# CAFMESH_CHAOS_LOG_LEVEL (default warning) sets the silos' and the client's log level, e.g.
# debug to follow each request's attempts (docs/testing.md#process-chaos). CAFMESH_NODE_ARGS
# adds options to every silo's command line (e.g. "--scheduler stealing").
#
#   process_chaos_run.sh NODE_BINARY CLIENT_BINARY SCENARIO SEED [DURATION_S]
set -u
node_bin=$1
client_bin=$2
scenario=$3
seed=$4
duration_s=${5:-40}
log_level=${CAFMESH_CHAOS_LOG_LEVEL:-warning}
dir=$(mktemp -d /tmp/cafmesh-chaos-XXXXXX)
etcd_pid=""
node_pid=()
client_pid=""
actions=()

cleanup_processes() {
  for p in "${node_pid[@]}" $client_pid $etcd_pid; do
    { kill -CONT "$p"; kill -KILL "$p"; wait "$p"; } 2> /dev/null
  done
}

fail() {
  echo "process_chaos_run: FAIL (seed $seed): $*" >&2
  echo "process_chaos_run: schedule: ${actions[*]}" >&2
  for f in "$dir"/*.log; do
    echo "---- $f (last 20 lines)" >&2
    tail -n 20 "$f" >&2
  done
  echo "process_chaos_run: the run's ledger, report and logs are kept in $dir" >&2
  cleanup_processes
  exit 1
}

. "$(dirname "${BASH_SOURCE[0]}")/node_helpers.sh"
command -v etcd > /dev/null || fail "etcd is not installed (Debian package etcd-server)"

# -- etcd (its ports from SRANDOM, so they do not consume the schedule's generator) ---------
start_etcd_member
client_url=$etcd_url

# -- silos -----------------------------------------------------------------------------------
table_config() { # name role
  cat > "$dir/$1.json" <<JSON
{"mesh":{"process_role":"$2","name":"$1"},
 "membership":{"provider":"etcd","etcd_endpoints":["$client_url"],"etcd_prefix":"/cafmesh/chaos-$$/"},
 "network":{"host":"127.0.0.1","port":0},
 "log":{"level":"$log_level"}}
JSON
}

actives=(0 0 0 0) # ACTIVE lines expected in each silo's log so far
start_node() { # index
  "$node_bin" --config "$dir/silo-$1.json" --app echo ${CAFMESH_NODE_ARGS:-} >> "$dir/silo-$1.log" 2>&1 &
  node_pid[$1]=$!
  actives[$1]=$((actives[$1] + 1))
}

wait_active() { # index
  for _ in $(seq 1 300); do
    [ "$(grep -c '^ACTIVE' "$dir/silo-$1.log" 2> /dev/null)" -ge "${actives[$1]}" ] && return 0
    sleep 0.1
  done
  fail "silo-$1 is not ACTIVE (start ${actives[$1]}) within 30 s"
}

wait_exit() { # index seconds: the node's exit code once it exited
  local p=${node_pid[$1]}
  for _ in $(seq 1 $(($2 * 10))); do
    kill -0 "$p" 2> /dev/null || break
    sleep 0.1
  done
  kill -0 "$p" 2> /dev/null && fail "silo-$1 did not exit within $2 s"
  wait "$p"
}

for i in 1 2 3; do
  table_config "silo-$i" silo_host
  start_node $i
done
for i in 1 2 3; do wait_active $i; done
table_config client pure_client

# -- traffic and the schedule ----------------------------------------------------------------
"$client_bin" --config "$dir/client.json" --scenario "$scenario" --duration-s "$duration_s" \
  --ledger "$dir/ledger.jsonl" --report "$dir/report.json" --wait-active-s 30 \
  > "$dir/client.log" 2>&1 &
client_pid=$!
RANDOM=$seed
start=$SECONDS
sleep 3
kinds=(term term kill kill second freeze freeze)
while [ $((SECONDS - start)) -lt $((duration_s - 6)) ]; do
  i=$((1 + RANDOM % 3))
  kind=${kinds[$((RANDOM % ${#kinds[@]}))]}
  t=$((SECONDS - start))
  case $kind in
    term)
      kill -TERM "${node_pid[$i]}"
      wait_exit $i 90
      code=$?
      [ "$code" = 0 ] || fail "silo-$i exited $code after SIGTERM"
      start_node $i
      wait_active $i
      ;;
    kill)
      kill -KILL "${node_pid[$i]}"
      wait "${node_pid[$i]}" 2> /dev/null
      start_node $i
      wait_active $i
      ;;
    second)
      kill -TERM "${node_pid[$i]}"
      sleep 0.3
      kill -TERM "${node_pid[$i]}" 2> /dev/null
      wait_exit $i 90
      code=$?
      [ "$code" = 0 ] || fail "silo-$i exited $code after a second SIGTERM"
      start_node $i
      wait_active $i
      ;;
    freeze)
      ms=$((1000 + RANDOM % 2001))
      kill -STOP "${node_pid[$i]}"
      sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
      kill -CONT "${node_pid[$i]}"
      kill -0 "${node_pid[$i]}" 2> /dev/null || fail "silo-$i died while frozen"
      kind="freeze${ms}ms"
      ;;
  esac
  actions+=("${t}s:$kind:silo-$i")
  echo "process_chaos_run: ${t} s: $kind silo-$i"
  sleep "$((1 + RANDOM % 3))"
done
wait "$client_pid"
rc=$?
client_pid=""
cat "$dir/client.log"
echo "process_chaos_run: cafmesh-client exited $rc; schedule: ${actions[*]}"

# -- the invariants --------------------------------------------------------------------------
value() { sed -n "s/^  \"$1\": \([0-9]*\),\$/\1/p" "$dir/report.json"; }
[ -s "$dir/report.json" ] || fail "cafmesh-client wrote no report"
accepted=$(value accepted)
lost=$(value lost)
multiple=$(value multiple_terminal_outcomes)
deadlines=$(value deadlines)
order=$(value order_violations)
stale=$(value stale_drops)
late=$(value late_copies)
echo "process_chaos_run: accepted=$accepted lost=$lost multiple=$multiple deadlines=$deadlines order_violations=$order stale_drops=$stale late_copies=$late"
[ -n "$accepted" ] && [ "$accepted" -gt 0 ] || fail "no delivery accepted"
# One-way deliveries a killed silo had accepted are lost with it (docs/testing.md#process-chaos);
# a request never is: it ends in its response, a NACK or (a failure, below) its deadline.
killed=$(printf '%s\n' "${actions[@]}" | grep -cE ':(kill|second):')
ended=$(grep -E '"event":"(landed|response|nack|deadline|suppressed_failure|unconfirmed)"' \
  "$dir/ledger.jsonl" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p' | sort -u)
lost_requests=$(grep '"event":"accepted"' "$dir/ledger.jsonl" | grep '"kind":"request"' \
  | sed -n 's/.*"id":"\([^"]*\)".*/\1/p' | sort -u | comm -23 - <(echo "$ended") | wc -l)
echo "process_chaos_run: lost one-way deliveries=$((lost - lost_requests)), lost requests=$lost_requests, kills and second signals=$killed"
[ "$lost_requests" = 0 ] || fail "$lost_requests requests have no outcome"
[ "$lost" = 0 ] || [ "$killed" -gt 0 ] || fail "lost = $lost in a run without a kill or second signal"
[ "$multiple" = 0 ] || fail "$multiple deliveries with more than one terminal outcome"
[ "$deadlines" = 0 ] || fail "$deadlines requests ended by their deadline"
[ "$order" = 0 ] || fail "$order per-stream order violations"
[ "$stale" = 0 ] || fail "$stale stale frames dropped"
# A frame told "outcome is unknown" that lands behind a newer version (docs/testing.md#chaos):
# held to the same bar as a stale drop here.
[ "$late" = 0 ] || fail "$late late copies after an unknown outcome"
# A landing followed by a response timeout or a `failed` NACK "its outcome is unknown" (the
# silo the call went through went away while it was in flight) is counted apart by the
# ledger (docs/testing.md#findings): an honest "unknown", but after a graceful stop only, a
# defect. Every other second terminal line is a failure.
unknown=$(value landed_with_ambiguous_failure)
[ -n "$unknown" ] || fail "the report has no landed_with_ambiguous_failure"
terminal='"event":"(landed|response|nack|deadline|suppressed_failure|unconfirmed)"'
terminal_lines=$(grep -cE "$terminal" "$dir/ledger.jsonl")
echo "process_chaos_run: terminal ledger lines=$terminal_lines, landed then outcome unknown=$unknown"
[ "$terminal_lines" = "$((accepted - lost + unknown))" ] \
  || fail "ledger: $terminal_lines terminal lines for $accepted deliveries ($lost lost, $unknown landed, then unknown)"
if [ "$unknown" != 0 ] && ! printf '%s\n' "${actions[@]}" | grep -qE ':(kill|second):'; then
  fail "$unknown deliveries landed and then ended 'unknown' in a run without a kill or second signal"
fi

for i in 1 2 3; do
  kill -TERM "${node_pid[$i]}"
  wait_exit $i 90
  code=$?
  [ "$code" = 0 ] || fail "silo-$i exited $code after the final SIGTERM"
done
node_pid=()
cleanup_processes
echo "process_chaos_run: PASS (seed $seed, ${#actions[@]} faults)"
rm -rf "$dir"
