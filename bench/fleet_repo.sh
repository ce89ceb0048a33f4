# fleet_repo.sh - sourced by the bench scripts: the source repository of a generated fleet.
#
#   . bench/fleet_repo.sh; fleet_repo DIR NxC
#
# Sets the git identity and configuration the benches commit with, writes DIR with
# bench/gen_fleet.py (N workloads on C clusters) and commits it on branch main.
#
#   bench_args DEFAULT_WORK_DIR "$@"
#
# The options e2e.sh and changes.sh share: -b BUILD_DIR (default: the checkout's build), -w
# WORK_DIR, -T (rightplace with GLIBC_TUNABLES=glibc.malloc.hugetlb=1, as the units run it).
# Sets build, work, tun (a command prefix) and rest (the arguments after the options).

export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com \
    GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com

fleet_repo() {
    local dir=$1 size=$2
    python3 "$(dirname "${BASH_SOURCE[0]}")/gen_fleet.py" "$dir" "${size%x*}" "${size#*x}"
    git -C "$dir" init -q -b main
    # no `git gc --auto`: committing 10,000+ loose objects would start one in the background,
    # repacking the source while the passes run (and timing them)
    git -C "$dir" config gc.auto 0
    git -C "$dir" add -A
    git -C "$dir" commit -q -m "fleet $size"
}

bench_args() {
    local opt OPTIND=1
    work=$1
    shift
    build="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../build"
    tun=()
    while getopts "b:w:T" opt; do
        case $opt in
        b) build=$OPTARG ;;
        w) work=$OPTARG ;;
        T) tun=(env GLIBC_TUNABLES=glibc.malloc.hugetlb=1) ;;
        *) exit 2 ;;
        esac
    done
    shift $((OPTIND - 1))
    rest=("$@")
}
