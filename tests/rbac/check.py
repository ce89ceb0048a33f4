#!/usr/bin/env python3
"""check.py [--allowed-only] RBAC_YAML REQUEST_LOG... - every request the fake API server
recorded (JSON lines, tests/fakekube) is allowed by a rule of the ClusterRole in RBAC_YAML,
and (without --allowed-only, for a log of every kind of request) every rule allows some
request. Exit 0 when that holds; prints what does not."""
import json
import re
import sys

import yaml


def request_attrs(r):
    """(nonResourceURL | None, verb, group, resource) as the API server's authorizer sees it."""
    path, method = r["path"], r["method"]
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) <= 2 or parts[:1] == ["apis"] and len(parts) <= 3:
        return path, method.lower(), None, None
    if parts[0] == "api":
        group, rest = "", parts[2:]
    else:
        group, rest = parts[1], parts[3:]
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        rest = rest[2:]
    resource, named = rest[0], len(rest) > 1
    verb = {"GET": "get" if named else "list", "PATCH": "patch", "DELETE": "delete",
            "POST": "create", "PUT": "update"}[method]
    if verb == "list" and (r.get("query") or {}).get("watch") in ("1", "true"):
        verb = "watch"
    return None, verb, group, resource


def allows(rule, attrs):
    url, verb, group, resource = attrs
    if verb not in rule.get("verbs", []) and "*" not in rule.get("verbs", []):
        return False
    if url is not None:
        return any(u == url or (u.endswith("*") and url.startswith(u[:-1]))
                   for u in rule.get("nonResourceURLs", []))
    if "nonResourceURLs" in rule:
        return False
    return ((group in rule.get("apiGroups", []) or "*" in rule.get("apiGroups", [])) and
            (resource in rule.get("resources", []) or "*" in rule.get("resources", [])))


def main():
    args = sys.argv[1:]
    allowed_only = args[:1] == ["--allowed-only"]
    if allowed_only:
        args = args[1:]
    docs = list(yaml.safe_load_all(open(args[0])))
    role = [d for d in docs if d and d.get("kind") == "ClusterRole"][0]
    rules = role["rules"]
    used = [0] * len(rules)
    bad, n = {}, 0
    for log in args[1:]:
        for line in open(log):
            if not line.strip():
                continue
            r = json.loads(line)
            n += 1
            attrs = request_attrs(r)
            hits = [i for i, rule in enumerate(rules) if allows(rule, attrs)]
            if not hits:
                bad.setdefault(attrs, r["method"] + " " + r["path"])
            for i in hits:
                used[i] += 1
    ok = True
    for attrs, example in sorted(bad.items(), key=lambda kv: str(kv[0])):
        print("not allowed: %s (e.g. %s)" % (attrs, example))
        ok = False
    for i, u in enumerate(used):
        print("rule %d: %d requests: %s" % (i, u, json.dumps(rules[i], sort_keys=True)))
        if not u and not allowed_only:
            print("unused rule %d" % i)
            ok = False
    print("%d requests, %d rules, %s" % (n, len(rules), "ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
