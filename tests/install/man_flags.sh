#!/usr/bin/env bash
# The man page, the bash and zsh completions and the help stay true to each other: every
# option `rightplace --help` or `rightplace COMMAND --help` prints is in docs/rightplace.1
# (OPTIONS, as rendered by man) and in both completions, every option the man page documents is one
# the program prints, and every command is in the man page's COMMANDS section.
# Environment: RP_BINARY, RP_SOURCE_DIR.
. "$(dirname "$0")/lib.sh"

page=$RP_SOURCE_DIR/docs/rightplace.1
[ -f "$page" ] || { bad "no man page at $page"; finish; }
MANWIDTH=200 man -l "$page" 2>/dev/null | col -b >"$TMP/man.txt"
check "man renders the page" grep -q '^OPTIONS' "$TMP/man.txt"

# Commands: those the top-level help lists (indented names under a "commands" heading) and
# those the man page documents in COMMANDS.
"$RP_BINARY" --help >"$TMP/help.txt" 2>&1 || true
awk 'tolower($0) ~ /^[a-z ]*commands?:/ {on=1; next} /^[^ ]/ {on=0}
     on && /^  [a-z]/ {print $1}' "$TMP/help.txt" | sort -u >"$TMP/cmds.help"
awk '/^COMMANDS/ {on=1; next} /^[A-Z]/ {on=0} on && /^       [a-z]/ {print $1}' "$TMP/man.txt" |
    sort -u >"$TMP/cmds.man"
check "--help lists commands" test -s "$TMP/cmds.help"
check "commands in --help and in the man page differ: $(diff "$TMP/cmds.help" "$TMP/cmds.man" | tr '\n' ' ')" \
    cmp -s "$TMP/cmds.help" "$TMP/cmds.man"

# Options printed by the program, top level and per command.
cp "$TMP/help.txt" "$TMP/all-help.txt"
while read -r cmd; do
    "$RP_BINARY" "$cmd" --help >>"$TMP/all-help.txt" 2>&1 || true
done <"$TMP/cmds.help"
grep -oE '(^|[^a-zA-Z0-9-])--[a-z][a-z0-9-]*' "$TMP/all-help.txt" | sed 's/^[^-]*//' | sort -u \
    >"$TMP/flags.help"
check "--help prints options" test "$(wc -l <"$TMP/flags.help")" -gt 10
awk '/^OPTIONS/ {on=1; next} /^[A-Z]/ {on=0} on' "$TMP/man.txt" >"$TMP/man-options.txt"
grep -oE '(^|[^a-zA-Z0-9-])--[a-z][a-z0-9-]*' "$TMP/man-options.txt" | sed 's/^[^-]*//' | sort -u \
    >"$TMP/flags.man"

while read -r f; do
    check "$f is printed by --help but not documented in OPTIONS of docs/rightplace.1" \
        grep -qxF -- "$f" "$TMP/flags.man"
    check "$f is missing from the bash completion (dist/completion/rightplace.bash)" \
        grep -qE -- "(^|[ \"])$f([ \"|)]|$)" "$RP_SOURCE_DIR/dist/completion/rightplace.bash"
    check "$f is missing from the zsh completion (dist/completion/_rightplace)" \
        grep -qE -- "'(\([^)]*\))?(\*)?$f\[" "$RP_SOURCE_DIR/dist/completion/_rightplace"
done <"$TMP/flags.help"
while read -r f; do
    check "$f is documented in docs/rightplace.1 but no --help prints it" \
        grep -qxF -- "$f" "$TMP/flags.help"
done <"$TMP/flags.man"
# Every environment variable the code reads is in ENVIRONMENT.
awk '/^ENVIRONMENT/ {on=1; next} /^[A-Z]/ {on=0} on' "$TMP/man.txt" >"$TMP/man-env.txt"
for v in $(cat "$RP_SOURCE_DIR"/base/*.[ch] "$RP_SOURCE_DIR"/placement/*.[ch] \
    "$RP_SOURCE_DIR"/render/*.[ch] "$RP_SOURCE_DIR"/reconciler/*.[ch] |
    grep -oE 'getenv\("[A-Z_][A-Z0-9_]*"\)|"RIGHTPLACE_[A-Z0-9_]+"' | grep -oE '[A-Z_][A-Z0-9_]+' | sort -u); do
    check "\$$v is read by the code but not in ENVIRONMENT of docs/rightplace.1" \
        grep -qw -- "$v" "$TMP/man-env.txt"
done

# The exit statuses: those of main.c's enum, the man page's EXIT STATUS and the README table.
grep -oE 'RC_EXIT_[A-Z_]+ = [0-9]+' "$RP_SOURCE_DIR/reconciler/main.c" | grep -oE '[0-9]+$' | sort -u \
    >"$TMP/exit.code"
awk '/^EXIT STATUS/ {on=1; next} /^[A-Z]/ {on=0} on && /^       [0-9]+ / {print $1}' "$TMP/man.txt" |
    sort -u >"$TMP/exit.man"
grep -oE '^\| [0-9]+ \|' "$RP_SOURCE_DIR/README.md" | grep -oE '[0-9]+' | sort -u >"$TMP/exit.readme"
check "main.c names exit statuses" test -s "$TMP/exit.code"
check "exit statuses of main.c and the man page differ: $(diff "$TMP/exit.code" "$TMP/exit.man" | tr '\n' ' ')" \
    cmp -s "$TMP/exit.code" "$TMP/exit.man"
check "exit statuses of main.c and README.md differ: $(diff "$TMP/exit.code" "$TMP/exit.readme" | tr '\n' ' ')" \
    cmp -s "$TMP/exit.code" "$TMP/exit.readme"
finish
