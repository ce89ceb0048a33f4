#!/bin/sh
# bench/apply.sh - N ConfigMaps (and their Namespace) applied to one API server
# (tests/fakekube/fakekube.py, started here) by rightplace's apply path and by
# `kubectl apply --server-side`, then deleted again by rightplace (the prune of a deploy
# commit without them) and by `kubectl delete`, in the same run against the same server, each
# client in its own fresh namespace. Repeated for each write latency of the fake server
# (--write-latency-ms: the service time of each mutating request, standing in for the real
# server's etcd commit; reads are answered at once). Prints objects/s and the ratios.
#
#   bench/apply.sh [BUILD_DIR] [N] [CONCURRENCY] [LATENCIES_MS]
#                                         (defaults: build 1000 8 "0 2 5 10 20")
#
# rightplace runs twice per latency: at its default concurrency (what `rightplace` does
# without --apply-concurrency) and at CONCURRENCY (default 8, the default before it became
# 32). Needs openssl, python3 and kubectl on PATH. Also prints the requests the fake server
# answered per second of its CPU, so that a server-bound figure is seen as such (Python's GIL
# keeps it on one core).
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
n=${2:-1000}
conc=${3:-8}
lats=${4:-0 2 5 10 20}
dir=$(mktemp -d /tmp/rp-bench-apply-XXXXXX)
pid=
npid=
stop() {
    for p in $npid $pid; do
        kill "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    pid=
    npid=
}
cleanup() {
    stop
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

# the kubectl objects: the Namespace and the ConfigMaps in one file, the ConfigMaps alone in
# another (what `kubectl delete` is given)
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
sed '1,5d' "$dir/objects.yaml" >"$dir/configmaps.yaml"

# start a fresh fake server with write latency $1 ms
start() {
    rm -f "$dir/port"
    : >"$dir/requests.log"
    python3 "$src/tests/fakekube/fakekube.py" --cert "$dir/server.crt" --key "$dir/server.key" \
        --client-ca "$dir/ca.crt" --tokens-file "$dir/tokens" --port-file "$dir/port" \
        --log "$dir/requests.log" --write-latency-ms "$1" &
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
    # HTTP/2: nghttpx (Debian: nghttp2-proxy) in front, TLS with h2 in ALPN, when installed
    if command -v nghttpx >/dev/null 2>&1; then
        hport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        : >"$dir/access.log"
        nghttpx --conf=/dev/null -f"127.0.0.1,$hport" -b"127.0.0.1,$port;;tls" --insecure \
            --workers=1 --backend-connections-per-host=256 --accesslog-file="$dir/access.log" \
            --accesslog-format='$remote_port $alpn' --errorlog-file="$dir/nghttpx.log" \
            "$dir/server.key" "$dir/server.crt" >/dev/null 2>&1 &
        npid=$!
        sed "s|server: https://127.0.0.1:$port|server: https://127.0.0.1:$hport|" \
            "$dir/kubeconfig" >"$dir/kubeconfig.h2"
        i=0
        until python3 -c "import socket; socket.create_connection(('127.0.0.1', $hport))" 2>/dev/null; do
            i=$((i + 1)); [ $i -lt 100 ] || { echo "nghttpx did not start" >&2; exit 1; }
            sleep 0.1
        done
    fi
}

# the fake server's CPU seconds so far (utime + stime)
cpu() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$pid/stat"; }
reqs() { wc -l <"$dir/requests.log"; }
now() { date +%s.%N; }

: >"$dir/rows"
for lat in $lats; do
    echo "== write latency $lat ms"
    start "$lat"
    r0=$(reqs); c0=$(cpu)
    ${BENCH_WRAP:-} "$build/bench/bench_rc_apply" "$dir/kubeconfig" "$n" 0 rp-default delete \
        | tee "$dir/rp-default.out"
    r1=$(reqs); c1=$(cpu)
    ${BENCH_WRAP:-} "$build/bench/bench_rc_apply" "$dir/kubeconfig" "$n" "$conc" rp-conc delete \
        | tee "$dir/rp-conc.out"
    h2="-"
    if [ -n "$npid" ]; then
        ${BENCH_WRAP:-} "$build/bench/bench_rc_apply" "$dir/kubeconfig.h2" "$n" 0 rp-h2 delete \
            | tee "$dir/rp-h2.out"
        h2="$(awk '/apply:/ { print $9 }' "$dir/rp-h2.out")/$(awk '/delete:/ { print $9 }' \
            "$dir/rp-h2.out") over $(awk '{ print $1 }' "$dir/access.log" | sort -u | wc -l) conn"
        h2="$h2 ($(awk '$2 == "h2"' "$dir/access.log" | wc -l) of $(wc -l <"$dir/access.log") h2)"
    fi
    t0=$(now)
    KUBECONFIG=$dir/kubeconfig kubectl apply --server-side --field-manager=bench \
        --validate=false -f "$dir/objects.yaml" >/dev/null
    t1=$(now)
    KUBECONFIG=$dir/kubeconfig kubectl delete --wait=false -f "$dir/configmaps.yaml" >/dev/null
    t2=$(now)
    stop
    python3 - "$lat" "$n" "$dir/rp-default.out" "$dir/rp-conc.out" "$t0" "$t1" "$t2" \
        "$c0" "$c1" "$r0" "$r1" "$h2" >>"$dir/rows" <<'EOF'
import re, sys
lat, n = sys.argv[1], int(sys.argv[2])
def rates(path):
    text = open(path).read()
    a = re.search(r"apply: (\d+) objects in ([\d.]+) s = (\d+) objects/s \(concurrency (\d+)", text)
    d = re.search(r"delete: (\d+) objects in ([\d.]+) s = (\d+) objects/s", text)
    return int(a.group(4)), float(a.group(3)), float(d.group(3))
dc, da, dd = rates(sys.argv[3])
cc, ca, cd = rates(sys.argv[4])
t0, t1, t2 = (float(x) for x in sys.argv[5:8])
c0, c1 = float(sys.argv[8]), float(sys.argv[9])
r0, r1 = int(sys.argv[10]), int(sys.argv[11])
ka, kd = (n + 1) / (t1 - t0), n / (t2 - t1)
print("%s\t%d\t%.0f\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%s" % (
    lat, dc, da, cc, ca, ka, dd, cd, kd, da / ka, ca / ka, dd / kd, cd / kd,
    (r1 - r0) / max(c1 - c0, 0.01), sys.argv[12]))
EOF
done

python3 - "$n" "$dir/rows" <<'EOF'
import sys
n = int(sys.argv[1])
print()
print("%d ConfigMaps + 1 Namespace applied, then the %d ConfigMaps deleted; objects/s" % (n, n))
print("(rp D = rightplace at its default concurrency D; kubectl = kubectl apply --server-side,")
print(" kubectl delete --wait=false; x = rightplace / kubectl; fakekube req/CPU-s = requests the")
print(" fake server answered per second of its CPU during the default-concurrency run;")
print(" h2: rightplace at its default concurrency through nghttpx (TLS + h2 in front of the same")
print(" server), apply/delete objects/s, client connections the proxy saw, requests over h2)")
print()
print("| write latency | apply: rp default | rp bench conc | kubectl | x | x |"
      " delete: rp default | rp bench conc | kubectl | x | x | fakekube req/CPU-s | h2 |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for line in open(sys.argv[2]):
    f = line.rstrip("\n").split("\t")
    print("| %s ms | %s (c %s) | %s (c %s) | %s | %s× | %s× | %s | %s | %s | %s× | %s× | %s | %s |" % (
        f[0], f[2], f[1], f[4], f[3], f[5], f[9], f[10], f[6], f[7], f[8], f[11], f[12],
        f[13], f[14]))
EOF
