# fake_fleet.sh - sourced by the benches that read live clusters from one fakekube
# (tests/fakekube): observe_stall.sh, observe_fleet.sh, exec_plugins.sh.
#
#   fake_kube_start DIR STATE_JSON TOKEN   certificates made in DIR (a CA, a server certificate
#                                          for 127.0.0.1), fakekube started on STATE_JSON
#                                          accepting TOKEN; its port in DIR/port, and it is
#                                          stopped when the script exits
#   fake_kubeconfig_head DIR               a kubeconfig's first lines: its cluster "fk", the
#                                          server started in DIR (users and contexts follow)
#   fake_token_kubeconfig DIR N TOKEN      DIR/kubeconfig: contexts c00, c01, ... (N of them,
#                                          as seq -w numbers them) on "fk" with bearer TOKEN
#   fake_pod_fleet DIR N NODES PODS [KB]   all of the above for N clusters on one fakekube
#                                          holding bench/gen_kube_state.py's NODES nodes and
#                                          NODES x PODS pods (KB: annotation size), token
#                                          obs-token; the source repository in DIR/repo
#   fake_bench_args VAR... -- "$@"         a bench's arguments: the leading ones, up to "--",
#                                          into VAR... in order (a VAR keeps its default where
#                                          they run out); the builds after "--" into the array
#                                          builds (default build/rightplace)
#   fake_fleet_repo REPO N                 a source repository of N Cluster objects c00, c01,
#                                          ... (each selecting the kubeconfig context of its
#                                          name, no autoscaler) and one ConfigMap, committed

fake_bench_args() {
    local names=() name
    while [ "$1" != -- ]; do names+=("$1"); shift; done
    shift
    for name in "${names[@]}"; do
        if [ $# -eq 0 ] || [ "$1" = -- ]; then break; fi
        printf -v "$name" '%s' "$1"
        shift
    done
    [ $# -gt 0 ] && [ "$1" = -- ] && shift
    builds=("$@")
    [ ${#builds[@]} -gt 0 ] || builds=("$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/rightplace")
}

fake_kube_start() {
    local d=$1 state=$2 token=$3
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=ca \
        -keyout $d/ca.key -out $d/ca.crt 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=fk \
        -keyout $d/server.key -out $d/server.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1\n' >$d/ext
    openssl x509 -req -in $d/server.csr -CA $d/ca.crt -CAkey $d/ca.key -CAcreateserial -days 2 \
        -extfile $d/ext -out $d/server.crt 2>/dev/null
    echo "$token" >$d/tokens
    echo '[]' >$d/faults.json
    python3 "$(dirname "${BASH_SOURCE[0]}")/../tests/fakekube/fakekube.py" --cert $d/server.crt \
        --key $d/server.key --client-ca $d/ca.crt --tokens-file $d/tokens --port-file $d/port \
        --state "$state" --faults-file $d/faults.json --log $d/req.log >$d/fk.log 2>&1 &
    echo $! >$d/pid
    trap "kill \$(cat $d/pid) \$(cat $d/pid-* 2>/dev/null) 2>/dev/null || true" EXIT
    for _ in $(seq 300); do [ -s $d/port ] && break; sleep 0.1; done
}

fake_fleet_repo() {
    local r=$1 n=$2 i
    mkdir -p $r/fleet
    for i in $(seq -w 0 $((n - 1))); do
        printf 'apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata: {name: c%s}\nspec:\n  kubeconfig: {context: c%s}\n  autoscaler: {type: none}\n' \
            $i $i >$r/fleet/c$i.yaml
    done
    printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: default}\n' >$r/cm.yaml
    git -C $r init -q -b main && git -C $r add -A &&
        git -C $r -c user.name=s -c user.email=s@x commit -q -m init
}

fake_kubeconfig_head() {
    printf "apiVersion: v1\nkind: Config\nclusters:\n- name: fk\n  cluster: {server: 'https://127.0.0.1:%s', certificate-authority: %s}\n" \
        "$(cat $1/port)" "$1/ca.crt"
}

fake_token_kubeconfig() {
    local d=$1 n=$2 token=$3 i
    {
        fake_kubeconfig_head $d
        printf 'users:\n- name: u\n  user: {token: %s}\ncontexts:\n' "$token"
        for i in $(seq -w 0 $((n - 1))); do
            printf -- '- name: c%s\n  context: {cluster: fk, user: u}\n' $i
        done
    } >$d/kubeconfig
}

fake_pod_fleet() {
    local d=$1 n=$2 nodes=$3 pods=$4 kb=${5:-0}
    python3 "$(dirname "${BASH_SOURCE[0]}")/gen_kube_state.py" $nodes $pods $kb >$d/state.json
    fake_kube_start $d $d/state.json obs-token
    fake_token_kubeconfig $d $n obs-token
    fake_fleet_repo $d/repo $n
}
