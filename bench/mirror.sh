#!/usr/bin/env bash
# mirror.sh - passes in URL mode: rightplace mirroring a remote repository into its state
# directory, as an operator runs it against a hosted repository.
#
#   bench/mirror.sh [-b BUILD_DIR] [-w WORK_DIR] [-T] [SIZE [PASSES]]
#                                              (defaults: 10000x100, 40 passes)
#
# Writes the fleet's source with bench/gen_fleet.py into a bare repository (the remote, reached
# as file://), then:
#   first   `reconcile --once --no-apply --repo file://...`: the clone, the first pass and the
#           push of the first deploy commit, with rightplace's own times for the clone (the log
#           line "cloning" to the first "fetched") and the commit phase (which pushes)
#   floors  `git clone --bare --no-local` of the same remote, and `git push` of the same deploy
#           commit from the mirror into a fresh copy of the remote (the git CLI, in the same run)
#   passes  PASSES passes, each after a commit that changes one workload pushed to the remote:
#           wall time, commit phase, how many packs the mirror holds after the pass, and the
#           packs merged (rc_git_pack_upkeep: past 16 packs the small ones become one, and past
#           about 2,048 loose objects those too)
# Prints the figures. Asserts nothing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/fleet_repo.sh"
bench_args "${TMPDIR:-/tmp}/rp-mirror" "$@"
size=${rest[0]:-10000x100}
passes=${rest[1]:-40}
rp="$build/rightplace"
[ -x "$rp" ] || { echo "mirror.sh: $rp not built (cmake --build $build)" >&2; exit 2; }

dir="$work/$size"
rm -rf "$dir"
mkdir -p "$dir"
fleet_repo "$dir/src" "$size" >/dev/null
git clone -q --bare "$dir/src" "$dir/remote.git"
url="file://$dir/remote.git"
git clone -q "$dir/remote.git" "$dir/wc"
git -C "$dir/wc" config gc.auto 0

now() { date +%s.%N; }
# the seconds between the first log lines matching $2 and $3 of JSON log $1
between() {
    python3 - "$@" <<'EOF'
import datetime, json, sys
path, a, b = sys.argv[1:4]
ta = tb = None
for line in open(path):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    t = datetime.datetime.strptime(j["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
    if ta is None and a in j["msg"]:
        ta = t
    elif ta is not None and tb is None and b in j["msg"]:
        tb = t
print("%.2f" % (tb - ta).total_seconds() if ta and tb else "-")
EOF
}

echo "== $size, remote $url"
t0=$(now)
"${tun[@]}" "$rp" reconcile --once --no-apply --repo "$url" --state-dir "$dir/state" \
    --log-level debug --log-json >"$dir/first.out" 2>"$dir/first.err" || true
t1=$(now)
clone=$(between "$dir/first.err" "cloning" "fetched")
commit=$(grep -o '"msg":"pass phases[^"]*' "$dir/first.err" | grep -o 'commit [0-9]* ms' || echo "-")
printf 'first pass: %.2f s (clone %s s, %s, which pushes the deploy commit)\n' \
    "$(echo "$t1 - $t0" | bc)" "$clone" "$commit"

t0=$(now)
git clone -q --bare --no-local "$url" "$dir/floor.git"
t1=$(now)
printf 'git clone --bare --no-local: %.2f s\n' "$(echo "$t1 - $t0" | bc)"
deploy=$(git -C "$dir/remote.git" rev-parse deploy)
git clone -q --bare "$dir/src" "$dir/floor-push.git"
t0=$(now)
git -C "$dir/state/repo.git" push -q "file://$dir/floor-push.git" "$deploy:refs/heads/deploy"
t1=$(now)
printf 'git push of the same deploy commit: %.2f s\n' "$(echo "$t1 - $t0" | bc)"

n=${size%x*}
echo "pass  wall  commit  packs  merged"
for i in $(seq 1 "$passes"); do
    python3 "$here/gen_fleet.py" "$dir/wc" "$n" "${size#*x}" --change $((i * 7 % n)) >/dev/null
    git -C "$dir/wc" commit -q -a -m "change $i"
    git -C "$dir/wc" push -q origin main
    t0=$(now)
    "${tun[@]}" "$rp" reconcile --once --no-apply --repo "$url" --state-dir "$dir/state" \
        --log-level debug >"$dir/pass.out" 2>"$dir/pass.err" || true
    t1=$(now)
    c=$(grep -o 'commit [0-9]* ms' "$dir/pass.err" | tail -1 || true)
    m=$(grep -o 'packed [0-9]* packs and [0-9]* loose[^(]*([0-9]* ms)' "$dir/pass.err" || true)
    printf '%4d  %.2f  %s  %d  %s\n' "$i" "$(echo "$t1 - $t0" | bc)" "${c:-?}" \
        "$(ls "$dir/state/repo.git/objects/pack/"*.pack | wc -l)" "${m:--}"
done
