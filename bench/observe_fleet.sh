#!/bin/bash
# observe_fleet.sh DIR [NCLUSTERS [NODES [PODS_PER_NODE]]] [-- RP...]: NCLUSTERS live clusters
# (default 20), all served by one fakekube (tests/fakekube) that holds NODES nodes (default
# 100) and NODES x PODS_PER_NODE pods (default 30) shaped as an EKS API server lists them
# (bench/gen_kube_state.py: about 10 KB a node, 5 KB a pod). Runs `rightplace plan` of each
# build given (default build/rightplace), which reads every cluster's nodes and pods, and
# prints its wall time and peak RSS beside the bytes the server sent (bench/RESULTS.md).
# Never asserts.
set -eu
d=$1; shift
nc=20; nn=100; pp=30
[ $# -gt 0 ] && [ "$1" != -- ] && { nc=$1; shift; }
[ $# -gt 0 ] && [ "$1" != -- ] && { nn=$1; shift; }
[ $# -gt 0 ] && [ "$1" != -- ] && { pp=$1; shift; }
[ $# -gt 0 ] && [ "$1" = -- ] && shift
src=$(cd "$(dirname "$0")/.." && pwd)
builds=("$@")
[ ${#builds[@]} -gt 0 ] || builds=("$src/build/rightplace")
rm -rf $d; mkdir -p $d
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=ca -keyout $d/ca.key -out $d/ca.crt 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=fk -keyout $d/server.key -out $d/server.csr 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >$d/ext
openssl x509 -req -in $d/server.csr -CA $d/ca.crt -CAkey $d/ca.key -CAcreateserial -days 2 -extfile $d/ext -out $d/server.crt 2>/dev/null
echo obs-token >$d/tokens
python3 $src/bench/gen_kube_state.py $nn $pp > $d/state.json
echo '[]' > $d/faults.json
python3 $src/tests/fakekube/fakekube.py --cert $d/server.crt --key $d/server.key --client-ca $d/ca.crt \
  --tokens-file $d/tokens --port-file $d/port --state $d/state.json --faults-file $d/faults.json --log $d/req.log > $d/fk.log 2>&1 &
echo $! > $d/pid
trap 'kill "$(cat $d/pid)" 2>/dev/null || true' EXIT
for i in $(seq 300); do [ -s $d/port ] && break; sleep 0.1; done
{
echo "apiVersion: v1
kind: Config
clusters:
- name: fk
  cluster: {server: 'https://127.0.0.1:$(cat $d/port)', certificate-authority: $d/ca.crt}
users:
- name: u
  user: {token: obs-token}
contexts:"
for i in $(seq -w 0 $((nc - 1))); do
  echo "- name: c$i
  context: {cluster: fk, user: u}"
done
} > $d/kubeconfig
r=$d/repo; mkdir -p $r/fleet
for i in $(seq -w 0 $((nc - 1))); do cat > $r/fleet/c$i.yaml <<Y
apiVersion: rightplace.dev/v1alpha1
kind: Cluster
metadata: {name: c$i}
spec:
  kubeconfig: {context: c$i}
  autoscaler: {type: none}
Y
done
cat > $r/cm.yaml <<Y
apiVersion: v1
kind: ConfigMap
metadata: {name: x, namespace: default}
Y
git -C $r init -q -b main && git -C $r add -A && git -C $r -c user.name=s -c user.email=s@x commit -q -m init
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
