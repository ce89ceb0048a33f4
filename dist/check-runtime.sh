#!/usr/bin/env bash
# Check the Containerfile's runtime stage without a container engine: build a Debian 12
# minbase root file system with debootstrap, install exactly RUNTIME_PACKAGES in it, remove
# the shell, copy the binary in, and run a reconcile pass of examples/repo in it as user
# 65532 (a local path and a file:// URL), as the image would. Needs root, debootstrap and
# access to the Debian archive; takes a few minutes. Not part of ctest (it downloads).
#   dist/check-runtime.sh build/rightplace
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:?usage: dist/check-runtime.sh PATH-TO-rightplace}
pkgs=$(sed -n 's/^ARG RUNTIME_PACKAGES="\(.*\)"$/\1/p' "$root/Containerfile")
fs=$(mktemp -d "${TMPDIR:-/tmp}/rightplace-rootfs.XXXXXX")
chmod 0755 "$fs" # mktemp makes it 0700: the user 65532 must reach /
trap 'rm -rf "$fs"' EXIT
chroot=$(command -v chroot)

debootstrap --variant=minbase bookworm "$fs" >/dev/null
cp /etc/resolv.conf "$fs/etc/resolv.conf"
"$chroot" "$fs" /bin/sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends $pkgs >/dev/null"
rm -f "$fs/bin/sh" "$fs/bin/bash" "$fs/bin/dash" "$fs/usr/bin/sh" "$fs/usr/bin/bash" "$fs/usr/bin/dash"
install -m 0755 "$bin" "$fs/usr/local/bin/rightplace"
mkdir -p "$fs/repo" "$fs/home"
cp -r "$root/examples/repo/." "$fs/repo/"
git -C "$fs/repo" init -q -b main
git -C "$fs/repo" add -A
git -C "$fs/repo" -c user.name=check -c user.email=check@example.com commit -qm "example fleet"
chown -R 65532:65532 "$fs/repo" "$fs/home"
run() { env -i HOME=/home "$chroot" --userspec=65532:65532 "$fs" /usr/local/bin/rightplace "$@"; }
run --version
run reconcile --repo /repo --state-dir /home/local --once
run reconcile --repo file:///repo --state-dir /home/remote --once --no-apply
run status --repo /repo --state-dir /home/local >/dev/null
echo "runtime packages ($pkgs) run rightplace without a shell, as user 65532"
