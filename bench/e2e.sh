#!/usr/bin/env bash
# e2e.sh - end-to-end bench: whole passes of the real binary on generated fleets.
#
#   bench/e2e.sh [-b BUILD_DIR] [-w WORK_DIR] [-T] [SIZE...]      SIZE = WORKLOADSxCLUSTERS
#   default sizes: 1000x10 1000x100 10000x10 10000x100 20000x100
#   -T: run rightplace (and the loop bench) with GLIBC_TUNABLES=glibc.malloc.hugetlb=1, as the
#       systemd units and the container image run it (glibc's heap on transparent huge pages);
#       the floors run as they are
#
# For each size it writes a source repository with bench/gen_fleet.py (N copies of skyray's
# RayJob + ConfigMap, one gang each, one Nova capacity policy grouping by a per-job label,
# 50 namespaces; C simulated clusters x 100 nodes: 80 CPU, 20 GPU of 8 GPUs, every fifth
# cluster with a Luna autoscaler), commits it, and runs `rightplace reconcile --once
# --no-apply` three times: the first pass, a pass with nothing changed, and a pass after a
# commit that changes one workload. Each pass: wall time and peak RSS of the process
# (/usr/bin/time), its exit status, and rightplace's own phase times when it logs them.
# Then loop mode on a clone of the same source (build/bench/bench_rc_pass, passes in one
# process as `reconcile --interval` runs them, with a state directory): the same one-workload
# change, then a commit that adds one workload (a new unit: the record changes, where the
# one-workload change leaves it as it was), their times and the process's peak RSS over all
# its passes.
# The first pass runs again on a clone made as a fetch makes it (`git clone --no-local`: the
# objects in one pack, where `git commit` leaves them loose), with a state of its own: what a
# polled repository looks like (column "first, packed").
# Beside them, the floors measured in the same run on the same bytes:
#   scan   a bare libyaml scan of the source's YAML (build/bench/bench_yaml_scan)
#   git    `git add -A && git commit` of the first pass's deploy tree in a fresh work tree
# Prints one table row per size (markdown). Asserts nothing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/fleet_repo.sh"
bench_args "${TMPDIR:-/tmp}/rp-e2e" "$@"
sizes=("${rest[@]}")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000x10 1000x100 10000x10 10000x100 20000x100)
rp="$build/rightplace"
scan="$build/bench/bench_yaml_scan"
loop="$build/bench/bench_rc_pass"
for f in "$rp" "$scan" "$loop"; do
    [ -x "$f" ] || { echo "e2e.sh: $f not built (cmake --build $build)" >&2; exit 2; }
done
mkdir -p "$work"

# run LOG CMD...: time CMD, leave "wall_s maxrss_kb status" in $REPLY
timed() {
    local log=$1
    shift
    local st=0
    /usr/bin/time -f "%e %M" -o "$log.time" "$@" >"$log.out" 2>"$log.err" || st=$?
    REPLY="$(cat "$log.time" | tail -1) $st"
}

mb() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; }

# x(a, b): "a/b" with two decimals, the multiple of the scan floor
x() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else printf "?" }'; }

