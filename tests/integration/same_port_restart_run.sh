#!/usr/bin/env bash
# S15.03 live (SPEC §15 C3, docs/scenarios.md): three `cafmesh-node --app echo` silos with
# membership on a one-member etcd, one cafmesh-client with SCENARIO's portals and traffic, and
# silo-3, on a fixed port, killed with SIGKILL and restarted on that same port RESTARTS times
# (500 ms after each kill, the next kill UP_S seconds after it is Active again; after the last
# one the run goes on for the failure-detection bound + 1 s and a little more). About 80 s.
#
# Passes (exit 0) when:
# - between two kills (and after the last), no pod hub is deactivated "not here" more than
#   once ("pod hub {path} is not here; deactivating" in the silos' logs);
# - after every restart each portal that sent a request within the failure-detection bound
#   (10 s) of it got a response to one of them by the restart + 11 s, and every request sent
#   from the restart + 11 s until the next kill ended in its response;
# - no request ended by its deadline and every request has an outcome.
# Every figure is printed.
#
#   same_port_restart_run.sh NODE_BINARY CLIENT_BINARY SCENARIO [RESTARTS] [UP_S]
set -u
node_bin=$1
client_bin=$2
scenario=$3
restarts=${4:-5}
up_s=${5:-10}
detection_ms=10000
dir=$(mktemp -d /tmp/cafmesh-same-port-XXXXXX)
etcd_pid=""
node_pid=()
client_pid=""

cleanup_processes() {
  for p in "${node_pid[@]}" $client_pid $etcd_pid; do
    { kill -KILL "$p"; wait "$p"; } 2> /dev/null
  done
}

