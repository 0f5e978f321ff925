#!/usr/bin/env bash
# Membership on etcd, no process special (docs/behaviour/membership.md#the-etcd-provider):
# a 3-member etcd cluster (child processes on free loopback ports), three
# `cafmesh-node --app echo` silos configured with `membership.provider` "etcd" (none is a
# primary), and one cafmesh-client sending DURATION_S seconds of CLIENT_SCENARIO's traffic.
#
# MODE `roll`: while the client sends, every silo is stopped with SIGTERM and restarted, in
# start order (the first-started silo first) or in the order CAFMESH_ROLL_ORDER gives (e.g.
# "3 1 2"); after the second stop one etcd member is killed with SIGKILL. MODE `pause`: no roll; every etcd member is frozen (SIGSTOP) for 10 s
# and then resumed; afterwards one silo is stopped and restarted, so membership must resume.
#
# Passes (exit 0) when the client exits 0 (every report check of the scenario), its report
# shows lost 0, the ledger has one terminal line per accepted delivery, every SIGTERM ends
# its node with exit 0, every restarted silo becomes ACTIVE, no node log says a silo was
# declared Dead, and none says that its actor system did not end after the stop.
#
#   etcd_roll_run.sh NODE_BINARY CLIENT_BINARY CLIENT_SCENARIO MODE [DURATION_S]
#
# CAFMESH_NODE_ARGS adds options to every silo's command line (e.g. "--scheduler stealing").
set -u
node_bin=$1
client_bin=$2
scenario=$3
mode=$4
duration_s=${5:-30}
dir=$(mktemp -d /tmp/cafmesh-etcd-roll-XXXXXX)
etcd_pids=()
node_pid=()
client_pid=""
oracle_pid=""

cleanup_processes() {
  for p in "${node_pid[@]}" $client_pid $oracle_pid "${etcd_pids[@]}"; do
    { kill -CONT "$p"; kill -KILL "$p"; wait "$p"; } 2> /dev/null
  done
}

