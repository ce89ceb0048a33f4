#!/usr/bin/env bash
# ab_first_pass.sh - the first pass of two builds of rightplace, back to back, on one fleet.
#
#   bench/ab_first_pass.sh [-w WORK_DIR] [-r ROUNDS] BUILD_A BUILD_B [SIZE]   SIZE = NxC
#   default size 10000x100, 2 rounds
#
# Writes a source repository with bench/gen_fleet.py (as bench/e2e.sh does; its objects stay
# loose: gc.auto = 0), then, ROUNDS times, for A then B: a fresh copy of the repository and
# `rightplace reconcile --once --no-apply` on it (wall time and peak RSS from /usr/bin/time,
# phase times from the debug log, the deploy tree id). Beside them, in the same run: a bare
# libyaml scan of the source's YAML (BUILD_A/bench/bench_yaml_scan). Checks that both builds
# wrote the same deploy tree and that `git fsck` passes on B's; prints one markdown row per
# pass.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
work="${TMPDIR:-/tmp}/rp-ab"
rounds=2
while getopts "w:r:" opt; do
    case $opt in
    w) work=$OPTARG ;;
    r) rounds=$OPTARG ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || { echo "usage: $0 [-w DIR] [-r ROUNDS] BUILD_A BUILD_B [SIZE]" >&2; exit 2; }
a=$1 b=$2 size=${3:-10000x100}
for f in "$a/rightplace" "$b/rightplace" "$a/bench/bench_yaml_scan"; do
    [ -x "$f" ] || { echo "ab_first_pass.sh: $f not built" >&2; exit 2; }
done
. "$here/fleet_repo.sh"
rm -rf "$work"
mkdir -p "$work"
src="$work/src"
fleet_repo "$src" "$size"
scan_s=$(find "$src" -name '*.yaml' -not -path '*/.git/*' | "$a/bench/bench_yaml_scan" |
    sed -n 's/.*scan_s \([0-9.]*\).*/\1/p')
echo "size $size, scan floor ${scan_s} s, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| round | build | wall | RSS | load ms | place ms | render ms | diff ms | commit ms | tree |"
echo "|---|---|---|---|---|---|---|---|---|---|"
declare -A tree
for r in $(seq 1 "$rounds"); do
    for side in A B; do
        bin=$a
        [ $side = B ] && bin=$b
        repo="$work/run-$side"
        rm -rf "$repo"
        cp -a "$src" "$repo"
        /usr/bin/time -f "%e %M" -o "$work/time" "$bin/rightplace" reconcile --repo "$repo" \
            --once --no-apply --log-level debug >"$work/out" 2>"$work/err"
        read -r wall rss <"$work/time"
        ph=$(sed -n 's/.*pass phases: //p' "$work/err" | tail -1)
        ms() { sed -n "s/.*$1 \([0-9]*\) ms.*/\1/p" <<<"$ph"; }
        t=$(git -C "$repo" rev-parse 'deploy^{tree}')
        tree[$side]=$t
        printf '| %s | %s | %s s | %.0f MB | %s | %s | %s | %s | %s | %.12s |\n' "$r" "$side" \
            "$wall" "$(awk -v k="$rss" 'BEGIN { print k / 1024 }')" "$(ms load)" "$(ms place)" \
            "$(ms render)" "$(ms diff)" "$(ms commit)" "$t"
    done
    [ "${tree[A]}" = "${tree[B]}" ] || { echo "deploy trees differ" >&2; exit 1; }
done
git -C "$work/run-B" fsck --no-dangling >/dev/null && echo && echo "git fsck: ok (B)"
