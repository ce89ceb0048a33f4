#!/usr/bin/env python3
"""compare.py - compare objects as kubectl reads them with what rightplace delivered.

usage: compare.py TRUTH CANDIDATE [CANDIDATE...]

Each file holds JSON values, one after another (what `kubectl label --local -o json` prints
for a multi-document file), a JSON array of objects, or a List with items. Objects are
matched by (apiVersion, kind, namespace, name). For every object of TRUTH, each candidate must
hold the same object: every field but metadata identical, metadata.name and namespace
identical, and every label and annotation of TRUTH present with the same value (rightplace
may add its own). The label `fidelity-check` (added by `kubectl label`) is ignored.
Integers compare exactly (Python's json keeps every digit) and an integer never equals a
float: 9007199254740993 != 9007199254740992 and 1 != 1.0. Exit 0 when all match, else 1
with every difference printed.
"""
import json
import sys

IGNORED_LABEL = "fidelity-check"


def load(path):
    text = open(path, encoding="utf-8").read()
    dec = json.JSONDecoder()
    i, out = 0, []
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            break
        v, i = dec.raw_decode(text, i)
        if isinstance(v, list):
            out.extend(v)
        elif isinstance(v, dict) and v.get("kind") == "List":
            out.extend(v.get("items", []))
        else:
            out.append(v)
    return out


def ident(o):
    m = o.get("metadata", {})
    return (o.get("apiVersion"), o.get("kind"), m.get("namespace"), m.get("name"))


def same(a, b, path, diffs):
    if type(a) is not type(b):
        diffs.append("%s: %s %r != %s %r" % (path, type(a).__name__, a, type(b).__name__, b))
    elif isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in b:
                diffs.append("%s.%s: missing (want %r)" % (path, k, a[k]))
            elif k not in a:
                diffs.append("%s.%s: unexpected %r" % (path, k, b[k]))
            else:
                same(a[k], b[k], "%s.%s" % (path, k), diffs)
    elif isinstance(a, list):
        if len(a) != len(b):
            diffs.append("%s: %d items != %d items" % (path, len(a), len(b)))
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, "%s[%d]" % (path, i), diffs)
    elif a != b:
        diffs.append("%s: %r != %r" % (path, a, b))


def compare(truth, cand, name):
    diffs = []
    got = {ident(o): o for o in cand}
    for t in truth:
        key = ident(t)
        where = "%s %s/%s" % (name, key[1], key[3])
        c = got.get(key)
        if c is None:
            diffs.append("%s: missing" % where)
            continue
        tm, cm = t.get("metadata", {}), c.get("metadata", {})
        for k in ("name", "namespace"):
            same(tm.get(k), cm.get(k), where + " metadata." + k, diffs)
        for k in ("labels", "annotations"):
            for lk, lv in (tm.get(k) or {}).items():
                if lk != IGNORED_LABEL:
                    same(lv, (cm.get(k) or {}).get(lk), "%s metadata.%s.%s" % (where, k, lk),
                         diffs)
        rest_t = {k: v for k, v in t.items() if k != "metadata"}
        rest_c = {k: v for k, v in c.items() if k != "metadata"}
        same(rest_t, rest_c, where, diffs)
    return diffs


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    truth = load(sys.argv[1])
    if not truth:
        print("no objects in %s" % sys.argv[1])
        return 1
    diffs = []
    for path in sys.argv[2:]:
        diffs += compare(truth, load(path), path.rsplit("/", 1)[-1])
    for d in diffs:
        print(d)
    print("%d objects, %d candidates, %d differences" % (len(truth), len(sys.argv) - 2,
                                                        len(diffs)))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
