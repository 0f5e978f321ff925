# Sourced by the integration scripts that run `cafmesh-node --app echo` silos numbered 1, 2, 3
# (process_chaos_run.sh, same_port_restart_run.sh, kill_detection_run.sh): silo i runs with
# "$dir/silo-$i.json" and appends its output to "$dir/silo-$i.log". The sourcing script sets
# `node_bin` and `dir`, declares the array `node_pid` and defines `fail MESSAGE`.

node_starts=(0 0 0 0) # starts of each silo so far: ACTIVE lines its log is to show

start_node() { # index: start silo-INDEX in the background
  "$node_bin" --config "$dir/silo-$1.json" --app echo >> "$dir/silo-$1.log" 2>&1 &
  node_pid[$1]=$!
  node_starts[$1]=$((node_starts[$1] + 1))
}

wait_active() { # index: until silo-INDEX's latest start printed ACTIVE, at most 30 s
  for _ in $(seq 1 300); do
    [ "$(grep -c '^ACTIVE' "$dir/silo-$1.log" 2> /dev/null)" -ge "${node_starts[$1]}" ] && return 0
    sleep 0.1
  done
  fail "silo-$1 is not ACTIVE (start ${node_starts[$1]}) within 30 s"
}
