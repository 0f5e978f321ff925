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
