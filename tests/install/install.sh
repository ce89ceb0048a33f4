#!/usr/bin/env bash
# `cmake --install` into a temporary DESTDIR: exactly the expected files, each one checked:
# the binary runs, the man page renders without warnings, the completions parse and complete,
# the systemd units pass `systemd-analyze verify` (with the installed binary and man page),
# the sysusers file and the environment file read as their programs read them.
# Environment (from tests/CMakeLists.txt): RP_BUILD_DIR, RP_PREFIX, RP_BINDIR, RP_MANDIR,
# RP_SYSCONFDIR, RP_DATADIR, RP_DOCDIR, RP_UNITDIR, RP_SYSUSERSDIR (absolute, no DESTDIR).
. "$(dirname "$0")/lib.sh"

dest=$TMP/dest
DESTDIR=$dest cmake --install "$RP_BUILD_DIR" >"$TMP/install.log" 2>&1 ||
    { cat "$TMP/install.log"; bad "cmake --install"; finish; }
abs() { case $1 in /*) echo "$1" ;; *) echo "$RP_PREFIX/$1" ;; esac; }
bindir=$(abs "$RP_BINDIR") mandir=$(abs "$RP_MANDIR") unitdir=$(abs "$RP_UNITDIR")
sysusersdir=$(abs "$RP_SYSUSERSDIR") docdir=$(abs "$RP_DOCDIR") datadir=$(abs "$RP_DATADIR")
sysconfdir=$RP_SYSCONFDIR

# 1. exactly these files (nothing outside the prefix and sysconfdir, nothing forgotten)
{
    echo "$bindir/rightplace"
    echo "$mandir/man1/rightplace.1"
    echo "$datadir/bash-completion/completions/rightplace"
    echo "$datadir/zsh/site-functions/_rightplace"
    echo "$unitdir/rightplace.service"
    echo "$unitdir/rightplace-loop.service"
    echo "$unitdir/rightplace.timer"
    echo "$sysusersdir/rightplace.conf"
    echo "$sysconfdir/rightplace/rightplace.env"
    echo "$docdir/README.md"
    for f in "$RP_SOURCE_DIR"/docs/*.md; do echo "$docdir/docs/${f##*/}"; done
} | sort >"$TMP/want"
(cd "$dest" && find . -type f -o -type l | sed 's|^\.||' | sort) >"$TMP/have"
check "installed files differ from the expected list: $(diff "$TMP/want" "$TMP/have" | tr '\n' ' ')" \
    diff -q "$TMP/want" "$TMP/have"

# 2. the binary
check "installed binary runs" "$dest$bindir/rightplace" --version
check "installed binary is executable by all" test "$(stat -c %a "$dest$bindir/rightplace")" = 755

# 3. the man page renders (man -l), without warnings from groff
if command -v man >/dev/null; then
    MANWIDTH=100 man -l "$dest$mandir/man1/rightplace.1" >"$TMP/man.txt" 2>"$TMP/man.err" || true
    check "man -l renders the page: $(cat "$TMP/man.err")" \
        grep -q '^EXIT STATUS' "$TMP/man.txt"
    check "man -l renders the page without errors: $(cat "$TMP/man.err")" test ! -s "$TMP/man.err"
else
    bad "man is not installed (.ci/deps installs man-db)"
fi
if command -v groff >/dev/null; then
    groff -man -ww -z "$dest$mandir/man1/rightplace.1" 2>"$TMP/groff.err" || true
    check "groff warnings: $(cat "$TMP/groff.err")" test ! -s "$TMP/groff.err"
fi

# 4. completions: bash parses it and completes commands and options; zsh parses its file
bc=$dest$datadir/bash-completion/completions/rightplace
check "bash completion parses" bash -n "$bc"
complete_words() { # complete_words WORD... : what bash offers for the last word
    bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _rightplace; printf "%s\n" "${COMPREPLY[@]}"' \
        _ "$bc" "$@"
}
check "bash completes 'rightplace re' to reconcile, replay and resume" \
    test "$(complete_words rightplace re | sort | tr '\n' ' ')" = "reconcile replay resume "
check "bash completes 'rightplace plan --out' to --output" \
    test "$(complete_words rightplace plan --out)" = "--output"
check "bash completes '--output ' to text and json" \
    test "$(complete_words rightplace plan --output '' | tr '\n' ' ')" = "text json "
if command -v zsh >/dev/null; then
    check "zsh completion parses" zsh -n "$dest$datadir/zsh/site-functions/_rightplace"
else
    bad "zsh is not installed (.ci/deps installs it)"
fi

