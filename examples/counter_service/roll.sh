#!/usr/bin/env bash
# Rolls the counter service under traffic, every process the application runs on its own:
# a development membership table (`cafmesh-node` with a pure_client configuration on port 0;
# production keeps membership on an external store), three counter silos joining through it,
# and a client sending requests for DURATION_S seconds. While it sends, each silo in turn gets
# SIGTERM (a graceful stop: it must exit 0 and print STOPPED) and is replaced by a new process
# with a new generation. Passes when the client got an answer to every request it sent.
# Any service whose silo and client take the same arguments rolls the same way (the orders
# service does; CAFMESH_ROLL_NAME names it in the output).
#
#   roll.sh NODE_BIN SILO_BIN CLIENT_BIN [DURATION_S]
set -u
roll=${CAFMESH_ROLL_NAME:-counter}
node_bin=$1
silo_bin=$2
client_bin=$3
duration_s=${4:-12}
dir=$(mktemp -d /tmp/cafmesh-$roll-roll-XXXXXX)
pids=()

fail() {
  echo "$roll roll: FAIL: $*" >&2
  for f in "$dir"/*.log; do
    echo "---- $f (last 10 lines)" >&2
    tail -n 10 "$f" >&2
  done
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  exit 1
}

config() { # name role primary_port
  cat > "$dir/$1.json" <<JSON
{"mesh":{"process_role":"$2","name":"$1"},
 "network":{"host":"127.0.0.1","port":0,"primary_host":"127.0.0.1","primary_port":$3},
 "log":{"level":"warning"}}
JSON
}

wait_for_line() { # file pattern seconds
  for _ in $(seq 1 $(($3 * 10))); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

start_silo() { # name: starts it, waits until Active; sets $last_pid
  config "$1" silo_host "$primary_port"
  "$silo_bin" "$dir/$1.json" > "$dir/$1.log" 2>&1 &
  last_pid=$!
  pids+=("$last_pid")
  wait_for_line "$dir/$1.log" '^ACTIVE' 20 || fail "$1 did not become Active"
}

# 1. The membership table's process, then three silos.
config table pure_client 0
"$node_bin" --config "$dir/table.json" > "$dir/table.log" 2>&1 &
table_pid=$!
pids+=("$table_pid")
wait_for_line "$dir/table.log" '^CLIENT' 20 || fail "the membership table's process did not start"
primary_port=$(sed -n 's/^ADDR S127\.0\.0\.1:\([0-9]*\)@.*/\1/p' "$dir/table.log" | head -n 1)
[ -n "$primary_port" ] || fail "no ADDR line from the membership table's process"
silo_pids=()
for name in silo-1 silo-2 silo-3; do
  start_silo "$name"
  silo_pids+=("$last_pid")
done

# 2. The client: 20 requests in flight over 50 counters, 30 s deadline each.
config client pure_client "$primary_port"
"$client_bin" "$dir/client.json" $((duration_s * 1000)) 50 20 30000 > "$dir/client.log" 2>&1 &
client_pid=$!
pids+=("$client_pid")

# 3. The roll: each silo stopped with SIGTERM under traffic and replaced.
sleep 2
for i in 0 1 2; do
  name="silo-$((i + 1))"
  kill -TERM "${silo_pids[$i]}"
  wait "${silo_pids[$i]}"
  rc=$?
  [ $rc -eq 0 ] || fail "$name exited $rc after SIGTERM"
  grep -q '^STOPPED' "$dir/$name.log" || fail "$name did not print STOPPED"
  echo "$roll roll: $name stopped gracefully (exit 0)"
  start_silo "$name-gen2"
  silo_pids[$i]=$last_pid
  sleep 1
done

# 4. The client's verdict.
wait "$client_pid"
client_rc=$?
cat "$dir/client.log"
for p in "${silo_pids[@]}" "$table_pid"; do kill -TERM "$p" 2>/dev/null; done
for p in "${silo_pids[@]}" "$table_pid"; do wait "$p" 2>/dev/null; done
[ $client_rc -eq 0 ] || fail "the client did not get an answer to every request (exit $client_rc)"
grep -q ' unanswered 0$' "$dir/client.log" || fail "requests unanswered"
echo "$roll roll: PASS"
rm -rf "$dir"
