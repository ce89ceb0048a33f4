# fleet_repo.sh - sourced by the bench scripts: the source repository of a generated fleet.
#
#   . bench/fleet_repo.sh; fleet_repo DIR NxC
#
# Sets the git identity and configuration the benches commit with, writes DIR with
# bench/gen_fleet.py (N workloads on C clusters) and commits it on branch main.

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
