# Shared by the live cafmesh-node scripts of this folder (sourced; needs `$dir`, the run's
# temporary directory).

node_config() { # name role primary_port: a node configuration in $dir/name.json
  cat > "$dir/$1.json" <<JSON
{"mesh":{"process_role":"$2","name":"$1"},
 "network":{"host":"127.0.0.1","port":0,"primary_host":"127.0.0.1","primary_port":$3},
 "log":{"level":"warning"}}
JSON
}

silo_config() { # name primary_port
  node_config "$1" silo_host "$2"
}

wait_for_line() { # file pattern seconds: 0 once the file has a line matching pattern
  for _ in $(seq 1 $(($3 * 10))); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

free_port() { # a loopback port that refuses connections now (SRANDOM: leaves $RANDOM alone)
  local p
  while :; do
    p=$((20000 + SRANDOM % 40000))
    (exec 3<> "/dev/tcp/127.0.0.1/$p") 2> /dev/null || { echo "$p"; return; }
  done
}

start_etcd_member() { # a one-member etcd in $dir/etcd: sets etcd_pid and etcd_url, or fails
  etcd_url="http://127.0.0.1:$(free_port)"
  local peer="http://127.0.0.1:$(free_port)"
  etcd --name m0 --data-dir "$dir/etcd" --listen-client-urls "$etcd_url" \
    --advertise-client-urls "$etcd_url" --listen-peer-urls "$peer" \
    --initial-advertise-peer-urls "$peer" --initial-cluster "m0=$peer" \
    --initial-cluster-state new > "$dir/etcd.log" 2>&1 &
  etcd_pid=$!
  # Bounded by the clock: each health check may itself wait up to its command timeout.
  local t=$SECONDS
  while [ $((SECONDS - t)) -lt 20 ]; do
    ETCDCTL_API=3 etcdctl --endpoints "$etcd_url" --dial-timeout=1s --command-timeout=2s \
      endpoint health > /dev/null 2>&1 && return 0
    kill -0 "$etcd_pid" 2> /dev/null || fail "etcd exited at its start (its log: $dir/etcd.log)"
    sleep 0.1
  done
  fail "etcd is not healthy within 20 s"
}
