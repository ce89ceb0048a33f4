#!/usr/bin/env bash
# The Containerfile's runtime stage installs exactly what the binary needs: every library
# the built binary loads (ldd, and the libraries its .note.dlopen names with theirs), mapped to its Debian package with dpkg -S, is a listed
# package or a dependency of one (dpkg's Depends, followed recursively) or part of the base
# image (Priority: required); every listed package but ca-certificates provides a library the
# binary loads; the stages are Debian 12, the runtime runs as a numeric non-root USER without
# a shell. No container engine runs here, so the image itself is not built by this test.
# Environment: RP_SOURCE_DIR, RP_BINARY.
. "$(dirname "$0")/lib.sh"
cf=$RP_SOURCE_DIR/Containerfile
if [ "${RP_SANITIZE:-OFF}" = ON ]; then
    # the sanitizer runtimes are not what the image ships; the normal build checks the list
    echo "sanitizer build: the binary is not the image's; skipped" >&2
    exit 77
fi
for tool in readelf ldd dpkg dpkg-query; do
    command -v "$tool" >/dev/null || { echo "$tool not found: skipped" >&2; exit 77; }
done

pkgs=$(sed -n 's/^ARG RUNTIME_PACKAGES="\(.*\)"$/\1/p' "$cf")
check "Containerfile has ARG RUNTIME_PACKAGES=\"...\"" test -n "$pkgs"
check "runtime stage installs \$RUNTIME_PACKAGES" \
    grep -q 'apt-get install -y --no-install-recommends \$RUNTIME_PACKAGES' "$cf"
check "build stage is Debian 12" grep -qx 'FROM debian:12 AS build' "$cf"
check "runtime stage is Debian 12 slim" grep -qx 'FROM debian:12-slim AS runtime' "$cf"
user=$(awk '/^FROM/ {u=""} /^USER/ {u=$2} END {print u}' "$cf")
check "final stage runs as a numeric non-root user (USER $user)" \
    bash -c '[[ $1 =~ ^[0-9]+(:[0-9]+)?$ && ${1%%:*} -ne 0 ]]' _ "$user"