echo "| workloads x clusters | source | scan floor | first pass | RSS | first, packed | no-op pass | RSS | one change | RSS | loop: one change | loop: new workload | loop RSS | git CLI commit | record | snapshot | status |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for size in "${sizes[@]}"; do
    n=${size%x*}
    c=${size#*x}
    dir="$work/$size"
    rm -rf "$dir"
    mkdir -p "$dir"
    src="$dir/src"
    fleet_repo "$src" "$size"
    bytes=$(find "$src" -name '*.yaml' -not -path '*/.git/*' -printf '%s\n' |
        awk '{ s += $1 } END { printf "%.0f", s / 1048576 }')
    scan_s=$(find "$src" -name '*.yaml' -not -path '*/.git/*' | "$scan" |
        sed -n 's/.*scan_s \([0-9.]*\).*/\1/p')

    # loop mode starts from the same source, in a clone of its own; the packed first pass too
    git clone -q "$src" "$dir/loop"
    git -C "$dir/loop" config gc.auto 0
    git clone -q --no-local "$src" "$dir/packed"
    git -C "$dir/packed" config gc.auto 0
    timed "$dir/first" "${tun[@]}" "$rp" reconcile --repo "$src" --once --no-apply --log-level debug
    read -r t1 r1 s1 <<<"$REPLY"
    timed "$dir/firstp" "${tun[@]}" "$rp" reconcile --repo "$dir/packed" --once --no-apply \
        --log-level debug
    read -r t5 r5 s5 <<<"$REPLY"
    timed "$dir/noop" "${tun[@]}" "$rp" reconcile --repo "$src" --once --no-apply --log-level debug
    read -r t2 r2 s2 <<<"$REPLY"
    python3 "$here/gen_fleet.py" "$src" "$n" "$c" --change $((n / 2))
    git -C "$src" commit -q -a -m "change one workload"
    timed "$dir/change" "${tun[@]}" "$rp" reconcile --repo "$src" --once --no-apply --log-level debug
    read -r t3 r3 s3 <<<"$REPLY"

    changed=$(git -C "$src" diff --name-only HEAD~1 HEAD)
    git -C "$src" show "HEAD:$changed" >"$dir/changed.yaml"
    # a new workload: job 1 under new names (its unit is new, so the record changes)
    added=jobs/team-01/job-new001.yaml
    git -C "$src" show HEAD:jobs/team-01/job-000001.yaml | sed 's/000001/new001/g' >"$dir/added.yaml"
    mkdir -p "$dir/loop-state"
    s4=0
    BENCH_PHASES=1 "${tun[@]}" "$loop" "$dir/loop" "$changed" "$dir/changed.yaml" "$dir/loop-state" \
        "$added" "$dir/added.yaml" >"$dir/loop.out" 2>"$dir/loop.err" || s4=$?
    t4=$(awk '$1 == "one-change" { printf "%.0f", $2 }' "$dir/loop.out")
    t6=$(awk '$1 == "new-file" { printf "%.0f", $2 }' "$dir/loop.out")
    r4=$(awk '$1 == "one-change" { for (i = 1; i < NF; i++) if ($i == "RSS") print $(i + 1) }' \
        "$dir/loop.out")

    # the git CLI floor: the same deploy tree (as of the first pass) in a fresh work tree
    floor="$dir/gitfloor"
    mkdir -p "$floor"
    first=$(git -C "$src" rev-list --max-parents=0 deploy | tail -1)
    git -C "$src" archive "$first" | tar -x -C "$floor"
    git -C "$floor" init -q -b deploy
    start=$(date +%s.%N)
    (cd "$floor" && git add -A && git commit -q -m floor)
    end=$(date +%s.%N)
    git_s=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
    # the whole record: placements.yaml, and its shards beyond 1,024 units
    rec=$(git -C "$src" ls-tree -r -l deploy placements.yaml placements/ |
        awk '{ s += $4 } END { printf "%.0f", s }')
    cap=$(git -C "$src" cat-file -s deploy:.rightplace/capacity.yaml)
    echo "| $n x $c | ${bytes} MB | ${scan_s} s | ${t1} s ($(x "$t1" "$scan_s")) | $(mb "$r1") MB | ${t5} s ($(x "$t5" "$scan_s")) | ${t2} s | $(mb "$r2") MB | ${t3} s | $(mb "$r3") MB | ${t4:-?} ms | ${t6:-?} ms | ${r4:-?} MB | ${git_s} s | $(mb $((rec / 1024))) MB | $((cap / 1024)) KB | $s1/$s5/$s2/$s3/$s4 |"
    for p in first firstp noop change; do
        grep -h "phase\|duration" "$dir/$p.err" 2>/dev/null | sed "s/^/    $size $p: /" | head -5 >&2 || true
    done
    # the loop's passes that log phases: the first, the one change, the new workload (no-op
    # passes stop early)
    grep -h "pass phases" "$dir/loop.err" 2>/dev/null | tail -2 | head -1 |
        sed "s/^/    $size loop change: /" >&2 || true
    grep -h "pass phases" "$dir/loop.err" 2>/dev/null | tail -1 |
        sed "s/^/    $size loop new workload: /" >&2 || true
done