fail() {
  echo "etcd_roll_run: FAIL: $*" >&2
  for f in "$dir"/*.log; do
    echo "---- $f (last 20 lines)" >&2
    tail -n "${CAFMESH_LOG_TAIL:-20}" "$f" >&2
  done
  cleanup_processes
  exit 1
}

. "$(dirname "${BASH_SOURCE[0]}")/node_helpers.sh"
command -v etcd > /dev/null || fail "etcd is not installed (Debian package etcd-server)"

# -- etcd ------------------------------------------------------------------------------------
wait_etcd_healthy() { # seconds: 0 once every member answers a health check (wall time)
  local until=$((SECONDS + $1))
  while [ "$SECONDS" -lt "$until" ]; do
    ETCDCTL_API=3 etcdctl --endpoints "$(IFS=,; echo "${client_urls[*]}")" \
      --dial-timeout 1s --command-timeout 2s endpoint health > /dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}
etcd_members_alive() {
  for p in "${etcd_pids[@]}"; do kill -0 "$p" 2> /dev/null || return 1; done
}
# A free port can be taken by another process before etcd binds it: a member that exits at
# start ends the attempt, and the cluster starts again on other ports (3 attempts).
for attempt in 1 2 3; do
  initial=""
  client_urls=()
  peer_urls=()
  etcd_pids=()
  for i in 0 1 2; do
    client_urls+=("http://127.0.0.1:$(free_port)")
    peer_urls+=("http://127.0.0.1:$(free_port)")
    initial+="${initial:+,}m$i=${peer_urls[$i]}"
  done
  rm -rf "$dir"/etcd-m*
  for i in 0 1 2; do
    etcd --name "m$i" --data-dir "$dir/etcd-m$i" \
      --listen-client-urls "${client_urls[$i]}" --advertise-client-urls "${client_urls[$i]}" \
      --listen-peer-urls "${peer_urls[$i]}" --initial-advertise-peer-urls "${peer_urls[$i]}" \
      --initial-cluster "$initial" --initial-cluster-state new \
      --initial-cluster-token "cafmesh-$$-$attempt" > "$dir/etcd-m$i.log" 2>&1 &
    etcd_pids+=($!)
  done
  healthy=0
  wait_etcd_healthy 20 && etcd_members_alive && healthy=1
  [ "$healthy" = 1 ] && break
  echo "etcd_roll_run: the etcd cluster did not start (attempt $attempt):" \
    "$(grep -h 'bind: address already in use' "$dir"/etcd-m*.log | head -n 1)"
  for p in "${etcd_pids[@]}"; do { kill -KILL "$p"; wait "$p"; } 2> /dev/null; done
done
[ "$healthy" = 1 ] || fail "the etcd cluster is not healthy within 20 s (3 attempts)"
endpoints=$(printf '"%s",' "${client_urls[@]}")
endpoints="[${endpoints%,}]"
echo "etcd_roll_run: etcd members ${client_urls[*]}"

# -- silos -----------------------------------------------------------------------------------
# CAFMESH_PROVIDER=oracle runs the same with the development oracle in a dedicated process
# (never rolled), for comparison.
provider=${CAFMESH_PROVIDER:-etcd}
oracle_pid=""
if [ "$provider" = oracle ]; then
  node_config oracle-1 pure_client 0
  "$node_bin" --config "$dir/oracle-1.json" > "$dir/oracle-1.log" 2>&1 &
  oracle_pid=$!
  wait_for_line "$dir/oracle-1.log" '^ADDR ' 20 || fail "oracle-1 printed no ADDR line"
  oracle_port=$(sed -n 's/^ADDR S[^:]*:\([0-9]*\)@.*/\1/p' "$dir/oracle-1.log" | head -n 1)
fi
table_config() { # name role
  if [ "$provider" = oracle ]; then
    node_config "$1" "$2" "$oracle_port"
    return
  fi
  cat > "$dir/$1.json" <<JSON
{"mesh":{"process_role":"$2","name":"$1"},
 "membership":{"provider":"etcd","etcd_endpoints":$endpoints,"etcd_prefix":"/cafmesh/run-$$/"},
 "network":{"host":"127.0.0.1","port":0},
 "log":{"level":"${CAFMESH_LOG_LEVEL:-warning}"}}
JSON
}

start_node() { # index
  local n="silo-$1"
  "$node_bin" --config "$dir/$n.json" --app echo ${CAFMESH_NODE_ARGS:-} >> "$dir/$n.log" 2>&1 &
  node_pid[$1]=$!
}

wait_active() { # index: the node's log gains one more ACTIVE line
  local n="silo-$1" want=$2
  for _ in $(seq 1 300); do
    [ "$(grep -c '^ACTIVE' "$dir/$n.log" 2> /dev/null)" -ge "$want" ] && return 0
    sleep 0.1
  done
  fail "$n is not ACTIVE (time $want) within 30 s"
}

stop_node() { # index: SIGTERM, exit 0 within 90 s (the host budget, 30 s, and the bound
  # of the Dead publish, 60 s: a membership table that answers slowly can use both)
  local n="silo-$1" p=${node_pid[$1]} t0=$SECONDS
  kill -TERM "$p"
  for _ in $(seq 1 900); do
    kill -0 "$p" 2> /dev/null || break
    sleep 0.1
  done
  if kill -0 "$p" 2> /dev/null; then
    # Where it waits: every thread's stack, if gdb is installed.
    command -v gdb > /dev/null \
      && gdb -p "$p" -batch -ex "thread apply all bt" ${CAFMESH_GDB_ARGS:-} > "$dir/$n.stacks.log" 2>&1
    fail "$n did not stop within 90 s of SIGTERM"
  fi
  wait "$p"
  local code=$?
  [ "$code" = 0 ] || fail "$n exited $code after SIGTERM"
  echo "etcd_roll_run: $n stopped, exit 0, after $((SECONDS - t0)) s"
}

for i in 1 2 3; do
  table_config "silo-$i" silo_host
  start_node $i
done
for i in 1 2 3; do wait_active $i 1; done
table_config client pure_client

# -- traffic and faults ----------------------------------------------------------------------
"$client_bin" --config "$dir/client.json" --scenario "$scenario" --duration-s "$duration_s" \
  --ledger "$dir/ledger.jsonl" --report "$dir/report.json" --wait-active-s 30 \
  > "$dir/client.log" 2>&1 &
client_pid=$!
sleep 3
if [ "$mode" = roll ]; then
  stops=0
  for i in ${CAFMESH_ROLL_ORDER:-1 2 3}; do
    stop_node $i
    stops=$((stops + 1))
    if [ "$stops" = 2 ]; then
      kill -KILL "${etcd_pids[0]}"
      wait "${etcd_pids[0]}" 2> /dev/null
      echo "etcd_roll_run: etcd member m0 killed"
    fi
    start_node $i
    wait_active $i 2
    echo "etcd_roll_run: silo-$i restarted and ACTIVE"
    sleep 2
  done
else
  for p in "${etcd_pids[@]}"; do kill -STOP "$p"; done
  echo "etcd_roll_run: every etcd member frozen for 10 s"
  sleep 10
  for p in "${etcd_pids[@]}"; do kill -CONT "$p"; done
  echo "etcd_roll_run: etcd resumed"
  # Ten seconds without heartbeats cost the members their leader: the silo's stop below is
  # a membership change, so it waits until every member answers again (an election).
  wait_etcd_healthy 30 || fail "etcd is not healthy within 30 s of resuming"
  sleep 3
  stop_node 3
  start_node 3
  wait_active 3 2
  echo "etcd_roll_run: silo-3 restarted and ACTIVE after etcd resumed"
fi
wait "$client_pid"
rc=$?
client_pid=""
cat "$dir/client.log"
[ "$rc" = 0 ] || fail "cafmesh-client exited $rc"

value() { sed -n "s/^  \"$1\": \([0-9]*\),\$/\1/p" "$dir/report.json"; }
accepted=$(value accepted)
lost=$(value lost)
echo "etcd_roll_run: report accepted=$accepted lost=$lost"
[ -n "$accepted" ] && [ "$accepted" -gt 0 ] || fail "no delivery accepted"
[ "$lost" = 0 ] || fail "lost = $lost"
terminal_lines=$(grep -cE '"event":"(landed|response|nack|deadline|suppressed_failure|unconfirmed)"' "$dir/ledger.jsonl")
[ "$terminal_lines" = "$accepted" ] || fail "ledger: $terminal_lines terminal lines for $accepted deliveries"
if grep -l "declared it Dead" "$dir"/silo-*.log; then
  fail "a silo was declared Dead"
fi

for i in 1 2 3; do stop_node $i; done
node_pid=()
# A stop whose actor system did not end is bounded (exit within 10 s) and says so.
if grep -E "did not end within|not ended within" "$dir"/silo-*.log; then
  fail "a silo's actor system did not end after its stop"
fi
cleanup_processes
echo "etcd_roll_run: PASS ($mode)"
rm -rf "$dir"
