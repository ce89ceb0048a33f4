#!/usr/bin/env bash
# changes.sh - what each kind of commit costs a `--once` pass at fleet scale, and that a pass
# with the state directory's caches commits exactly what a pass without them commits.
#
#   bench/changes.sh [-b BUILD_DIR] [-w WORK_DIR] [-T] [SIZE]      SIZE = WORKLOADSxCLUSTERS
#   default size 10000x100; -T as in bench/e2e.sh (GLIBC_TUNABLES=glibc.malloc.hugetlb=1)
#
# Writes a source repository with bench/gen_fleet.py (as bench/e2e.sh does), runs the first
# pass on it (`rightplace reconcile --once --no-apply`: the deploy head and the state
# directory), then for each kind of commit below, on a copy of that state:
#   cached  the pass after the commit, with the state directory the first pass left (parse
#           cache, record cache, the memo of the last pass), as a cron tick runs it;
#   cold    the same pass on another copy whose state directory was emptied first;
# each timed (wall, peak RSS, rightplace's phase times), with how many files the load parsed
# and took from the parse cache, the deploy commit's subject and how many deploy files it
# changed ("(no commit)": the pass left the deploy head as it was). "same" says whether both passes left the deploy branch at the same commit id.
# Kinds: one workload's demand; a new workload; 100 workloads' demand; a team's folder renamed (the same
# blobs at new paths); a team's folder removed; one file broken; a cluster shrunk to a tenth;
# a cluster removed; the policy's namespaces narrowed by one; a commit without YAML.
# Prints a markdown table. Asserts nothing but prints "DIFFERENT" where the commits differ.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/fleet_repo.sh"
bench_args "${TMPDIR:-/tmp}/rp-changes" "$@"
size=${rest[0]:-10000x100}
n=${size%x*}
c=${size#*x}
rp="$build/rightplace"
[ -x "$rp" ] || { echo "changes.sh: $rp not built (cmake --build $build)" >&2; exit 2; }
rm -rf "$work"
mkdir -p "$work"
base="$work/base"
fleet_repo "$base" "$size"
"${tun[@]}" "$rp" reconcile --repo "$base" --once --no-apply >"$work/first.out" 2>"$work/first.err" ||
    { echo "changes.sh: the first pass failed (see $work/first.err)" >&2; exit 1; }

# change KIND: make the commit of that kind in the work tree of "$1"
change() {
    local dir=$1 kind=$2
    case $kind in
    one) python3 "$here/gen_fleet.py" "$dir" "$n" "$c" --change $((n / 2)) >/dev/null ;;
    add)
        # a new workload: job 1 under new names, in its team's folder
        sed 's/000001/new001/g' "$dir/jobs/team-01/job-000001.yaml" >"$dir/jobs/team-01/job-new001.yaml"
        ;;
    hundred)
        for k in $(seq 0 $((n / 100)) $((n - 1)) | head -100); do
            python3 "$here/gen_fleet.py" "$dir" "$n" "$c" --change "$k" >/dev/null
        done
        ;;
    rename) git -C "$dir" mv jobs/team-03 jobs/team-03-renamed ;;
    remove) git -C "$dir" rm -q -r jobs/team-05 ;;
    broken)
        # the first file of team-00 (a glob, not ls | head: head's early exit fails the pipe)
        local files=("$dir"/jobs/team-00/*.yaml)
        printf 'spec: [\n' >>"${files[0]}"
        ;;
    shrink) sed -i 's/count: 80/count: 8/; s/count: 20/count: 2/' "$dir/fleet/cluster-001.yaml" ;;
    drop) git -C "$dir" rm -q fleet/cluster-002.yaml ;;
    policy) sed -i 's/team-00, //' "$dir/policy.yaml" ;;
    noyaml) echo "a line" >>"$dir/README.md" ;;
    esac
    git -C "$dir" add -A
    git -C "$dir" commit -q -m "$kind"
}

# pass DIR: time one --once pass; REPLY="wall rss status"
pass() {
    local dir=$1 st=0
    /usr/bin/time -f "%e %M" -o "$dir.time" "${tun[@]}" "$rp" reconcile --repo "$dir" --once \
        --no-apply --log-level debug >"$dir.out" 2>"$dir.err" || st=$?
    REPLY="$(tail -1 "$dir.time") $st"
}

echo "| $size: commit | cached pass | RSS | status | parsed / taken | phases (cached) | cold pass | same | deploy commit | deploy files changed |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for kind in one add hundred rename remove broken shrink drop policy noyaml; do
    a="$work/$kind-cached"
    b="$work/$kind-cold"
    rm -rf "$a" "$b"
    cp -a "$base" "$a"
    change "$a" "$kind"
    cp -a "$a" "$b"
    rm -f "$b/.git/rightplace/parse-cache" "$b/.git/rightplace/record-cache" \
        "$b/.git/rightplace/pass-state"
    pass "$a"
    read -r ta ra sa <<<"$REPLY"
    pass "$b"
    read -r tb _ _ <<<"$REPLY"
    da=$(git -C "$a" rev-parse refs/heads/deploy)
    db=$(git -C "$b" rev-parse refs/heads/deploy)
    same=same
    [ "$da" = "$db" ] || same=DIFFERENT
    before=$(git -C "$base" rev-parse refs/heads/deploy)
    subject="(no commit)"
    [ "$da" = "$before" ] || subject=$(git -C "$a" log -1 --format=%s refs/heads/deploy)
    files=$(git -C "$a" diff --name-only "$before" "$da" | wc -l)
    loaded=$(sed -n 's/.*load: \([0-9]*\) files parsed, \([0-9]*\) taken.*/\1 \/ \2/p' "$a.err" |
        tail -1)
    phases=$(sed -n 's/.*pass phases: //p' "$a.err" | tail -1 | sed 's/observe 0 ms, //')
    echo "| $kind | ${ta} s | $(awk -v k="$ra" 'BEGIN { printf "%.0f", k / 1024 }') MB | $sa | ${loaded:-skipped} | ${phases:-} | ${tb} s | $same | $subject | $files |"
    rm -rf "$b" "$b".*
done
