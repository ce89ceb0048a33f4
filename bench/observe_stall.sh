#!/bin/bash
# observe_stall.sh DIR [RP...]: 24 live clusters, 3 of them (c00, c08, c16: one in each round
# of 8) behind a listener that accepts connections and never answers, as a firewalled or
# hung API server does; the other 21 on one fakekube (tests/fakekube). Times `rightplace plan`
# of each build given (default build/rightplace): it reads every cluster, and the stalled
# ones cost their connect timeout, retried (bench/RESULTS.md, note 90). Never asserts.
set -eu
d=$1; shift
src=$(cd "$(dirname "$0")/.." && pwd)
builds=("$@")
[ ${#builds[@]} -gt 0 ] || builds=("$src/build/rightplace")
rm -rf $d; mkdir -p $d
. "$src/bench/fake_fleet.sh"
python3 -c "
import json
objs=[{'apiVersion':'v1','kind':'Node','metadata':{'name':'node-%02d'%i},'status':{'allocatable':{'cpu':'16','memory':'64Gi','pods':'110'},'conditions':[{'type':'Ready','status':'True'}]}} for i in range(20)]
json.dump({'objects':objs},open('$d/state.json','w'))"
fake_kube_start $d $d/state.json obs-token
# a listener that accepts and never answers (a firewalled or hung API server)
python3 -c "
import socket, time
s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(64)
open('$d/stall-port', 'w').write(str(s.getsockname()[1]))
conns = []
while True:
    c, _ = s.accept(); conns.append(c)
" > /dev/null 2>&1 &
echo $! > $d/pid-stall
for i in $(seq 100); do [ -s $d/stall-port ] && break; sleep 0.1; done
{
fake_kubeconfig_head $d
echo "- name: stall
  cluster: {server: 'https://127.0.0.1:$(cat $d/stall-port)', certificate-authority: $d/ca.crt}
users:
- name: u
  user: {token: obs-token}
contexts:"
for i in $(seq -w 0 23); do
  if [ $i = 00 ] || [ $i = 08 ] || [ $i = 16 ]; then c=stall; else c=fk; fi
  echo "- name: c$i
  context: {cluster: $c, user: u}"
done
} > $d/kubeconfig
r=$d/repo
fake_fleet_repo $r 24
for rp in "${builds[@]}"; do
    rm -rf "$d/state"
    s=$(date +%s%N)
    st=0
    "$rp" plan --repo "$r" --kubeconfig "$d/kubeconfig" --state-dir "$d/state" >"$d/plan.out" \
        2>"$d/plan.err" || st=$?
    e=$(date +%s%N)
    printf '%s: plan %d ms, exit %d, %d clusters unreachable\n' "$rp" $(((e - s) / 1000000)) \
        "$st" "$(grep -c 'unreachable:' "$d/plan.err" || true)"
done
