#!/usr/bin/env bash
# The admin endpoint of a live silo (docs/operations.md), scraped the way an operator's
# Prometheus and a load balancer would, during a graceful stop:
#   silo-1 hosts the development membership oracle, silo-2 joins it; both run `--app echo`
#   and serve their admin endpoints on ports the OS chooses (`--admin-port 0`).
#   While both are Active: /healthz/live and /healthz/ready answer 200, /cluster/members
#   lists two Active silos, /metrics is Prometheus text with the router core's, membership's
#   and the stop's meters.
#   Then silo-1 is paused (SIGSTOP) and silo-2 gets SIGTERM: its stop's membership steps
#   wait for the paused oracle, each bounded (1.5 s here), which leaves a window of seconds
#   after the quiescence hold. silo-2 is scraped in a loop until it is gone: readiness answers
#   200 until the stopping signal, then 503 (`stopping`, later `stopped`) and never 200
#   again; a scrape taken after the quiescence hold shows it recorded
#   (`cafmesh_quiescence_hold_seconds_count` 1) and `cafmesh_ready` 0; silo-2 exits 0.
#
#   admin_endpoint_run.sh NODE_BINARY
set -u
node_bin=$1
dir=$(mktemp -d /tmp/cafmesh-admin-XXXXXX)
pids=()
. "$(dirname "${BASH_SOURCE[0]}")/node_helpers.sh"

fail() {
  echo "admin_endpoint_run: FAIL: $*" >&2
  for f in "$dir"/*.log; do
    echo "---- $f (last 20 lines)" >&2
    tail -n 20 "$f" >&2
  done
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
  exit 1
}

get() { # url: body on stdout, fails when the endpoint does not answer 200
  curl -sf -m 2 "$1"
}

code_of() { # url: the HTTP status and the body's first line, "000" when nothing answers
  local body code
  body=$(curl -s -m 2 -o - -w '\n%{http_code}' "$1")
  code=${body##*$'\n'}
  echo "$code ${body%%$'\n'*}"
}

silo_config silo-1 0
"$node_bin" --config "$dir/silo-1.json" --app echo --admin-port 0 > "$dir/silo-1.log" 2>&1 &
pids+=($!)
wait_for_line "$dir/silo-1.log" '^ACTIVE' 20 || fail "silo-1 printed no ACTIVE line"
port1=$(sed -n "s/^ADDR S[^:]*:\([0-9]*\)@.*/\1/p" "$dir/silo-1.log")
[ -n "$port1" ] || fail "silo-1 printed no ADDR line"
cat > "$dir/silo-2.json" <<JSON
{"mesh":{"process_role":"silo_host","name":"silo-2"},
 "network":{"host":"127.0.0.1","port":0,"primary_host":"127.0.0.1","primary_port":$port1},
 "membership":{"shutdown_grace_ms":1500,"dead_publish_ms":1500},
 "log":{"level":"error"}}
JSON
"$node_bin" --config "$dir/silo-2.json" --app echo --admin-port 0 > "$dir/silo-2.log" 2>&1 &
pid2=$!
pids+=($pid2)
wait_for_line "$dir/silo-2.log" '^ACTIVE' 20 || fail "silo-2 printed no ACTIVE line"
admin=$(sed -n 's/^ADMIN //p' "$dir/silo-2.log")
[ -n "$admin" ] || fail "silo-2 printed no ADMIN line"
silo2=$(sed -n 's/^ADDR //p' "$dir/silo-2.log")
base="http://$admin"

# -- Active -----------------------------------------------------------------------
[ "$(get "$base/healthz/live")" = "live" ] || fail "/healthz/live is not 200 live"
ready_ok=0
for _ in $(seq 1 50); do # membership shows the other silo Active shortly after ACTIVE
  if [ "$(get "$base/healthz/ready")" = "ready" ] \
     && [ "$(get "$base/cluster/members" | grep -c '"status": "Active"')" = "2" ]; then
    ready_ok=1
    break
  fi
  sleep 0.1
done
[ $ready_ok = 1 ] || fail "silo-2 is not ready with two Active members: $(code_of "$base/healthz/ready"); $(get "$base/cluster/members")"
members=$(get "$base/cluster/members") || fail "/cluster/members did not answer"
echo "$members" | grep -q "\"self\": \"$silo2\"" || fail "/cluster/members does not name silo-2: $members"
metrics=$(get "$base/metrics") || fail "/metrics did not answer"
for line in "# TYPE cafmesh_deliveries_total counter" \
            "# TYPE cafmesh_router_in_flight gauge" \
            "# TYPE cafmesh_delivery_latency_seconds histogram" \
            "# TYPE cafmesh_quiescence_hold_seconds summary" \
            "# TYPE cafmesh_peer_refusals_total counter" \
            "cafmesh_peer_refusals_total{silo=\"$silo2\",reason=\"secret\"} 0" \
            "cafmesh_ready{silo=\"$silo2\"} 1" \
            "cafmesh_membership_silos{silo=\"$silo2\",status=\"Active\"} 2" \
            "cafmesh_quiescence_hold_seconds_count{silo=\"$silo2\"} 0" \
            "cafmesh_router_in_flight{silo=\"$silo2\"} 0"; do
  echo "$metrics" | grep -qxF "$line" || fail "/metrics has no line '$line'"
done

# -- graceful stop, scraped until the process is gone ----------------------------------
kill -STOP "${pids[0]}"
kill -TERM "$pid2"
: > "$dir/ready.txt"
n=0
while kill -0 "$pid2" 2>/dev/null; do
  code_of "$base/healthz/ready" >> "$dir/ready.txt"
  if curl -sf -m 2 "$base/metrics" > "$dir/scrape.tmp"; then
    n=$((n + 1))
    mv "$dir/scrape.tmp" "$dir/scrape-$n.txt"
  fi
done
wait "$pid2"
rc=$?
[ $rc -eq 0 ] || fail "silo-2 exited $rc after SIGTERM"
# Readiness: 200 until the stopping signal arrived, then 503 and never 200 again.
sequence=$(awk '{print $1}' "$dir/ready.txt" | grep -v '^000$' | uniq | tr '\n' ' ')
case "$sequence" in
  "503 "|"200 503 ") ;;
  *) fail "readiness after SIGTERM went '$sequence' (want 200 until the signal, then 503 only)" ;;
esac
grep -q '^503 stopping$' "$dir/ready.txt" || fail "no 503 'stopping' answer: $(sort "$dir/ready.txt" | uniq -c | tr '\n' ';')"
hold_seen=0
for f in "$dir"/scrape-*.txt; do
  [ -e "$f" ] || continue
  if grep -qxF "cafmesh_quiescence_hold_seconds_count{silo=\"$silo2\"} 1" "$f"; then
    grep -qxF "cafmesh_ready{silo=\"$silo2\"} 0" "$f" || fail "$f: hold recorded but still ready"
    hold_seen=1
  fi
done
[ $hold_seen = 1 ] || fail "none of $n scrapes after SIGTERM shows the quiescence hold recorded"
echo "admin_endpoint_run: $n scrapes after SIGTERM; readiness '$sequence'; answers: $(sort "$dir/ready.txt" | uniq -c | tr '\n' ';')"

kill -CONT "${pids[0]}"
kill -TERM "${pids[0]}"
wait "${pids[0]}"
rc=$?
[ $rc -eq 0 ] || fail "silo-1 exited $rc after SIGTERM"
echo "admin_endpoint_run: PASS"
rm -rf "$dir"
