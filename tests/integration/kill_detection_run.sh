#!/usr/bin/env bash
# Failure detection of silos nobody spoke to (docs/behaviour/membership.md#probes): three
# `cafmesh-node` silos with membership on a one-member etcd; silo-1 is killed (SIGKILL) and
# restarted, then, half a second later, silo-2 the same. Silo-1's first incarnation was known
# only to silo-2's and silo-3's first incarnations, and silo-2's died before its vote could
# count, so the restarted processes must probe it to vote. Passes (exit 0) when both killed
# incarnations are Dead in the membership table within the failure-detection time (10 s)
# plus 10 s, and every silo then stops with exit 0 on SIGTERM.
#
#   kill_detection_run.sh NODE_BINARY
set -u
node_bin=$1
dir=$(mktemp -d /tmp/cafmesh-kill-detection-XXXXXX)
etcd_pid=""
node_pid=()

cleanup_processes() {
  for p in "${node_pid[@]}" $etcd_pid; do
    { kill -KILL "$p"; wait "$p"; } 2> /dev/null
  done
}

fail() {
  echo "kill_detection_run: FAIL: $*" >&2
  for f in "$dir"/*.log; do
    echo "---- $f (last 20 lines)" >&2
    tail -n 20 "$f" >&2
  done
  cleanup_processes
  exit 1
}

. "$(dirname "${BASH_SOURCE[0]}")/node_helpers.sh"
command -v etcd > /dev/null || fail "etcd is not installed (Debian package etcd-server)"

start_etcd_member
echo "kill_detection_run: etcd healthy at $etcd_url"
client_url=$etcd_url
etcdctl_() { ETCDCTL_API=3 etcdctl --endpoints "$client_url" "$@"; }

prefix="/cafmesh/kill-$$/"
for i in 1 2 3; do
  cat > "$dir/silo-$i.json" <<JSON
{"mesh":{"process_role":"silo_host","name":"silo-$i"},
 "membership":{"provider":"etcd","etcd_endpoints":["$client_url"],"etcd_prefix":"$prefix"},
 "network":{"host":"127.0.0.1","port":0},
 "log":{"level":"warning"}}
JSON
done

starts=(0 0 0 0)
start_node() { # index
  "$node_bin" --config "$dir/silo-$1.json" --app echo >> "$dir/silo-$1.log" 2>&1 &
  node_pid[$1]=$!
  starts[$1]=$((starts[$1] + 1))
}
wait_active() { # index; bounded by the clock, not by a count of polls (a loaded machine
  # makes each poll slower), and says when it got there so a timeout shows how far it came
  local t=$SECONDS
  while [ $((SECONDS - t)) -lt 30 ]; do
    if [ "$(grep -c '^ACTIVE' "$dir/silo-$1.log" 2> /dev/null)" -ge "${starts[$1]}" ]; then
      echo "kill_detection_run: silo-$1 ACTIVE (start ${starts[$1]}) after $((SECONDS - t)) s"
      return 0
    fi
    sleep 0.1
  done
  fail "silo-$1 is not ACTIVE (start ${starts[$1]}) within 30 s"
}
address_of() { # index: the address of the node's latest start
  sed -n 's/^ADDR //p' "$dir/silo-$1.log" | tail -n 1
}

for i in 1 2 3; do start_node $i; done
for i in 1 2 3; do wait_active $i; done
killed=()
for i in 1 2; do
  killed+=("$(address_of $i)")
  kill -KILL "${node_pid[$i]}"
  wait "${node_pid[$i]}" 2> /dev/null
  start_node $i
  sleep 0.5
done
echo "kill_detection_run: killed ${killed[*]}"
t0=$SECONDS
for s in "${killed[@]}"; do
  dead=""
  while [ $((SECONDS - t0)) -le 20 ]; do
    if etcdctl_ get "${prefix}row/$s" --print-value-only 2> /dev/null \
      | grep -q '"status":"Dead"'; then
      dead=1
      break
    fi
    sleep 0.2
  done
  [ -n "$dead" ] || fail "$s is not Dead in the membership table 20 s after the kills"
  echo "kill_detection_run: $s Dead $((SECONDS - t0)) s after the kills"
done
for i in 1 2; do wait_active $i; done
for i in 1 2 3; do
  kill -TERM "${node_pid[$i]}"
  t=$SECONDS
  while [ $((SECONDS - t)) -lt 90 ]; do
    kill -0 "${node_pid[$i]}" 2> /dev/null || break
    sleep 0.1
  done
  kill -0 "${node_pid[$i]}" 2> /dev/null && fail "silo-$i did not stop within 90 s"
  wait "${node_pid[$i]}"
  code=$?
  [ "$code" = 0 ] || fail "silo-$i exited $code after SIGTERM"
  echo "kill_detection_run: silo-$i stopped (exit 0) $((SECONDS - t)) s after SIGTERM"
done
node_pid=()
cleanup_processes
echo "kill_detection_run: PASS"
rm -rf "$dir"
