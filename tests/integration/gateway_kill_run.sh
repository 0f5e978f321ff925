#!/usr/bin/env bash
# Dead peers fail fast, live: three `cafmesh-node --app echo` silo processes and one
# cafmesh-client sending RATE deliveries/s for DURATION_S seconds; KILL_AT_S seconds into the
# run its gateway silo is killed with SIGKILL. Prints, from the client's ledger and log:
#   - requests open at the kill and how long after it the slowest ended, and requests that
#     ended by their deadline (accepted before / after the kill);
#   - re-homings onto the killed silo after the kill, and re-homings away from live silos.
# Passes when every request open at the kill ended at most failure-detection (10 s) + 1 s
# after it and none of them by its deadline, the client never homed on the killed silo
# again and never left a live gateway. Requests sent after the kill are reported, not
# judged (their routes recover with membership, not with the dead peer's calls).
#
#   gateway_kill_run.sh NODE_BINARY CLIENT_BINARY SCENARIO [RATE] [DURATION_S] [KILL_AT_S]
set -u
node_bin=$1
client_bin=$2
scenario=$3
rate=${4:-1000}
duration_s=${5:-20}
kill_at_s=${6:-6}
dir=$(mktemp -d /tmp/cafmesh-gateway-kill-XXXXXX)
pids=()

fail() {
  echo "gateway_kill_run: FAIL: $*" >&2
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  echo "gateway_kill_run: files kept in $dir" >&2
  exit 1
}

. "$(dirname "${BASH_SOURCE[0]}")/node_helpers.sh"

silo_config silo-1 0
"$node_bin" --config "$dir/silo-1.json" --app echo > "$dir/silo-1.log" 2>&1 &
pids+=($!)
wait_for_line "$dir/silo-1.log" '^ADDR ' 20 || fail "silo-1 printed no ADDR line"
port=$(sed -n 's/^ADDR S[^:]*:\([0-9]*\)@.*/\1/p' "$dir/silo-1.log" | head -n 1)
for n in silo-2 silo-3; do
  silo_config $n "$port"
  "$node_bin" --config "$dir/$n.json" --app echo > "$dir/$n.log" 2>&1 &
  pids+=($!)
done
declare -A addr_pid
i=0
for n in silo-1 silo-2 silo-3; do
  wait_for_line "$dir/$n.log" '^ACTIVE' 30 || fail "$n is not ACTIVE within 30 s"
  a=$(sed -n 's/^ADDR \(.*\)$/\1/p' "$dir/$n.log" | head -n 1)
  addr_pid[$a]=${pids[$i]}
  i=$((i + 1))
done

cat > "$dir/client.json" <<EOF
{"mesh":{"process_role":"pure_client","name":"client-1"},
 "network":{"host":"127.0.0.1","port":0,"primary_host":"127.0.0.1","primary_port":$port},
 "log":{"level":"info"}}
EOF
"$client_bin" --config "$dir/client.json" --scenario "$scenario" --rate "$rate" \
  --duration-s "$duration_s" --ledger "$dir/ledger.jsonl" --report "$dir/report.json" \
  --wait-active-s 30 > "$dir/client.log" 2>&1 &
client=$!
# The gateway of the client's routing service `client-1` (its stream-routed senders), from
# its log.
gw=""
for _ in $(seq 1 300); do
  gw=$(sed -n 's/.*\[client-1\] homed on gateway \(S[^ ]*\).*/\1/p' "$dir/client.log" | tail -n 1)
  [ -n "$gw" ] && [ -n "$(grep -c '"event":"accepted"' "$dir/ledger.jsonl" 2>/dev/null)" ] && break
  sleep 0.1
done
[ -n "$gw" ] || fail "the client printed no 'homed on gateway' line"
victim=${addr_pid[$gw]:-}
[ -n "$victim" ] || fail "gateway $gw is not one of the silos"
sleep "$kill_at_s"
kill_line=$(wc -l < "$dir/client.log")
last_t=$(tail -n 1 "$dir/ledger.jsonl" | sed -n 's/.*"t_ms":\([0-9]*\).*/\1/p')
kill -KILL "$victim"
echo "gateway_kill_run: killed gateway $gw (pid $victim) at ledger t_ms ~ $last_t"
wait "$client"
rc=$?
for p in "${pids[@]}"; do [ "$p" = "$victim" ] || kill -TERM "$p" 2>/dev/null; done
for p in "${pids[@]}"; do [ "$p" = "$victim" ] || wait "$p"; done

deadlines=$(grep -c '"event":"deadline"' "$dir/ledger.jsonl")
after=$(tail -n +"$((kill_line + 1))" "$dir/client.log")
rehome_dead=$(echo "$after" | grep -c "\] homed on gateway $gw")
rehome_away=$(echo "$after" | grep -c "re-homing away from gateway" )
rehome_live=$(echo "$after" | grep "re-homing away from gateway" | grep -vc "gateway $gw")
# From the ledger (KILL = its last time stamp read just before the kill; the ledger is
# buffered, so every request accepted at or before KILL was accepted before the kill):
# requests accepted before the kill and still open then, the slowest of them after the kill,
# and requests ended by their deadline, before and after KILL.
read -r open_n latest dl_before dl_after < <(python3 - "$dir/ledger.jsonl" "$last_t" <<'EOF'
import json, sys
kill = int(sys.argv[2])
accepted, ended, kind = {}, {}, {}
for line in open(sys.argv[1]):
    j = json.loads(line)
    if j["event"] == "accepted" and j.get("kind") == "request":
        accepted[j["id"]] = j["t_ms"]
    elif j["event"] in ("response", "nack", "deadline") and j["id"] not in ended:
        ended[j["id"]], kind[j["id"]] = j["t_ms"], j["event"]
open_ids = [i for i, t in accepted.items() if t <= kill and ended.get(i, 1 << 62) >= kill]
late = [ended[i] - kill for i in open_ids if i in ended]
dl = [i for i in accepted if kind.get(i) == "deadline"]
print(len(open_ids), max(late) if late else 0,
      sum(1 for i in dl if accepted[i] <= kill), sum(1 for i in dl if accepted[i] > kill))
EOF
)
echo "gateway_kill_run: client exit $rc; requests open at the kill: $open_n (slowest ended" \
     "${latest} ms after it); ended by deadline: $dl_before accepted before the kill," \
     "$dl_after after it; re-homings onto the killed silo after the kill: $rehome_dead;" \
     "re-homings away from live silos: $rehome_live (all re-homings: $rehome_away)"
grep -c 'departed while the call was in flight' "$dir/ledger.jsonl" \
  | sed 's/^/gateway_kill_run: ledger lines "departed while the call was in flight": /'
[ "$latest" -le 11000 ] || fail "a request open at the kill ended ${latest} ms after it"
[ "$dl_before" = 0 ] || fail "$dl_before request(s) accepted before the kill ended by their deadline"
[ "$rehome_dead" = 0 ] || fail "the client homed on the killed silo $rehome_dead time(s)"
[ "$rehome_live" = 0 ] || fail "the client left a live gateway $rehome_live time(s)"
echo "gateway_kill_run: PASS"
rm -rf "$dir"
