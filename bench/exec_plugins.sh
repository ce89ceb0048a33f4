#!/bin/bash
# exec_plugins.sh DIR [NCLUSTERS [SECONDS]] [-- RP...]: NCLUSTERS live clusters (default 20) on
# one fakekube (tests/fakekube), each selected through a kubeconfig user whose credential
# plugin takes 0.3 s, as `aws eks get-token` does, and prints a token valid for 15 minutes.
# Runs `rightplace reconcile --interval 2s` of each build given (default build/rightplace) for
# SECONDS (default 20) and prints its passes and the plugin runs they took (bench/RESULTS.md,
# note 93). Never asserts.
set -eu
d=$1; shift
nc=20; secs=20
[ $# -gt 0 ] && [ "$1" != -- ] && { nc=$1; shift; }
[ $# -gt 0 ] && [ "$1" != -- ] && { secs=$1; shift; }
[ $# -gt 0 ] && [ "$1" = -- ] && shift
src=$(cd "$(dirname "$0")/.." && pwd)
builds=("$@")
[ ${#builds[@]} -gt 0 ] || builds=("$src/build/rightplace")
rm -rf $d; mkdir -p $d
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=ca -keyout $d/ca.key -out $d/ca.crt 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=fk -keyout $d/server.key -out $d/server.csr 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >$d/ext
openssl x509 -req -in $d/server.csr -CA $d/ca.crt -CAkey $d/ca.key -CAcreateserial -days 2 -extfile $d/ext -out $d/server.crt 2>/dev/null
echo plugin-token >$d/tokens
python3 $src/bench/gen_kube_state.py 3 6 > $d/state.json
echo '[]' > $d/faults.json
python3 $src/tests/fakekube/fakekube.py --cert $d/server.crt --key $d/server.key --client-ca $d/ca.crt \
  --tokens-file $d/tokens --port-file $d/port --state $d/state.json --faults-file $d/faults.json --log $d/req.log > $d/fk.log 2>&1 &
echo $! > $d/pid
trap 'kill "$(cat $d/pid)" 2>/dev/null || true' EXIT
for i in $(seq 300); do [ -s $d/port ] && break; sleep 0.1; done
cat > $d/plugin.sh <<P
#!/bin/sh
echo "\$*" >> $d/runs
sleep 0.3
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"plugin-token","expirationTimestamp":"%s"}}' "\$(date -u -d '+15 min' +%Y-%m-%dT%H:%M:%SZ)"
P
chmod +x $d/plugin.sh
{
echo "apiVersion: v1
kind: Config
clusters:
- name: fk
  cluster: {server: 'https://127.0.0.1:$(cat $d/port)', certificate-authority: $d/ca.crt}
users:"
for i in $(seq -w 0 $((nc - 1))); do
  echo "- name: u$i
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: $d/plugin.sh, args: [token, --cluster-name, c$i], interactiveMode: Never}"
done
echo "contexts:"
for i in $(seq -w 0 $((nc - 1))); do
  echo "- name: c$i
  context: {cluster: fk, user: u$i}"
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
for rp in "${builds[@]}"; do
    rm -rf "$d/state" "$d/clone"; : > $d/runs
    git clone -q $r $d/clone
    "$rp" reconcile --repo $d/clone --interval 2s --no-apply --kubeconfig "$d/kubeconfig" \
        --state-dir "$d/state" --log-level debug >"$d/loop.out" 2>"$d/loop.err" &
    pid=$!
    sleep "$secs"
    kill -TERM $pid; wait $pid || true
    printf '%s: %d passes in %d s, %d plugin runs for %d clusters\n' "$rp" \
        "$(grep -c 'pass phases' $d/loop.err || true)" "$secs" "$(wc -l < $d/runs)" "$nc"
done
