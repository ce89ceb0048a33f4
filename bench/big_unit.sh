#!/usr/bin/env bash
# big_unit.sh - one unit of many objects, on one or two builds of rightplace.
#
#   bench/big_unit.sh [-w WORK_DIR] BUILD_A [BUILD_B] [OBJECTS]
#   default 200000 objects
#
# Writes a source repository: examples/repo plus OBJECTS ConfigMaps in files of 10,000
# documents (the most a file may hold), all labelled `team: big`, and a SchedulePolicy that
# groups them by that label, so that they make one unit. For each build, in turns, on a fresh
# copy: the first `rightplace reconcile --once --no-apply` (it writes the record, one entry
# of OBJECTS objects), then a one-line change to another file and a pass without the state
# directory, which reads that record from the deploy head, and `rightplace status`. Prints
# the floor (a bare libyaml scan of the ConfigMaps' bytes, build/bench/bench_yaml_scan of
# BUILD_A) and one markdown row per pass: exit status, wall time and peak RSS
# (/usr/bin/time), the phases (debug log), the record's size. Asserts nothing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
work="${TMPDIR:-/tmp}/rp-big-unit"
while getopts "w:" opt; do
    case $opt in
    w) work=$OPTARG ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-w DIR] BUILD_A [BUILD_B] [OBJECTS]" >&2; exit 2; }
builds=("$1")
shift
if [ $# -ge 1 ] && [ -d "$1" ]; then
    builds+=("$1")
    shift
fi
objects=${1:-200000}
for b in "${builds[@]}"; do
    [ -x "$b/rightplace" ] || { echo "big_unit.sh: $b/rightplace not built" >&2; exit 2; }
done
scan="${builds[0]}/bench/bench_yaml_scan"
[ -x "$scan" ] || { echo "big_unit.sh: $scan not built" >&2; exit 2; }

rm -rf "$work"
mkdir -p "$work"
src="$work/src"
git init -q -b main "$src"
cp -r "$root/examples/repo/." "$src/"
mkdir -p "$src/big"
cat >"$src/big/policy.yaml" <<'EOF'
apiVersion: policy.elotl.co/v1alpha1
kind: SchedulePolicy
metadata:
  name: big-policy
spec:
  resourceSelectors:
    labelSelectors:
    - matchLabels:
        team: big
  namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: development
  groupBy:
    labelKey: team
EOF
python3 - "$src/big" "$objects" <<'EOF'
import sys
d, n = sys.argv[1], int(sys.argv[2])
for f in range((n + 9999) // 10000):
    docs = []
    for i in range(f * 10000, min(n, (f + 1) * 10000)):
        docs.append('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c-%07d\n'
                    '  namespace: development\n  labels: {team: big}\ndata: {k: v}\n' % i)
    with open('%s/cm-%03d.yaml' % (d, f), 'w') as out:
        out.write('---\n'.join(docs))
EOF
git -C "$src" add -A
git -C "$src" -c user.name=bench -c user.email=bench@example.com commit -q -m "one big unit"
mb=$(du -sm "$src/big" | cut -f1)
scan_s=$(find "$src/big" -name '*.yaml' | "$scan" | sed -n 's/.*scan_s \([0-9.]*\).*/\1/p')
echo "$objects objects in one unit, $mb MB of YAML; floor: libyaml scan ${scan_s} s"
echo
echo "| build | pass | exit | wall | peak RSS | record | load | place | render | diff | commit | placements.yaml |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"

phase() { # the phase's time from the debug log, or "-"
    local v
    v=$(sed -n "s/.*pass phases:.* $1 \\([0-9]*\\) ms.*/\\1/p" "$work/err")
    if [ -n "$v" ]; then echo "$v ms"; else echo "-"; fi
}

timed() { # build label args...
    local b=$1 label=$2 st=0 wall rss rec
    shift 2
    /usr/bin/time -f "%e %M" -o "$work/time" "$b/rightplace" "$@" >"$work/out" 2>"$work/err" ||
        st=$?
    read -r wall rss < <(tail -n 1 "$work/time")
    rec=$(git -C "$run" cat-file -s deploy:placements.yaml 2>/dev/null || echo 0)
    echo "| $b | $label | $st | $wall s | $((rss / 1024)) MB | $(phase record) | $(phase load) |" \
        "$(phase place) | $(phase render) | $(phase diff) | $(phase commit) |" \
        "$(awk -v b="$rec" 'BEGIN { printf "%.1f MB", b / 1048576 }') |"
}

for b in "${builds[@]}"; do
    run="$work/run"
    rm -rf "$run"
    cp -a "$src" "$run"
    timed "$b" "first" reconcile --repo "$run" --once --no-apply --log-level debug
    echo "# touched" >>"$run/fill-and-spill/rayjob-rayjob1.yaml"
    git -C "$run" -c user.name=bench -c user.email=bench@example.com commit -q -a -m touch
    rm -rf "$run/.git/rightplace"
    timed "$b" "no state dir" reconcile --repo "$run" --once --no-apply --log-level debug
    timed "$b" "status" status --repo "$run"
done
