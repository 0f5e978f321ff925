#!/usr/bin/env bash
# No process is special: the process that hosts the development membership oracle is
# stopped first (SIGTERM), then the others, and every process exits 0 within its budget.
# Two layouts of `cafmesh-node` processes, ports chosen by the OS:
#   silo    the oracle in silo-1 (primary_port 0), silo-2 and silo-3 joining through it;
#   client  the oracle in a dedicated pure_client process oracle-1 (primary_port 0, no
#           hubs), silo-1..silo-3 joining through it.
# After the oracle's process exited, each silo gets SIGTERM in turn and must exit 0 within
# LIMIT_S seconds (default 33: the host's 30 s shutdown budget plus the teardown margin).
#
#   oracle_first_stop_run.sh NODE_BINARY [silo|client] [LIMIT_S]
set -u
node_bin=$1
layout=${2:-silo}
limit_s=${3:-33}
dir=$(mktemp -d /tmp/cafmesh-oracle-first-XXXXXX)
pids=()
names=()

fail() {
  echo "oracle_first_stop_run: FAIL: $*" >&2
  for f in "$dir"/*.log; do
    echo "---- $f (last 15 lines)" >&2
    tail -n 15 "$f" >&2
  done
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  exit 1
}

. "$(dirname "${BASH_SOURCE[0]}")/node_helpers.sh"

start() { # name
  "$node_bin" --config "$dir/$1.json" > "$dir/$1.log" 2>&1 &
  pids+=($!)
  names+=("$1")
}

pid_of() { # name
  for i in "${!names[@]}"; do
    [ "${names[$i]}" = "$1" ] && echo "${pids[$i]}" && return
  done
}

# Sends SIGTERM to NAME and waits for its exit: exit code 0 within LIMIT_S seconds.
stop_and_check() { # name
  local pid t0 rc waited
  pid=$(pid_of "$1")
  t0=$(date +%s%N)
  kill -TERM "$pid"
  waited=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 0.1
    waited=$((waited + 1))
    [ $waited -le $((limit_s * 10)) ] || fail "$1 still running ${limit_s} s after SIGTERM"
  done
  wait "$pid"
  rc=$?
  local ms=$((($(date +%s%N) - t0) / 1000000))
  echo "oracle_first_stop_run: $1 exited $rc ${ms} ms after SIGTERM"
  [ $rc -eq 0 ] || fail "$1 exited $rc"
  grep -q '^STOPPED' "$dir/$1.log" || fail "$1 printed no STOPPED line"
}

if [ "$layout" = client ]; then
  oracle=oracle-1
  node_config oracle-1 pure_client 0
  silos=(silo-1 silo-2 silo-3)
  expect='^CLIENT'
else
  oracle=silo-1
  node_config silo-1 silo_host 0
  silos=(silo-2 silo-3)
  expect='^ACTIVE'
fi
start $oracle
wait_for_line "$dir/$oracle.log" '^ADDR ' 20 || fail "$oracle printed no ADDR line"
wait_for_line "$dir/$oracle.log" "$expect" 30 || fail "$oracle did not start"
port=$(sed -n 's/^ADDR S[^:]*:\([0-9]*\)@.*/\1/p' "$dir/$oracle.log" | head -n 1)
[ -n "$port" ] || fail "cannot read the oracle's port"
for n in "${silos[@]}"; do
  node_config $n silo_host "$port"
  start $n
done
for n in "${silos[@]}"; do
  wait_for_line "$dir/$n.log" '^ACTIVE' 30 || fail "$n is not ACTIVE within 30 s"
done
sleep 2 # every silo sees every other Active
stop_and_check $oracle
for n in "${silos[@]}"; do
  [ "$n" = "$oracle" ] && continue
  stop_and_check $n
done
echo "oracle_first_stop_run: PASS ($layout layout)"
rm -rf "$dir"
exit 0
