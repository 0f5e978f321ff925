#!/usr/bin/env bash
# Memory soak of `cafmesh-demo --processes` (docs/operations.md#memory). Not registered with
# ctest: it runs for minutes. The embedded default scenario at its default rate, for
# DURATION_S seconds, with every silo restarted once per ROLL_PERIOD_S seconds (a rolling
# restart: A, B, C, A, ... one silo every ROLL_PERIOD_S / 3 s, the first one after that long).
# ROLL_PERIOD_S 0: no silo is stopped (the steady state: every process keeps its load).
# Every SAMPLE_S seconds the resident set (VmRSS) of the demo and of every cafmesh-node
# process it started is appended to OUT_DIR/rss.csv: `t_s,pid,process,rss_kib`, `process`
# being `demo` or the node's configuration name (`silo-A`, ...; a restarted silo is a new pid).
# At the end it prints, per process, its RSS WARMUP_S after its first sample (the first
# sample at or after that), its last and its largest RSS from then on, and that growth in
# percent (empty for a process that lived less than WARMUP_S), and exits with the demo's exit
# code. Run it niced: it is meant to share the machine.
#
#   soak_run.sh DEMO_BINARY NODE_BINARY [DURATION_S=1800] [ROLL_PERIOD_S=120] [OUT_DIR]
#   env: SAMPLE_S (10), WARMUP_S (120)
set -u
demo_bin=$1
node_bin=$2
duration_s=${3:-1800}
roll_period_s=${4:-120}
out=${5:-$(mktemp -d /tmp/cafmesh-soak-XXXXXX)}
sample_s=${SAMPLE_S:-10}
warmup_s=${WARMUP_S:-120}
mkdir -p "$out"

# The default scenario with the soak's duration and roll.
"$demo_bin" --print-scenario --duration-s "$duration_s" > "$out/default.json" || exit 2
python3 - "$out/default.json" "$out/scenario.json" "$duration_s" "$roll_period_s" <<'EOF'
import json, sys
src, dst, duration_s, period_s = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
s = json.load(open(src))
silos = s["topology"]["silos"]
if period_s == 0:
    s["roll"]["order"] = []
else:
    step_ms = period_s * 1000 // len(silos)
    # the last stop ends with a step to spare, so that deliveries land while that silo is out
    stops = max(1, (duration_s * 1000 - 2 * step_ms) // step_ms)
    s["roll"]["order"] = [silos[i % len(silos)] for i in range(stops)]
    s["roll"]["first_stop_at_ms"] = step_ms
    s["roll"]["interval_ms"] = step_ms
json.dump(s, open(dst, "w"), indent=2)
EOF
[[ $? -eq 0 ]] || exit 2

"$demo_bin" --processes --node-binary "$node_bin" "$out/scenario.json" \
  --progress plain --report "$out/report.json" > "$out/demo.out" 2> "$out/demo.err" &
demo=$!
echo "t_s,pid,process,rss_kib" > "$out/rss.csv"

rss_of() { # pid -> VmRSS in KiB, empty if gone
  sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status" 2>/dev/null
}

name_of() { # node pid -> its configuration's file name without .json, e.g. silo-A
  tr '\0' '\n' < "/proc/$1/cmdline" 2>/dev/null | grep -m1 '\.json$' | sed 's#.*/##; s#\.json$##'
}

start=$(date +%s)
while kill -0 "$demo" 2>/dev/null; do
  t=$(( $(date +%s) - start ))
  r=$(rss_of "$demo")
  [[ -n $r ]] && echo "$t,$demo,demo,$r" >> "$out/rss.csv"
  for p in $(pgrep -P "$demo"); do
    r=$(rss_of "$p")
    [[ -n $r ]] && echo "$t,$p,$(name_of "$p"),$r" >> "$out/rss.csv"
  done
  sleep "$sample_s"
done
wait "$demo"
rc=$?

echo "soak_run: demo exit $rc after $(( $(date +%s) - start )) s; samples in $out/rss.csv"
python3 - "$out/rss.csv" "$warmup_s" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
warmup = int(sys.argv[2])
by = {}
for r in rows:
    by.setdefault((r["process"], r["pid"]), []).append((int(r["t_s"]), int(r["rss_kib"])))
print("process,pid,first_t_s,last_t_s,rss_at_warmup_kib,last_rss_kib,max_rss_kib,growth_after_warmup_pct")
for (name, pid), xs in sorted(by.items(), key=lambda k: (k[1][0][0], k[0][0])):
    after = [x for x in xs if x[0] - xs[0][0] >= warmup] # its own first WARMUP_S excluded
    base = after[0][1] if after else None
    last = xs[-1][1]
    top = max(v for _, v in (after or xs))
    growth = "" if base is None else "%.1f" % (100.0 * (top - base) / base)
    print(",".join(map(str, [name, pid, xs[0][0], xs[-1][0], base if base else "", last, top,
                             growth])))
EOF
exit $rc
