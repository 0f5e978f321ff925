#!/usr/bin/env bash
# S15.07 (SPEC §15 C6): a partition between machines. Network namespaces stand in for
# machines: silo-1, silo-2 and silo-3 (`cafmesh-counter-silo`) in one namespace each, a pure
# client (`cafmesh-counter-client`) and a one-member etcd holding the membership table in a
# fourth, every one joined by a veth pair to a router namespace of its own (10.231.N.2/24 on
# the host's side, 10.231.N.1 on the router's; N = 1..4). Nothing is sent to any other
# address, and nothing outside these namespaces is touched: every name carries this run's
# prefix, and a trap removes the namespaces (their veths with them) and every process in them
# on any exit.
#
# The client sends requests to `node/counter/{0..K-1}` (W in flight, each re-sent while its
# failure is resendable, a DEADLINE_MS deadline each). CUT_AT_S seconds in, silo-3's link is
# cut for CUT_S seconds by policy rules in the router's namespace (MODE `both`: everything
# from and to silo-3 is dropped; `out`: only what silo-3 sends; `in`: only what it receives),
# then restored. silo-3 must stop by itself once it learns that it was declared Dead; the
# script then starts it again on its address, as an operator's supervisor would.
#
# Passes (exit 0; 77 = skipped: not root, no `ip netns` or no etcd) when
# - silo-3's row is Dead in the table (polled every 100 ms) within
#   `network.failure_detection_ms` (10,000 ms) + SLACK_MS (1,000 ms: the table writes, the
#   poll and its etcdctl, a loaded machine) of the cut: the detector declares it Dead
#   `failure_detection_ms` after the last message the others heard from it, which is no
#   later than the cut (docs/behaviour/membership.md#the-failure-detection-bound);
# - silo-3 learns that it is Dead (its log: "membership v{n} shows this silo Dead: stopping
#   non-gracefully") within LEARN_BOUND_S (10 s) of the heal, exits by itself (no signal from
#   the script) within STOP_BOUND_S (40 s: a non-graceful stop's bounded steps) of the heal,
#   and its restart joins with a newer generation;
# - every request ended (lost 0), and each one that ended by its deadline was sent before the
#   Dead declaration to a key whose activation was on silo-3 (its target was only reachable
#   through the cut), and each NACK names silo-3's cut incarnation ("silo {S} departed ...")
#   and was sent before the declaration (its path went through the cut);
# - no grain completed a turn on two activations after the Dead declaration: per key, the
#   turns after it (every silo's turn log, wall-clock ms) come from one activation at a time
#   (no interleaving), and silo-3's cut incarnation completed none for a key that another
#   silo served after the declaration.
# Every figure is printed.
#
#   partition_run.sh SILO_BIN CLIENT_BIN [MODE] [CUT_S]
set -u
silo_bin=$1
client_bin=$2
mode=${3:-both}
cut_s=${4:-20}
cut_at_s=${CUT_AT_S:-5}
keys=${KEYS:-40}
window=${WINDOW:-8}
deadline_ms=${DEADLINE_MS:-30000}
slack_ms=${SLACK_MS:-1000}
stop_bound_s=${STOP_BOUND_S:-40}
learn_bound_s=${LEARN_BOUND_S:-10}
detection_ms=10000 # network.failure_detection_ms, the default the configs below keep
name=partition_run

skip() {
  echo "$name: SKIP: $*"
  exit 77
}
case $mode in both | out | in) ;; *) echo "$name: MODE must be both, out or in" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || skip "needs root to make network namespaces (ip netns)"
command -v ip > /dev/null || skip "ip (Debian package iproute2) is not installed"
command -v etcd > /dev/null || skip "etcd (Debian package etcd-server) is not installed"
command -v etcdctl > /dev/null || skip "etcdctl (Debian package etcd-client) is not installed"

# A prefix of this run: namespace and interface names (at most 15 bytes) unique per run.
p="cmp$(printf '%x' $(($$ % 65536)))$(printf '%02x' $((SRANDOM % 256)))"
router=${p}r
dir=$(mktemp -d /tmp/cafmesh-partition-XXXXXX)
declare -A pid
made=()
client_pid=""
etcd_pid=""

