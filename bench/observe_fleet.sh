#!/bin/bash
# observe_fleet.sh DIR [NCLUSTERS [NODES [PODS_PER_NODE [ANNOTATION_KB]]]] [-- RP...]: NCLUSTERS live clusters
# (default 20), all served by one fakekube (tests/fakekube) that holds NODES nodes (default
# 100) and NODES x PODS_PER_NODE pods (default 30) shaped as an EKS API server lists them
# (bench/gen_kube_state.py: about 10 KB a node, 5 KB a pod, plus ANNOTATION_KB, default 0, on
# each Ray worker pod). Runs `rightplace plan` of each
# build given (default build/rightplace), which reads every cluster's nodes and pods, and
# prints its wall time and peak RSS beside the bytes the server sent (bench/RESULTS.md).
# Never asserts.
set -eu
d=$1; shift
nc=20; nn=100; pp=30; ak=0
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/bench/fake_fleet.sh"
fake_bench_args nc nn pp ak -- "$@"
rm -rf $d; mkdir -p $d
fake_pod_fleet $d $nc $nn $pp $ak
r=$d/repo
printf '%d clusters x %d nodes x %d pods a node; state %d bytes of JSON\n' $nc $nn $pp "$(stat -c %s $d/state.json)"
for rp in "${builds[@]}"; do
    rm -rf "$d/state"
    : > $d/req.log
    st=0
    /usr/bin/time -f '%e %M %U %S' -o $d/time "$rp" plan --repo "$r" --kubeconfig "$d/kubeconfig" \
        --state-dir "$d/state" >"$d/plan.out" 2>"$d/plan.err" || st=$?
    read -r wall rss usr sys < <(tail -1 $d/time)
    printf '%s: plan %s s (CPU %s s user, %s s system), peak RSS %d MB, exit %d, %d requests, %d clusters unreachable\n' "$rp" \
        "$wall" "$usr" "$sys" $((rss / 1024)) "$st" "$(wc -l < $d/req.log)" "$(grep -c 'unreachable:' "$d/plan.err" || true)"
done
