#!/usr/bin/env bash
# Quick start: on a fresh Debian 12 machine, install what is missing, build rightplace,
# make a git repository from examples/repo in a temporary folder, place the example fleet
# with one reconcile pass and show the placement commit; then push a third RayJob and show
# it spill to the autoscaled cluster.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

"$root/.ci/deps"
cmake -S "$root" -B "$root/build" -DRC_WERROR=ON >/dev/null
cmake --build "$root/build" -j"$(nproc)" --target rightplace >/dev/null
rp="$root/build/rightplace"

work=$(mktemp -d "${TMPDIR:-/tmp}/rightplace-quickstart.XXXXXX")
repo="$work/repo"
git init -q -b main "$repo"
cp -r "$root/examples/repo/." "$repo/"
git -C "$repo" add -A
git -C "$repo" -c user.name=ml-team -c user.email=ml-team@example.com \
    commit -q -m "Example fleet: static and Luna clusters, three scenarios"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "rightplace reconcile --once (first pass: places everything)"
"$rp" reconcile --repo "$repo" --once --no-apply

step "the placement commit on the deploy branch"
git -C "$repo" log -1 --stat deploy

step "rightplace status"
"$rp" status --repo "$repo"

step "push a third RayJob (rayjob3) to the source branch"
cp "$root/examples/rayjob3.yaml" "$repo/fill-and-spill/rayjob-rayjob3.yaml"
git -C "$repo" add -A
git -C "$repo" -c user.name=ml-team -c user.email=ml-team@example.com \
    commit -q -m "Train rayjob3"

step "rightplace reconcile --once (second pass: rayjob3 spills)"
"$rp" reconcile --repo "$repo" --once --no-apply

step "the spill commit"
git -C "$repo" log -1 deploy

step "rightplace explain rayjob3/rayjob-train"
"$rp" explain --repo "$repo" rayjob3/rayjob-train

step "done"
echo "The example repository is at $repo (branches: main, deploy)."
echo "Try: git -C $repo log -p deploy    or    $rp plan --repo $repo"