fail() {
  echo "same_port_restart_run: FAIL: $*" >&2
  for f in "$dir"/*.log; do
    echo "---- $f (last 10 lines)" >&2
    tail -n 10 "$f" >&2
  done
  echo "same_port_restart_run: files kept in $dir" >&2
  cleanup_processes
  exit 1
}

. "$(dirname "${BASH_SOURCE[0]}")/node_helpers.sh"
command -v etcd > /dev/null || fail "etcd is not installed (Debian package etcd-server)"
command -v python3 > /dev/null || fail "python3 is not installed"

start_etcd_member

config() { # name role port
  cat > "$dir/$1.json" <<JSON
{"mesh":{"process_role":"$2","name":"$1"},
 "membership":{"provider":"etcd","etcd_endpoints":["$etcd_url"],"etcd_prefix":"/cafmesh/same-port-$$/"},
 "network":{"host":"127.0.0.1","port":$3},
 "log":{"level":"info"}}
JSON
}

actives=(0 0 0 0) # ACTIVE lines expected in each silo's log so far
start_node() { # index
  "$node_bin" --config "$dir/silo-$1.json" --app echo >> "$dir/silo-$1.log" 2>&1 &
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

now_ms() { date +%s%3N; }

config silo-1 silo_host 0
config silo-2 silo_host 0
config silo-3 silo_host "$(free_port)"
config client pure_client 0
for i in 1 2 3; do start_node $i; done
for i in 1 2 3; do wait_active $i; done

duration_s=$((3 + restarts * (up_s + 2) + detection_ms / 1000 + 4))
client_start=$(now_ms)
"$client_bin" --config "$dir/client.json" --scenario "$scenario" --duration-s "$duration_s" \
  --ledger "$dir/ledger.jsonl" --report "$dir/report.json" --wait-active-s 30 \
  > "$dir/client.log" 2>&1 &
client_pid=$!
sleep 3
kills=()
starts=()
for r in $(seq 1 "$restarts"); do
  kills+=("$(now_ms)")
  kill -KILL "${node_pid[3]}"
  wait "${node_pid[3]}" 2> /dev/null
  sleep 0.5
  starts+=("$(now_ms)")
  start_node 3
  wait_active 3
  echo "same_port_restart_run: restart $r of silo-3 on its port"
  [ "$r" = "$restarts" ] || sleep "$up_s"
done
wait "$client_pid"
rc=$?
client_pid=""
end=$(now_ms)
echo "same_port_restart_run: cafmesh-client exited $rc"
for i in 1 2 3; do kill -TERM "${node_pid[$i]}" 2> /dev/null; done
for i in 1 2 3; do wait "${node_pid[$i]}" 2> /dev/null; done
kill -TERM "$etcd_pid" 2> /dev/null
wait "$etcd_pid" 2> /dev/null
node_pid=()
etcd_pid=""
[ -s "$dir/report.json" ] || fail "cafmesh-client wrote no report"

# -- the checks (times: ms since the epoch; the client's ledger counts from its start) -------
python3 - "$dir" "$client_start" "$detection_ms" "$end" "${kills[*]}" "${starts[*]}" <<'PY' \
  || fail "see above"
import glob, json, re, sys, datetime
d, client_start, detection_ms, end = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
kills = [int(x) for x in sys.argv[5].split()]
starts = [int(x) for x in sys.argv[6].split()]
bounds = kills[1:] + [end]
ok = True
# Not-here deactivations per pod hub between two kills.
line_re = re.compile(r'^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}) .*pod hub (\S+) is not here; deactivating')
not_here = [dict() for _ in kills]
for f in glob.glob(d + '/silo-*.log'):
    for line in open(f, errors='replace'):
        m = line_re.match(line)
        if not m:
            continue
        t = int(datetime.datetime.fromisoformat(m.group(1)).timestamp() * 1000)
        for r, k in enumerate(kills):
            if k <= t < bounds[r]:
                not_here[r][m.group(2)] = not_here[r].get(m.group(2), 0) + 1
for r, counts in enumerate(not_here):
    worst = max(counts.values()) if counts else 0
    print(f"same_port_restart_run: restart {r + 1}: {sum(counts.values())} not-here deactivations "
          f"of {len(counts)} pod hub(s), most of one {worst}")
    if worst > 1:
        ok = False
        print(f"same_port_restart_run: restart {r + 1}: a pod hub deactivated not here {worst} times")
# Requests: every one has an outcome, none by its deadline, and every one sent from a restart
# + detection + 1 s until the next kill got its response.
accepted, sender, outcome, answered_at = {}, {}, {}, {}
for line in open(d + '/ledger.jsonl'):
    j = json.loads(line)
    if j.get('event') == 'accepted' and j.get('kind') == 'request':
        accepted[j['id']] = client_start + j['t_ms']
        sender[j['id']] = j.get('sender', '')
    elif j.get('event') in ('response', 'nack', 'deadline', 'landed', 'suppressed_failure', 'unconfirmed'):
        if j['id'] not in outcome:
            outcome[j['id']] = j['event']
            answered_at[j['id']] = client_start + j['t_ms']
no_outcome = [i for i in accepted if i not in outcome]
deadlines = [i for i in accepted if outcome.get(i) == 'deadline']
print(f"same_port_restart_run: {len(accepted)} requests from {len(set(sender.values()))} "
      f"portal(s), {len(no_outcome)} without an outcome, {len(deadlines)} by their deadline")
if no_outcome or deadlines:
    ok = False
bound = detection_ms + 1000
for r, s in enumerate(starts):
    portals, resumed = set(), set()
    for i, t in accepted.items():
        if s <= t < min(s + detection_ms, bounds[r]):
            portals.add(sender[i])
        if s <= t < bounds[r] and outcome.get(i) == 'response' and answered_at[i] <= s + bound:
            resumed.add(sender[i])
    firsts = {}
    for i, t in accepted.items():
        if s <= t < bounds[r] and outcome.get(i) == 'response':
            firsts[sender[i]] = min(firsts.get(sender[i], 1 << 62), answered_at[i] - s)
    stuck = sorted(p for p in portals if p not in resumed)
    late = [i for i, t in accepted.items() if s + bound <= t < bounds[r] - 500]
    unanswered = [i for i in late if outcome.get(i) != 'response']
    worst = max((firsts[p] for p in portals if p in firsts), default=0)
    print(f"same_port_restart_run: restart {r + 1}: {len(portals)} portal(s) sent, slowest first "
          f"response {worst} ms after the restart, {len(stuck)} without a response by + {bound} ms"
          f"; {len(late)} requests sent from + {bound} ms to the next kill, {len(unanswered)} "
          f"not answered")
    if stuck or unanswered:
        ok = False
        print(f"same_port_restart_run: restart {r + 1}: portals without a response: {stuck[:5]}")
sys.exit(0 if ok else 1)
PY
echo "same_port_restart_run: PASS ($dir)"
rm -rf "$dir"
