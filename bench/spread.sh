#!/usr/bin/env bash
# spread.sh - one-workload changes under a policy that spreads, on one or two builds.
#
#   bench/spread.sh [-w WORK_DIR] [-n WORKLOADS] [-c CLUSTERS] [-k CHANGES] BUILD_A [BUILD_B]
#   defaults: 300 workloads, 10 clusters, 3 changes
#
# For each of two policies, a source repository from bench/fleet_repo.sh (skyray's RayJob and
# ConfigMap per workload, one capacity SchedulePolicy grouping by a per-job label) whose
# policy spreads:
#   duplicate  spreadMode Duplicate over every cluster, with one override naming one
#              ConfigMap on one cluster (the other objects are rendered the same everywhere);
#   divide     spreadMode Divide, evenly over every cluster (a RayJob runs whole on one
#              target, its ConfigMap is copied to each).
# Each build gets a copy with a state directory of its own (the parse cache is keyed by the
# build): a first `rightplace reconcile --once --no-apply`, then CHANGES passes in turns, each
# after a commit that changes one workload (bench/gen_fleet.py --change). Prints one markdown
# row per pass: wall time and peak RSS (/usr/bin/time), the debug log's phases, and the
# deploy tree's files. The builds' deploy trees are compared at the end (they differ only in
# .rightplace/source, which names each copy's own source commit). Asserts nothing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
work="${TMPDIR:-/tmp}/rp-spread"
n=300
c=10
k=3
while getopts "w:n:c:k:" opt; do
    case $opt in
    w) work=$OPTARG ;;
    n) n=$OPTARG ;;
    c) c=$OPTARG ;;
    k) k=$OPTARG ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-w DIR] [-n N] [-c C] [-k K] BUILD_A [BUILD_B]" >&2; exit 2; }
builds=("$@")
for b in "${builds[@]}"; do
    [ -x "$b/rightplace" ] || { echo "spread.sh: $b/rightplace not built" >&2; exit 2; }
done
# shellcheck source=bench/fleet_repo.sh
. "$here/fleet_repo.sh"

spread_duplicate() {
    cat <<'EOF'
  spreadConstraints:
    spreadMode: Duplicate
    topologyKey: kubernetes.io/metadata.name
    overrides:
    - topologyValue: cluster-001
      resources:
      - kind: ConfigMap
        name: ray-job-code-train-000007
        namespace: team-07
        override:
        - fieldPath: metadata.labels['override']
          value: {staticValue: "yes"}
EOF
}

spread_divide() {
    cat <<'EOF'
  spreadConstraints:
    spreadMode: Divide
    topologyKey: kubernetes.io/metadata.name
EOF
}

# pass BUILD REPO WHAT: one --once pass, one markdown row
pass() {
    local bin=$1/rightplace repo=$2 what=$3 t log tf phases files
    log=$(mktemp)
    tf=$(mktemp)
    /usr/bin/time -o "$tf" -f "%e s|%M" "$bin" reconcile --repo "$repo" --once --no-apply \
        --log-level debug 2>"$log" >/dev/null
    t=$(tail -1 "$tf")
    phases=$(sed -n 's/.*pass phases: //p' "$log" | tr -d '\n')
    files=$(git -C "$repo" ls-tree -r deploy | wc -l)
    rm -f "$log" "$tf"
    echo "| $(basename "$repo") | $1 | $what | ${t%|*} | $((${t#*|} / 1024)) MB | $phases | $files |"
}

echo "| policy | build | pass | wall | peak RSS | phases | deploy files |"
echo "|---|---|---|---|---|---|---|"
for mode in duplicate divide; do
    base="$work/$mode"
    rm -rf "$base"
    mkdir -p "$work"
    fleet_repo "$base" "${n}x${c}" >/dev/null
    "spread_$mode" >>"$base/policy.yaml"
    git -C "$base" add -A
    git -C "$base" -c user.name=bench -c user.email=bench@localhost commit -q -m "$mode"
    for i in "${!builds[@]}"; do
        rm -rf "$base-$i"
        cp -a "$base" "$base-$i"
        pass "${builds[$i]}" "$base-$i" first
    done
    for j in $(seq 1 "$k"); do
        for i in "${!builds[@]}"; do
            python3 "$here/gen_fleet.py" "$base-$i" "$n" "$c" --change $((100 + j)) >/dev/null
            git -C "$base-$i" -c user.name=bench -c user.email=bench@localhost \
                commit -q -a -m "change $((100 + j))"
            pass "${builds[$i]}" "$base-$i" "one change"
        done
    done
    if [ ${#builds[@]} -eq 2 ]; then
        if diff <(git -C "$base-0" ls-tree -r deploy | grep -v '\.rightplace/source$') \
            <(git -C "$base-1" ls-tree -r deploy | grep -v '\.rightplace/source$') >/dev/null; then
            echo "$mode: the same deploy tree from both builds (but .rightplace/source)"
        else
            echo "$mode: the deploy trees differ"
        fi
    fi
done
