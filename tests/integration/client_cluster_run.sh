#!/usr/bin/env bash
# cafmesh-client against a cluster of three `cafmesh-node --app echo` silo processes (issue
# #6, item 2): ports chosen by the OS (the primary binds port 0 and prints `ADDR
# S127.0.0.1:{port}@{generation}`; the others join through it), then one cafmesh-client run
# of SCENARIO, then SIGTERM to every node. Passes (exit 0) when the client exits 0, its
# report shows landed > 0, lost 0 and no NACK, the ledger file has one `accepted` line and
# one terminal-outcome line per accepted delivery, and every node exits 0 after SIGTERM.
# With MODE `trace` the client first writes SCENARIO's paced schedule as a trace file
# (`--plan-out`) and then replays it (`--trace`) instead of sending the scenario.
#
#   client_cluster_run.sh NODE_BINARY CLIENT_BINARY SCENARIO [scenario|trace]
set -u
node_bin=$1
client_bin=$2
scenario=$3
mode=${4:-scenario}
dir=$(mktemp -d /tmp/cafmesh-client-test-XXXXXX)
pids=()

fail() {
  echo "client_cluster_run: FAIL: $*" >&2
  for f in "$dir"/*.log; do
    echo "---- $f (last 20 lines)" >&2
    tail -n 20 "$f" >&2
  done
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  exit 1
}

. "$(dirname "${BASH_SOURCE[0]}")/node_helpers.sh"

start_node() { # name
  "$node_bin" --config "$dir/$1.json" --app echo > "$dir/$1.log" 2>&1 &
  pids+=($!)
}

silo_config silo-1 0
start_node silo-1
wait_for_line "$dir/silo-1.log" '^ADDR ' 20 || fail "silo-1 printed no ADDR line"
port=$(sed -n 's/^ADDR S[^:]*:\([0-9]*\)@.*/\1/p' "$dir/silo-1.log" | head -n 1)
[ -n "$port" ] || fail "cannot read the primary's port"
for n in silo-2 silo-3; do
  silo_config $n "$port"
  start_node $n
done
for n in silo-1 silo-2 silo-3; do
  wait_for_line "$dir/$n.log" '^ACTIVE' 30 || fail "$n is not ACTIVE within 30 s"
done

cat > "$dir/client.json" <<EOF
{"mesh":{"process_role":"pure_client","name":"client-1"},
 "network":{"host":"127.0.0.1","port":0,"primary_host":"127.0.0.1","primary_port":$port},
 "log":{"level":"warning"}}
EOF
traffic=(--scenario "$scenario")
if [ "$mode" = trace ]; then
  "$client_bin" --config "$dir/client.json" --scenario "$scenario" --plan-out "$dir/plan.jsonl" \
    > "$dir/plan.log" 2>&1 || fail "--plan-out failed"
  traffic=(--trace "$dir/plan.jsonl")
fi
start=$(date +%s)
"$client_bin" --config "$dir/client.json" "${traffic[@]}" --ledger "$dir/ledger.jsonl" \
  --report "$dir/report.json" --wait-active-s 30 > "$dir/client.log" 2>&1
rc=$?
echo "client_cluster_run: cafmesh-client exited $rc after $(($(date +%s) - start)) s"
cat "$dir/client.log"
[ "$rc" = 0 ] || fail "cafmesh-client exited $rc"

value() { sed -n "s/^  \"$1\": \([0-9]*\),\$/\1/p" "$dir/report.json"; }
accepted=$(value accepted)
landed=$(value landed)
lost=$(value lost)
nacked=$(value nacked_total)
echo "client_cluster_run: report accepted=$accepted landed=$landed lost=$lost nacked=$nacked"
[ -n "$accepted" ] && [ "$accepted" -gt 0 ] || fail "no delivery accepted"
[ -n "$landed" ] && [ "$landed" -gt 0 ] || fail "nothing landed"
[ "$lost" = 0 ] || fail "lost = $lost"
[ "$nacked" = 0 ] || fail "NACKed = $nacked"
accepted_lines=$(grep -c '"event":"accepted"' "$dir/ledger.jsonl")
terminal_lines=$(grep -cE '"event":"(landed|response|nack|deadline|suppressed_failure|unconfirmed)"' "$dir/ledger.jsonl")
echo "client_cluster_run: ledger accepted lines=$accepted_lines terminal lines=$terminal_lines"
[ "$accepted_lines" = "$accepted" ] || fail "ledger: $accepted_lines accepted lines, report $accepted"
[ "$terminal_lines" = "$accepted" ] || fail "ledger: $terminal_lines terminal lines for $accepted deliveries"

for p in "${pids[@]}"; do kill -TERM "$p"; done
i=0
for p in "${pids[@]}"; do
  i=$((i + 1))
  # bounded: a node that has not stopped within 30 s is killed and fails the test
  for _ in $(seq 1 300); do
    kill -0 "$p" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$p" 2>/dev/null; then
    kill -KILL "$p"
    fail "node silo-$i did not stop within 30 s of SIGTERM"
  fi
  wait "$p"
  code=$?
  [ "$code" = 0 ] || fail "node silo-$i exited $code after SIGTERM"
done
pids=()
echo "client_cluster_run: PASS (3 nodes stopped with exit 0)"
rm -rf "$dir"