# 5. systemd units: `systemd-analyze verify` with the installed binary and man page. The
# units name the binary at its final path; the copies verified here name it under DESTDIR.
if command -v systemd-analyze >/dev/null; then
    mkdir "$TMP/units"
    rc=0
    for u in rightplace.service rightplace-loop.service rightplace.timer; do
        sed "s|$bindir/rightplace|$dest$bindir/rightplace|g" "$dest$unitdir/$u" >"$TMP/units/$u"
        check "$u names the installed binary" grep -q "$bindir/rightplace\|^Unit=" "$dest$unitdir/$u"
    done
    (cd "$TMP/units" && MANPATH=$dest$mandir SYSTEMD_LOG_COLOR=0 \
        systemd-analyze verify ./rightplace.service ./rightplace-loop.service \
        ./rightplace.timer) >"$TMP/verify.out" 2>&1 || rc=$?
    check "systemd-analyze verify: status $rc: $(cat "$TMP/verify.out")" test "$rc" -eq 0
    check "systemd-analyze verify printed: $(cat "$TMP/verify.out")" test ! -s "$TMP/verify.out"
    for k in User=rightplace StateDirectory=rightplace ProtectSystem=strict ProtectHome=yes \
        NoNewPrivileges=yes PrivateTmp=yes CapabilityBoundingSet= \
        'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6' SystemCallFilter=@system-service \
        "EnvironmentFile=$sysconfdir/rightplace/rightplace.env" \
        Environment=GLIBC_TUNABLES=glibc.malloc.hugetlb=1; do
        for u in rightplace.service rightplace-loop.service; do
            check "$u has $k" grep -qx -- "$k" "$dest$unitdir/$u"
        done
    done
    # exposure as systemd rates it (0 best, 100 worst; printed x10): at most 1.5 ("OK")
    for u in rightplace.service rightplace-loop.service; do
        score=$(cd "$TMP/units" && systemd-analyze security --offline=true "./$u" 2>&1 |
            sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p')
        echo "systemd-analyze security $u: exposure $score"
        check "$u exposure $score > 1.5" awk -v s="$score" 'BEGIN {exit !(s != "" && s <= 1.5)}'
    done
    # every flag the units pass is one `rightplace reconcile` takes
    "$dest$bindir/rightplace" reconcile --help >"$TMP/reconcile-help.txt" 2>&1
    for u in rightplace.service rightplace-loop.service; do
        for f in $(sed -n 's/^ExecStart=//p' "$dest$unitdir/$u" | grep -oE -- '--[a-z][a-z0-9-]*'); do
            check "$u passes $f, which reconcile does not take" grep -qE -- "$f( |$)" "$TMP/reconcile-help.txt"
        done
    done
    for f in $(sed -n 's/^#* *RIGHTPLACE_OPTS=//p; s/^#   //p' "$dest$sysconfdir/rightplace/rightplace.env" |
        grep -oE -- '--[a-z][a-z0-9-]*'); do
        check "rightplace.env suggests $f, which reconcile does not take" \
            grep -qE -- "$f( |$)" "$TMP/reconcile-help.txt"
    done
    check "rightplace.service is a oneshot --once" grep -q '^ExecStart=.* reconcile --once ' \
        "$dest$unitdir/rightplace.service"
    check "rightplace-loop.service loops" grep -q '^ExecStart=.* reconcile --interval ' \
        "$dest$unitdir/rightplace-loop.service"
else
    echo "systemd-analyze not found: units not verified (.ci/deps installs systemd)" >&2
    bad "systemd-analyze missing"
fi
if command -v systemd-sysusers >/dev/null; then
    mkdir -p "$TMP/root/etc"
    : >"$TMP/root/etc/passwd"
    : >"$TMP/root/etc/group"
    systemd-sysusers --root="$TMP/root" "$dest$sysusersdir/rightplace.conf" >"$TMP/sysusers.out" 2>&1 ||
        bad "systemd-sysusers: $(cat "$TMP/sysusers.out")"
    check "sysusers makes user rightplace: $(cat "$TMP/root/etc/passwd")" \
        grep -q '^rightplace:x:[0-9]*:[0-9]*:.*:/var/lib/rightplace:' "$TMP/root/etc/passwd"
fi

# 6. the environment file: what systemd reads from it
envf=$dest$sysconfdir/rightplace/rightplace.env
check "env file is not world-readable" test "$(stat -c %a "$envf")" = 640
check "env file sets RIGHTPLACE_REPO" grep -q '^RIGHTPLACE_REPO=' "$envf"
check "env file names the installed kubeconfig directory" \
    grep -qx "RIGHTPLACE_KUBECONFIG_DIR=$sysconfdir/rightplace/kubeconfigs" "$envf"
check "kubeconfig directory installed, mode 750" \
    test "$(stat -c %a "$dest$sysconfdir/rightplace/kubeconfigs" 2>/dev/null)" = 750
check "env file is shell-readable" bash -n "$envf"

# 7. `cmake --install --prefix P` puts everything under P (the units still name the
# configured path of the binary: set the prefix when configuring)
other=$TMP/other-prefix
cmake --install "$RP_BUILD_DIR" --prefix "$other" >"$TMP/install2.log" 2>&1 ||
    bad "cmake --install --prefix: $(cat "$TMP/install2.log")"
if [ "${RP_PREFIX%/}" != /usr ]; then
    outside=$(grep -oE 'Installing: [^ ]+' "$TMP/install2.log" | cut -d' ' -f2 | grep -v "^$other/" || true)
    check "--prefix $other installed outside it: $outside" test -z "$outside"
    check "--prefix installs the binary under it" test -x "$other/${RP_BINDIR}/rightplace"
    check "--prefix installs as many files as DESTDIR" \
        test "$(find "$other" -type f | wc -l)" -eq "$(wc -l <"$TMP/want")"
fi

# 7. documentation
check "README installed" cmp -s "$RP_SOURCE_DIR/README.md" "$dest$docdir/README.md"
finish
