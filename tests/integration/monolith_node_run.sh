#!/usr/bin/env bash
# cafmesh-node runs the monolith role: with `--app echo` it prints ADDR and ACTIVE, and
# SIGTERM stops it gracefully (STOPPED, exit 0).
#   monolith_node_run.sh NODE_BINARY
set -u
node_bin=$1
dir=$(mktemp -d /tmp/cafmesh-monolith-XXXXXX)
. "$(dirname "${BASH_SOURCE[0]}")/node_helpers.sh"
fail() {
  echo "monolith_node_run: FAIL: $*" >&2
  cat "$dir/mono.log" >&2
  kill -KILL "$pid" 2>/dev/null
  exit 1
}
node_config mono monolith 0
"$node_bin" --config "$dir/mono.json" --app echo > "$dir/mono.log" 2>&1 &
pid=$!
wait_for_line "$dir/mono.log" '^ACTIVE' 20 || fail "no ACTIVE line"
grep -q '^ADDR ' "$dir/mono.log" || fail "no ADDR line"
kill -TERM "$pid"
wait "$pid"
rc=$?
[ $rc -eq 0 ] || fail "exit $rc after SIGTERM"
grep -q '^STOPPED' "$dir/mono.log" || fail "no STOPPED line"
echo "monolith_node_run: PASS (ACTIVE, SIGTERM, STOPPED, exit 0)"
rm -rf "$dir"
