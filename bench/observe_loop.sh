#!/bin/bash
# observe_loop.sh DIR [NCLUSTERS [NODES [PODS_PER_NODE [PASSES]]]] [-- RP...]: loop mode
# (`reconcile --interval 1h --no-apply`, each pass after the first started by SIGHUP) against
# NCLUSTERS live clusters (default 20) served by one fakekube holding NODES nodes (default
# 100) and NODES x PODS_PER_NODE pods (default 30), shaped as observe_fleet.sh makes them;
# PASSES passes (default 5) of each build given (default build/rightplace). Prints per build
# the first pass's observe phase, the later passes' (median), the requests and the bytes of
# answers the server sent for the passes after the first (a watch's stream is not counted in
# bytes: it carries only what changed, here nothing but bookmarks), and the loop's peak RSS.
# Never asserts (bench/RESULTS.md).
set -eu
d=$1; shift
nc=20; nn=100; pp=30; np=5
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/bench/fake_fleet.sh"
fake_bench_args nc nn pp np -- "$@"
rm -rf $d; mkdir -p $d
fake_pod_fleet $d $nc $nn $pp
r=$d/repo
printf '%d clusters x %d nodes x %d pods a node; %d passes\n' $nc $nn $pp $np

# passes the loop has logged so far
passes() { grep -c 'pass phases:' "$d/loop.err" || true; }
wait_passes() {
    for _ in $(seq 6000); do [ "$(passes)" -ge "$1" ] && return 0; sleep 0.05; done
    echo "no pass $1" >&2; return 1
}
for rp in "${builds[@]}"; do
    rm -rf "$d/state"
    : > $d/req.log
    "$rp" reconcile --repo "$r" --kubeconfig "$d/kubeconfig" --state-dir "$d/state" --no-apply \
        --interval 1h --log-level debug 2>"$d/loop.err" &
    pid=$!
    echo $pid > $d/pid-loop
    wait_passes 1
    sleep 1 # the watches start after the first pass's lists
    n1=$(wc -l < $d/req.log)
    for i in $(seq 2 $np); do
        kill -HUP $pid
        wait_passes $i
    done
    hwm=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
    kill -TERM $pid
    wait $pid || true
    read -r reqs bytes < <(tail -n +$((n1 + 1)) $d/req.log | python3 -c '
import json, sys
n = b = 0
for line in sys.stdin:
    r = json.loads(line); n += 1; b += r.get("bytes", 0)
print(n, b)')
    obs=$(grep -o 'observe [0-9]* ms' "$d/loop.err" | awk '{print $2}')
    first=$(echo "$obs" | head -1)
    later=$(echo "$obs" | tail -n +2 | sort -n | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "-")}')
    printf '%s: observe first pass %s ms, later passes %s ms (median of %d); after the first pass %d requests, %.1f MB of answers (%.2f MB a pass); peak RSS %d MB\n' \
        "$rp" "$first" "$later" $((np - 1)) "$reqs" "$(echo "$bytes / 1000000" | bc -l)" \
        "$(echo "$bytes / 1000000 / ($np - 1)" | bc -l)" $((hwm / 1024))
done