cleanup() {
  for q in "${pid[@]}" $client_pid $etcd_pid; do
    { kill -KILL "$q"; wait "$q"; } 2> /dev/null
  done
  for ns in "${made[@]}"; do
    for q in $(ip netns pids "$ns" 2> /dev/null); do kill -KILL "$q" 2> /dev/null; done
    ip netns del "$ns" 2> /dev/null
  done
  [ -n "${keep_dir:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "$name: FAIL ($mode cut): $*" >&2
  for f in "$dir"/*.log; do
    echo "---- $f (last 25 lines)" >&2
    tail -n 25 "$f" >&2
  done
  keep_dir=1
  echo "$name: logs kept in $dir" >&2
  exit 1
}

now_ms() { date +%s%3N; }
in_ns() { # N command...: runs command in namespace N (1..4)
  local ns=${p}$1
  shift
  ip netns exec "$ns" "$@"
}

# -- the namespaces: a router and four hosts ---------------------------------------------------
ip netns add "$router" 2> /dev/null || skip "cannot make a network namespace (ip netns add)"
made+=("$router")
ip -n "$router" link set lo up
ip netns exec "$router" sysctl -qw net.ipv4.ip_forward=1 || fail "cannot enable forwarding in $router"
for n in 1 2 3 4; do
  ip netns add "${p}$n" || fail "cannot make namespace ${p}$n"
  made+=("${p}$n")
  ip -n "${p}$n" link set lo up
  ip link add "${p}r$n" netns "$router" type veth peer name "${p}h$n" netns "${p}$n" \
    || fail "cannot make the veth pair of ${p}$n"
  ip -n "$router" addr add "10.231.$n.1/24" dev "${p}r$n"
  ip -n "$router" link set "${p}r$n" up
  ip -n "${p}$n" addr add "10.231.$n.2/24" dev "${p}h$n"
  ip -n "${p}$n" link set "${p}h$n" up
  ip -n "${p}$n" route add default via "10.231.$n.1"
done
echo "$name: namespaces ${made[*]} (10.231.1.2 .. 10.231.4.2 through $router)"

cut_link() { # applies MODE's rules for silo-3's link in the router's namespace
  case $mode in
    both | out) ip -n "$router" rule add iif "${p}r3" blackhole pref 100 ;;
  esac
  case $mode in
    both | in) ip -n "$router" rule add to 10.231.3.2 blackhole pref 101 ;;
  esac
}
heal_link() {
  ip -n "$router" rule del pref 100 2> /dev/null
  ip -n "$router" rule del pref 101 2> /dev/null
}

# -- etcd in the client's namespace ------------------------------------------------------------
etcd_url=http://10.231.4.2:2379
ip netns exec "${p}4" etcd --name m0 --data-dir "$dir/etcd" --listen-client-urls "$etcd_url" \
  --advertise-client-urls "$etcd_url" --listen-peer-urls http://10.231.4.2:2380 \
  --initial-advertise-peer-urls http://10.231.4.2:2380 --initial-cluster m0=http://10.231.4.2:2380 \
  --initial-cluster-state new > "$dir/etcd.log" 2>&1 &
etcd_pid=$!
etcdctl_() { in_ns 4 env ETCDCTL_API=3 etcdctl --endpoints "$etcd_url" --dial-timeout 1s \
  --command-timeout 2s "$@"; }
healthy=""
until=$((SECONDS + 20))
while [ "$SECONDS" -lt "$until" ]; do
  etcdctl_ endpoint health > /dev/null 2>&1 && { healthy=1; break; }
  sleep 0.1
done
[ -n "$healthy" ] || fail "etcd is not healthy within 20 s"

# -- silos and the client ------------------------------------------------------------------------
prefix="/cafmesh/partition-$p/"
config() { # name role namespace port
  cat > "$dir/$1.json" <<JSON
{"mesh":{"process_role":"$2","name":"$1"},
 "membership":{"provider":"etcd","etcd_endpoints":["$etcd_url"],"etcd_prefix":"$prefix"},
 "network":{"host":"10.231.$3.2","port":$4},
 "log":{"level":"info"}}
JSON
}
declare -A starts addr
start_silo() { # n: starts silo-n in its namespace on 10.231.n.2:7101, waits until Active
  local n=$1 log
  starts[$n]=$((${starts[$n]:-0} + 1))
  log="$dir/silo-$n-${starts[$n]}.log"
  ip netns exec "${p}$n" "$silo_bin" "$dir/silo-$n.json" "$dir/turns-$n-${starts[$n]}.txt" > "$log" 2>&1 &
  pid[$n]=$!
  local until=$((SECONDS + 30))
  while [ "$SECONDS" -lt "$until" ]; do
    grep -q '^ACTIVE' "$log" 2> /dev/null && break
    kill -0 "${pid[$n]}" 2> /dev/null || fail "silo-$n (start ${starts[$n]}) exited before it was Active"
    sleep 0.1
  done
  grep -q '^ACTIVE' "$log" || fail "silo-$n (start ${starts[$n]}) did not become Active in 30 s"
  addr[$n]=$(sed -n 's/^ADDR //p' "$log" | tail -n 1)
}
generation_of() { echo "${1##*@}"; }
row_status() { # silo address: its row's status in the table, or nothing
  etcdctl_ get "${prefix}row/$1" --print-value-only 2> /dev/null \
    | sed -n 's/.*"status":"\([A-Za-z]*\)".*/\1/p'
}

for n in 1 2 3; do config "silo-$n" silo_host "$n" 7101; done
config client pure_client 4 0
for n in 1 2 3; do start_silo "$n"; done
echo "$name: silos ${addr[1]} ${addr[2]} ${addr[3]}"
cut_addr=${addr[3]}

client_s=$((cut_at_s + cut_s + 25))
ip netns exec "${p}4" "$client_bin" "$dir/client.json" $((client_s * 1000)) "$keys" "$window" "$deadline_ms" \
  > "$dir/client.out" 2> "$dir/client.log" &
client_pid=$!

# -- the cut -------------------------------------------------------------------------------------
sleep "$cut_at_s"
# The cut is in place once its rules are, and is timed from then: silo-3's traffic may pass
# until they are (they took 13 to 122 ms in the runs of 2026-12-06).
t_cut_start=$(now_ms)
cut_link
t_cut=$(now_ms)
echo "$name: $mode cut of silo-3 ($cut_addr) at $t_cut (its rules took $((t_cut - t_cut_start)) ms)"
t_dead=""
t_stop=""
stop_code=""
until_heal=$((t_cut + cut_s * 1000))
while [ "$(now_ms)" -lt "$until_heal" ]; do
  if [ -z "$t_dead" ] && [ "$(row_status "$cut_addr")" = Dead ]; then
    t_dead=$(now_ms)
    echo "$name: $cut_addr Dead in the table $((t_dead - t_cut)) ms after the cut"
  fi
  if [ -z "$t_stop" ] && ! kill -0 "${pid[3]}" 2> /dev/null; then
    t_stop=$(now_ms)
    wait "${pid[3]}"
    stop_code=$?
    echo "$name: silo-3 exited $stop_code during the cut, $((t_stop - t_cut)) ms after it"
  fi
  sleep 0.1
done
t_heal=$(now_ms)
heal_link
echo "$name: healed at $t_heal ($((t_heal - t_cut)) ms after the cut)"
[ -n "$t_dead" ] || fail "$cut_addr is not Dead in the table ${cut_s} s after the cut"
# The detector's bound (docs/behaviour/membership.md#the-failure-detection-bound): Dead
# failure_detection_ms after the last message heard from silo-3, at or before the cut, plus
# the table writes; SLACK_MS for those and the poll.
[ $((t_dead - t_cut)) -le $((detection_ms + slack_ms)) ] \
  || fail "$cut_addr Dead $((t_dead - t_cut)) ms after the cut, beyond ${detection_ms} + ${slack_ms} ms"
if [ -z "$t_stop" ]; then
  until=$((SECONDS + stop_bound_s))
  while [ "$SECONDS" -lt "$until" ]; do
    kill -0 "${pid[3]}" 2> /dev/null || break
    sleep 0.1
  done
  kill -0 "${pid[3]}" 2> /dev/null && fail "silo-3 did not stop by itself within ${stop_bound_s} s of the heal"
  t_stop=$(now_ms)
  wait "${pid[3]}"
  stop_code=$?
  echo "$name: silo-3 exited $stop_code by itself $((t_stop - t_heal)) ms after the heal"
fi
learned=$(grep -m1 'shows this silo Dead: stopping' "$dir/silo-3-1.log" | cut -d' ' -f1)
[ -n "$learned" ] || fail "silo-3 stopped without saying that membership shows it Dead ($(grep -c "shows this silo Dead" "$dir/silo-3-1.log") lines)"
t_learn=$(date -d "${learned/T/ }" +%s%3N) # spdlog writes local time
echo "$name: silo-3 learned that it is Dead $((t_learn - t_heal)) ms after the heal and began its stop"
[ $((t_learn - t_heal)) -le $((learn_bound_s * 1000)) ] \
  || fail "silo-3 learned that it is Dead $((t_learn - t_heal)) ms after the heal, beyond ${learn_bound_s} s"
t_restart=$(now_ms)
start_silo 3
echo "$name: silo-3 restarted as ${addr[3]}, Active $(($(now_ms) - t_restart)) ms after its start"
[ "$(generation_of "${addr[3]}")" -gt "$(generation_of "$cut_addr")" ] \
  || fail "the restarted silo-3 ${addr[3]} has no newer generation than $cut_addr"

# -- the client's outcome ------------------------------------------------------------------------
until=$((SECONDS + client_s + deadline_ms / 1000 + 30))
while [ "$SECONDS" -lt "$until" ]; do
  kill -0 "$client_pid" 2> /dev/null || break
  sleep 0.1
done
kill -0 "$client_pid" 2> /dev/null && fail "the client did not end: some request never ended (lost)"
wait "$client_pid"
client_rc=$?
client_pid=""
result=$(grep '^sent ' "$dir/client.out")
echo "$name: client (exit $client_rc): ${result:-no result line}"
[ -n "$result" ] || fail "the client printed no result"
read -r _ sent _ answered _ nacked _ unanswered <<< "$result"
[ $((answered + nacked + unanswered)) = "$sent" ] || fail "lost: $result"
# Deadlines: only requests sent before the declaration to a key served on silo-3.
cut_keys=$(awk -v t="$t_cut" '$1 <= t {print $2}' "$dir/turns-3-1.txt" | sort -u)
by_deadline=0
bad_deadline=0
while read -r line; do
  by_deadline=$((by_deadline + 1))
  key=$(echo "$line" | sed -n 's/.*key \([0-9]*\) .*/\1/p')
  sent_ms=$(echo "$line" | sed -n 's/.* sent_ms \([0-9]*\) .*/\1/p')
  if ! echo "$cut_keys" | grep -qx "$key" || [ "$sent_ms" -gt "$t_dead" ]; then
    bad_deadline=$((bad_deadline + 1))
    echo "$name: by its deadline, not through the cut: $line" >&2
  fi
done < <(grep '^request failed' "$dir/client.log" | grep -i 'deadline')
echo "$name: $(echo "$cut_keys" | grep -c .) of $keys keys on silo-3 at the cut; $by_deadline requests ended by their deadline, $bad_deadline of them not through the cut"
[ "$bad_deadline" = 0 ] || fail "$bad_deadline requests ended by their deadline although their target was reachable"
# NACKs: each for a request sent before the declaration whose path went through silo-3's
# cut incarnation (its grain, hub or gateway there: "silo {silo-3} departed ...; its outcome
# is unknown").
bad_nack=0
while read -r line; do
  sent_ms=$(echo "$line" | sed -n 's/.* sent_ms \([0-9]*\) .*/\1/p')
  if ! echo "$line" | grep -qF "silo $cut_addr departed" || [ "$sent_ms" -gt "$t_dead" ]; then
    bad_nack=$((bad_nack + 1))
    echo "$name: NACKed, not through the cut: $line" >&2
  fi
done < <(grep '^request failed' "$dir/client.log" | grep -vi 'deadline')
echo "$name: $nacked requests NACKed, $bad_nack of them not through the cut"
[ "$bad_nack" = 0 ] || fail "$bad_nack requests NACKed although their target was reachable"

# -- one activation at a time after the Dead declaration -----------------------------------------
# Every turn after t_dead as "key time activation", sorted by key and time; an activation is
# (silo, start). A key whose turns switch back to an activation they had left, or that silo-3's
# cut incarnation and another activation both served, had two activations completing turns.
for f in "$dir"/turns-*.txt; do
  a=$(basename "$f" .txt)
  awk -v t="$t_dead" -v a="${a#turns-}" '$1 > t {print $2, $1, a}' "$f"
done | sort -k1,1n -k2,2n > "$dir/turns-after.txt"
double=$(awk '
  { if ($1 != key) { key = $1; delete seen; last = "" }
    if ($3 != last) { if ($3 in seen) { print key; } seen[$3] = 1; last = $3 } }
' "$dir/turns-after.txt" | sort -u)
cut_after=$(awk '$3 == "3-1" {print $1}' "$dir/turns-after.txt" | sort -u)
for key in $cut_after; do
  awk -v k="$key" '$1 == k && $3 != "3-1"' "$dir/turns-after.txt" | grep -q . && double+=" $key"
done
echo "$name: turns after the declaration: $(wc -l < "$dir/turns-after.txt") ($(echo "$cut_after" | grep -c .) keys on silo-3's cut incarnation)"
[ -z "$(echo $double)" ] || fail "keys with two activations completing turns after the Dead declaration: $double"
[ "$client_rc" = 0 ] || [ "$unanswered" -gt 0 ] || [ "$nacked" -gt 0 ] || fail "the client exited $client_rc"

# -- stop ------------------------------------------------------------------------------------------
for n in 1 2 3; do
  kill -TERM "${pid[$n]}"
  wait "${pid[$n]}"
  code=$?
  unset "pid[$n]"
  [ "$code" = 0 ] || fail "silo-$n exited $code after SIGTERM"
done
echo "$name: FIGURES mode=$mode cut_s=$cut_s dead_after_ms=$((t_dead - t_cut)) learned_after_heal_ms=$((t_learn - t_heal)) stop_after_heal_ms=$((t_stop - t_heal)) stop_code=$stop_code generation=$(generation_of "$cut_addr")->$(generation_of "${addr[3]}") sent=$sent answered=$answered nacked=$nacked by_deadline=$unanswered"
echo "$name: PASS ($mode cut of ${cut_s} s)"
exit 0