check "the shell is removed in the final stage" grep -q '^RUN rm -f /bin/sh ' "$cf"
last_run=$(awk '/^FROM/ {r=""} /^RUN/ {r=$0} END {print r}' "$cf")
check "removing the shell is the last RUN" bash -c '[[ $1 == "RUN rm -f /bin/sh "* ]]' _ "$last_run"
# the Kubernetes manifests run the same user
for f in "$RP_SOURCE_DIR"/deploy/kubernetes/*/*.yaml; do
    grep -q 'runAsUser:' "$f" || continue
    check "${f#"$RP_SOURCE_DIR"/} runs as the image's user ${user%%:*}" \
        grep -q "runAsUser: ${user%%:*}\$" "$f"
done

# Package of a library path (dpkg -S knows the path dpkg installed: try the resolved path
# and the path as ldd printed it, with /lib <-> /usr/lib for merged /usr).
pkg_of() {
    local p
    for p in "$1" "$(readlink -f "$1")" "/usr$1" "${1#/usr}"; do
        dpkg -S "$p" 2>/dev/null | awk -F: 'NR == 1 {print $1}' && return 0
    done
    return 1
}
ldd "$RP_BINARY" | awk '/=> \// {print $3} /^\t\/[^ ]+ \(/ {print $1}' >"$TMP/libs"
check "ldd lists libraries" test -s "$TMP/libs"

# Libraries the binary loads with dlopen, as its .note.dlopen names them (the freedesktop.org
# "ELF dlopen metadata" note): each soname as the dynamic linker's cache resolves it, plus
# what that library links in turn. They count as NEEDED below.
readelf -p .note.dlopen "$RP_BINARY" 2>/dev/null | grep -o '"soname":\[[^]]*\]' |
    grep -o '"[^"]*"' | grep -v '"soname"' | tr -d '"' | sort -u >"$TMP/dlopened"
check "the binary's .note.dlopen names libcurl.so.4" grep -qx libcurl.so.4 "$TMP/dlopened"
: >"$TMP/dlpaths"
while read -r so; do
    # awk reads to the end: leaving early can kill ldconfig with SIGPIPE mid-write, which
    # pipefail turns into an exit of this script with no message (1 run in 300 did)
    path=$(ldconfig -p | awk -v so="$so" '$1 == so && !found {print $NF; found = 1}')
    check "the dynamic linker finds $so (.note.dlopen)" test -n "$path" -a -f "$path"
    [ -n "$path" ] || continue
    echo "$so $path" >>"$TMP/dlpaths"
    echo "$path" >>"$TMP/libs"
    ldd "$path" | awk '/=> \// {print $3} /^\t\/[^ ]+ \(/ {print $1}' >>"$TMP/libs"
done <"$TMP/dlopened"
sort -u -o "$TMP/libs" "$TMP/libs"
: >"$TMP/libpkgs"
while read -r lib; do
    p=$(pkg_of "$lib") || { bad "no Debian package owns $lib"; continue; }
    echo "$p" >>"$TMP/libpkgs"
done <"$TMP/libs"
sort -u -o "$TMP/libpkgs" "$TMP/libpkgs"

# Libraries the binary itself names (NEEDED, or in .note.dlopen): their packages must be
# listed by name.
readelf -d "$RP_BINARY" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' >"$TMP/needed"
cut -d' ' -f1 "$TMP/dlpaths" >>"$TMP/needed"
while read -r so; do
    path=$(ldd "$RP_BINARY" | awk -v so="$so" '$1 == so {print $3}')
    [ -n "$path" ] || path=$(awk -v so="$so" '$1 == so {print $2}' "$TMP/dlpaths")
    p=$(pkg_of "$path") || { bad "no package owns $so ($path)"; continue; }
    [ "$p" = libc6 ] && continue # in every Debian image
    check "the binary needs $so from $p, which RUNTIME_PACKAGES does not list" \
        grep -qw -- "$p" <<<"$pkgs"
done <"$TMP/needed"

# The closure of the listed packages under Depends and Pre-Depends (installed versions).
closure=" "
queue=($pkgs)
while ((${#queue[@]})); do
    p=${queue[0]}
    queue=("${queue[@]:1}")
    p=${p%%:*}
    [[ $closure == *" $p "* ]] && continue
    closure+="$p "
    deps=$(dpkg-query -W -f='${Depends}, ${Pre-Depends}' "$p" 2>/dev/null) || continue
    IFS=',' read -ra alts <<<"$deps"
    for alt in "${alts[@]}"; do
        # "a (>= 1) | b": the first alternative that is installed
        IFS='|' read -ra choices <<<"$alt"
        for c in "${choices[@]}"; do
            c=$(sed 's/([^)]*)//g; s/\[[^]]*\]//g' <<<"$c" | tr -d ' ')
            c=${c%%:*}
            [ -n "$c" ] || continue
            if dpkg-query -W "$c" >/dev/null 2>&1; then
                queue+=("$c")
                break
            fi
        done
    done
done
while read -r p; do
    prio=$(dpkg-query -W -f='${Priority}' "$p" 2>/dev/null || true)
    [ "$prio" = required ] && continue # in debian:12-slim already
    check "$p (a library the binary loads) is neither listed nor a dependency of the list" \
        bash -c '[[ $1 == *" $2 "* ]]' _ "$closure" "$p"
done <"$TMP/libpkgs"
for p in $pkgs; do
    [ "$p" = ca-certificates ] && continue # data: the CA bundle for TLS to git and API servers
    check "RUNTIME_PACKAGES lists $p, which provides no library the binary loads" \
        grep -qx -- "$p" "$TMP/libpkgs"
done
finish
