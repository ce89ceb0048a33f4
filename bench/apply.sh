#!/bin/sh
# bench/apply.sh - 1,000 ConfigMaps applied to one API server (tests/fakekube/fakekube.py,
# started here) by rightplace's apply path and by `kubectl apply --server-side`, in the same
# run against the same server, each into its own fresh namespace. Prints objects/s for both.
#
#   bench/apply.sh [BUILD_DIR] [N] [CONCURRENCY]      (defaults: build 1000 8)
#
# Needs openssl, python3 and kubectl on PATH. Also prints the fake server's own ceiling
# (requests it answered per second of its CPU time) so that a server-bound figure is seen
# as such.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
n=${2:-1000}
conc=${3:-8}
dir=$(mktemp -d /tmp/rp-bench-apply-XXXXXX)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    [ -n "${KEEP:-}" ] && echo "kept $dir" || rm -rf "$dir"
}
trap cleanup EXIT INT TERM

# certificates: a CA, the server's (127.0.0.1), nothing else (a bearer token authenticates)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -subj /CN=bench-ca -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=fakekube \
    -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >"$dir/ext"
openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
    -CAcreateserial -days 1 -extfile "$dir/ext" -out "$dir/server.crt" 2>/dev/null
echo bench-token >"$dir/tokens"

python3 "$src/tests/fakekube/fakekube.py" --cert "$dir/server.crt" --key "$dir/server.key" \
    --client-ca "$dir/ca.crt" --tokens-file "$dir/tokens" --port-file "$dir/port" \
    --log "$dir/requests.log" &
pid=$!
i=0
while [ ! -s "$dir/port" ]; do
    i=$((i + 1)); [ $i -lt 100 ] || { echo "fakekube did not start" >&2; exit 1; }
    sleep 0.1
done
port=$(cat "$dir/port")
cat >"$dir/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: https://127.0.0.1:$port
    certificate-authority: $dir/ca.crt
users:
- name: bench
  user:
    token: bench-token
contexts:
- name: fake
  context: {cluster: fake, user: bench}
current-context: fake
EOF

# the fake server's CPU seconds so far (utime + stime)
cpu() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$pid/stat"; }

# rightplace
c0=$(cpu)
${BENCH_WRAP:-} "$build/bench/bench_rc_apply" "$dir/kubeconfig" "$n" "$conc" rp-bench | tee "$dir/rp.out"
c1=$(cpu)
rp_reqs=$(wc -l <"$dir/requests.log")

# kubectl: the same objects in another namespace, one multi-document file
{
    printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kubectl-bench\n'
    i=0
    while [ $i -lt "$n" ]; do
        printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%05d\n' $i
        printf '  namespace: kubectl-bench\ndata:\n  index: "%d"\n' $i
        printf '  payload: some configuration text\n'
        i=$((i + 1))
    done
} >"$dir/objects.yaml"
t0=$(date +%s.%N)
KUBECONFIG=$dir/kubeconfig kubectl apply --server-side --field-manager=bench \
    --validate=false -f "$dir/objects.yaml" >/dev/null
t1=$(date +%s.%N)
c2=$(cpu)
all_reqs=$(wc -l <"$dir/requests.log")
python3 - "$t0" "$t1" "$n" "$dir/rp.out" "$c0" "$c1" "$c2" "$rp_reqs" "$all_reqs" <<'EOF'
import re, sys
t0, t1, n = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]) + 1
rp = open(sys.argv[4]).read()
rp_rate = float(re.search(r"= (\d+) objects/s", rp).group(1))
k_rate = n / (t1 - t0)
def secs(t):  # ps times: seconds
    return float(t)
c0, c1, c2 = (secs(x) for x in sys.argv[5:8])
rp_reqs, all_reqs = int(sys.argv[8]), int(sys.argv[9])
print("kubectl apply --server-side: %d objects in %.3f s = %.0f objects/s" % (n, t1 - t0, k_rate))
print("ratio rightplace / kubectl: %.1fx" % (rp_rate / k_rate))
print("fakekube CPU: %.2f s for rightplace's %d requests (%.0f requests per CPU second), "
      "%.2f s for kubectl's %d" % (c1 - c0, rp_reqs, rp_reqs / max(c1 - c0, 0.01), c2 - c1,
                                    all_reqs - rp_reqs))
EOF
