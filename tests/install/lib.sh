# Shared by the shell tests in tests/install/: failure reporting and a temporary directory
# removed on exit. Each test prints "N passed, N failed" and exits non-zero on a failure
# (77: skipped, a tool it needs is missing).
set -euo pipefail
npass=0
nfail=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/rightplace-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
ok() { npass=$((npass + 1)); }
bad() { nfail=$((nfail + 1)); echo "FAIL: $*" >&2; }
check() { # check DESCRIPTION COMMAND...
    local what=$1
    shift
    if "$@"; then ok; else bad "$what"; fi
}
finish() {
    echo "$npass passed, $nfail failed"
    [ "$nfail" -eq 0 ]
}
