#!/usr/bin/env bash
# Code and documentation cite only documents inside the repository: no DESIGN.md, no
# ../shared/ or reference/ notes that a clone does not have; and every docs/*.md that a
# source file or document names exists.
. "$(dirname "$0")/lib.sh"
cd "$RP_SOURCE_DIR"
files=$(git ls-files 2>/dev/null || find . -type f -not -path './.git/*' -not -path './build*')
files=$(printf '%s\n' $files | grep -vE '^tests/install/doc_refs\.sh$|^tests/data/|^tests/placement/|\.(png|jpg)$' || true)
hits=$(printf '%s\n' $files | xargs grep -nE 'DESIGN\.md|\.\./shared/|shared/reference|reference/nova|reference/gitops' 2>/dev/null || true)
check "references to documents outside the repository: $hits" test -z "$hits"
for d in $(printf '%s\n' $files | xargs grep -ohE 'docs/[a-z0-9_\-]+\.(md|1)' 2>/dev/null | tr -d '\\' | sort -u); do
    check "$d is named but does not exist" test -f "$d"
done
finish
