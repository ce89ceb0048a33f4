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
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/bench/fake_fleet.sh"
fake_bench_args nc secs -- "$@"
rm -rf $d; mkdir -p $d
python3 $src/bench/gen_kube_state.py 3 6 > $d/state.json
fake_kube_start $d $d/state.json plugin-token
cat > $d/plugin.sh <<P
#!/bin/sh
echo "\$*" >> $d/runs
sleep 0.3
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"plugin-token","expirationTimestamp":"%s"}}' "\$(date -u -d '+15 min' +%Y-%m-%dT%H:%M:%SZ)"
P
chmod +x $d/plugin.sh
{
fake_kubeconfig_head $d
echo "users:"
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
r=$d/repo
fake_fleet_repo $r $nc
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
