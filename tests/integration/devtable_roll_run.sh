#!/usr/bin/env bash
# S15.01 (SPEC §15 C1): the development membership table survives its process. The README's
# layout (docs/deployment.md#a-two-process-cluster) with three counter silos: silo A hosts
# the development table (primary_port 0), B and C join through A's port, every silo on a
# fixed loopback port. For each roll order (default: "A B C" "C A B" "B C A") a pure client
# sends requests for DURATION_S seconds (W in flight over 50 counters, each re-sent while
# its failure is resendable, DEADLINE_MS each) while every silo in turn gets SIGTERM (it must
# exit 0 and print STOPPED) and is started again on the same address with a new generation.
# Passes when, in every roll, the client got an answer to every request: `nacked 0` and
# `unanswered 0` (none ended by its deadline).
#
#   devtable_roll_run.sh SILO_BIN CLIENT_BIN [DURATION_S] [W] [DEADLINE_MS] [ORDER...]
set -u
silo_bin=$1
client_bin=$2
duration_s=${3:-16}
window=${4:-8}
deadline_ms=${5:-10000}
shift $(($# < 5 ? $# : 5))
orders=("$@")
[ ${#orders[@]} -gt 0 ] || orders=("A B C" "C A B" "B C A")
dir=$(mktemp -d /tmp/cafmesh-devtable-roll-XXXXXX)
declare -A pid port gen
client_pid=""

fail() {
  echo "devtable roll: FAIL: $*" >&2
  for f in "$dir"/*.log; do
    echo "---- $f (last 15 lines)" >&2
    tail -n 15 "$f" >&2
  done
  for p in "${pid[@]}" $client_pid; do kill -KILL "$p" 2>/dev/null; done
  exit 1
}

. "$(dirname "${BASH_SOURCE[0]}")/node_helpers.sh"

config() { # name role port primary_port
  cat > "$dir/$1.json" <<JSON
{"mesh":{"process_role":"$2","name":"$1"},
 "network":{"host":"127.0.0.1","port":$3,"primary_host":"127.0.0.1","primary_port":$4},
 "log":{"level":"warning"}}
JSON
}

start_silo() { # name: starts it on its port, waits until Active
  local n=$1 log
  gen[$n]=$((${gen[$n]:-0} + 1))
  log="$dir/$n-${gen[$n]}.log"
  "$silo_bin" "$dir/$n.json" > "$log" 2>&1 &
  pid[$n]=$!
  wait_for_line "$log" '^ACTIVE' 30 || fail "$n (start ${gen[$n]}) did not become Active"
}

stop_silo() { # name: SIGTERM, exit 0 and STOPPED; prints the stop time
  local n=$1 t0 rc
  t0=$(date +%s%N)
  kill -TERM "${pid[$n]}"
  wait "${pid[$n]}"
  rc=$?
  echo "devtable roll: $n stopped (exit $rc) in $((($(date +%s%N) - t0) / 1000000)) ms"
  [ $rc -eq 0 ] || fail "$n exited $rc after SIGTERM"
  grep -q '^STOPPED' "$dir/$n-${gen[$n]}.log" || fail "$n did not print STOPPED"
}

port[A]=$(free_port)
port[B]=$(free_port)
port[C]=$(free_port)
config A silo_host "${port[A]}" 0
config B silo_host "${port[B]}" "${port[A]}"
config C silo_host "${port[C]}" "${port[A]}"
config client pure_client 0 "${port[A]}"
start_silo A
start_silo B
start_silo C

roll=0
for order in "${orders[@]}"; do
  roll=$((roll + 1))
  clog="$dir/client-$roll.log"
  "$client_bin" "$dir/client.json" $((duration_s * 1000)) 50 "$window" "$deadline_ms" \
    > "$clog" 2>&1 &
  client_pid=$!
  t_start=$(date +%s)
  sleep 1
  for n in $order; do
    stop_silo "$n"
    start_silo "$n"
    sleep 1
  done
  rolled_s=$(($(date +%s) - t_start))
  wait "$client_pid"
  client_rc=$?
  client_pid=""
  result=$(grep '^sent ' "$clog")
  echo "devtable roll: order $order (rolled in ${rolled_s} s): ${result:-no result line}"
  [ "$rolled_s" -lt "$duration_s" ] \
    || fail "the roll took ${rolled_s} s, longer than the client's ${duration_s} s of traffic"
  [ -n "$result" ] || fail "order $order: the client printed no result (exit $client_rc)"
  echo "$result" | grep -q ' nacked 0 unanswered 0$' \
    || fail "order $order: not every request was answered: $result"
  [ $client_rc -eq 0 ] || fail "order $order: the client exited $client_rc"
done

for n in A B C; do stop_silo "$n"; done
echo "devtable roll: PASS (${#orders[@]} rolls: ${orders[*]})"
rm -rf "$dir"
exit 0
