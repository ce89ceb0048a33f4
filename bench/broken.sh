#!/usr/bin/env bash
# broken.sh - a commit that breaks many files at once, on one or two builds of rightplace.
#
#   bench/broken.sh [-w WORK_DIR] [-r ROUNDS] [-k BROKEN] BUILD_A [BUILD_B] [SIZE]
#   default size 10000x100, 2500 files broken, 2 rounds
#
# Writes a source repository with bench/gen_fleet.py (as bench/e2e.sh does) and commits a
# second commit on it that puts a line of invalid YAML at the top of the first BROKEN job files
# (by path). Then, ROUNDS times, for each build: a fresh copy of the repository at the first
# commit, `rightplace reconcile --once --no-apply` on it (the first pass: it makes the deploy
# head and the state directory, as that build writes them), the branch moved to the breaking
# commit, and the pass timed ("break"); then the branch moved to a third commit that changes
# one workload the break left alone, and that pass timed ("next": what each later pass pays
# while the files stay broken). Each: wall time and peak RSS (/usr/bin/time), phase times and
# what the load parsed and took from the parse cache (debug log), the files reported as not
# loaded.
# Prints one markdown row per timed pass. Asserts nothing; builds take turns, so that a busy
# machine weighs on both.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
work="${TMPDIR:-/tmp}/rp-broken"
rounds=2
broken=2500
while getopts "w:r:k:" opt; do
    case $opt in
    w) work=$OPTARG ;;
    r) rounds=$OPTARG ;;
    k) broken=$OPTARG ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-w DIR] [-r ROUNDS] [-k BROKEN] BUILD_A [BUILD_B] [SIZE]" >&2; exit 2; }
builds=("$1")
shift
if [ $# -ge 1 ] && [ -d "$1" ]; then
    builds+=("$1")
    shift
fi
size=${1:-10000x100}
for b in "${builds[@]}"; do
    [ -x "$b/rightplace" ] || { echo "broken.sh: $b/rightplace not built" >&2; exit 2; }
done
. "$here/fleet_repo.sh"
rm -rf "$work"
mkdir -p "$work"
src="$work/src"
fleet_repo "$src" "$size"
base=$(git -C "$src" rev-parse HEAD)
git -C "$src" ls-files 'jobs/*' | sort | awk -v k="$broken" 'NR <= k' |
    (cd "$src" && xargs -r -n 500 sed -i '1i broken: [unclosed')
git -C "$src" commit -q -a -m "break $broken files"
brk=$(git -C "$src" rev-parse HEAD)
# then one workload changed that is not among them (the last job file by path), the broken
# files left as they are: what every later pass pays while they stay broken
n=${size%x*}
c=${size#*x}
python3 "$here/gen_fleet.py" "$src" "$n" "$c" --change $((n - 1)) >/dev/null
git -C "$src" commit -q -a -m "change one workload"
next=$(git -C "$src" rev-parse HEAD)

# timed PASS: a --once pass on $run, one table row
timed() {
    local st=0 wall rss load render parsed taken nerr
    /usr/bin/time -f "%e %M" -o "$work/time" "$rp" reconcile --repo "$run" --once --no-apply \
        --log-level debug >"$work/out" 2>"$work/err" || st=$?
    read -r wall rss < <(tail -n 1 "$work/time") # after "Command exited with ..." when not 0
    load=$(sed -n 's/.*pass phases:.* load \([0-9]*\) ms.*/\1/p' "$work/err")
    render=$(sed -n 's/.*pass phases:.* render \([0-9]*\) ms.*/\1/p' "$work/err")
    parsed=$(sed -n 's/.*load: \([0-9]*\) files parsed.*/\1/p' "$work/err")
    taken=$(sed -n 's/.*parsed, \([0-9]*\) taken from the parse cache.*/\1/p' "$work/err")
    nerr=$(grep -c "warning: .*(placements of its objects are kept\|warning: .*(not loaded)" \
        "$work/err" || true)
    echo "| $b | $r | $1 | $nerr (exit $st) | $wall s | $((rss / 1024)) MB | $load ms | $render ms | $parsed | $taken |"
}

echo "| build | round | pass | files broken | wall | peak RSS | load | render | parsed | taken from the parse cache |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for r in $(seq 1 "$rounds"); do
    for b in "${builds[@]}"; do
        rp="$b/rightplace"
        run="$work/run"
        rm -rf "$run"
        cp -a "$src" "$run"
        git -C "$run" update-ref refs/heads/main "$base"
        "$rp" reconcile --repo "$run" --once --no-apply >/dev/null 2>&1
        git -C "$run" update-ref refs/heads/main "$brk"
        timed break
        git -C "$run" update-ref refs/heads/main "$next"
        timed next
    done
done
