#!/usr/bin/env python3
"""fakekube.py - a fake Kubernetes API server for rightplace's tests (standard library only).

It listens on 127.0.0.1 (random port, written to --port-file) over TLS and behaves like the
real API server where rightplace depends on it:

- auth: a bearer token listed in --tokens-file (re-read on every request, so tests can rotate
  tokens) or a client certificate signed by --client-ca; otherwise 401 Status.
- legacy discovery: /api, /api/v1, /apis, /apis/<g>/<v> for core v1, apps/v1, batch/v1,
  apiextensions.k8s.io/v1, ray.io/v1 (with --gate-ray: only once its CRDs exist) and every
  applied CRD's group/version.
- server-side apply: PATCH with Content-Type application/apply-patch+yaml only (others: 415),
  fieldManager required (400), body names must match the URL (400), managedFields refused,
  namespace must exist (404). Creates get uid, resourceVersion, creationTimestamp and
  managedFields; updates merge maps (lists replaced) and bump resourceVersion when something
  changed. CRDs become Established (after --crd-establish-after GETs of the CRD).
- GET, LIST (labelSelector, fieldSelector, limit/continue), DELETE (DeleteOptions,
  preconditions.uid → 409; a namespace's delete deletes what is in it, each a change of its
  own).
- pods/NAME/status, nodes/NAME/status: apply (PATCH application/apply-patch+yaml, fieldManager
  required) sets the body's status only (merged as apply merges; the rest of the body is
  ignored), 404 when the object does not exist, and bumps resourceVersion only when the status
  changed.
- WATCH (GET on a list path, or one object's path, with watch=1|true; labelSelector and
  fieldSelector as LIST; limit/continue ignored): 200, chunked, one event a chunk, each a JSON
  object and a newline, {"type": "ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK"|"ERROR", "object": ..}
  with apiVersion and kind, at the change's resourceVersion. resourceVersion absent, "" or "0":
  ADDED for each object that matches (in LIST order), then the changes; N: every change after N,
  then the live ones; N older than the history reaches: one ERROR event, a Status 410 Expired
  "too old resource version: N (OLDEST)"; not a number: 400. With a selector, an object leaving
  it is DELETED (in its new state) and one entering it ADDED. timeoutSeconds (default 1800 s)
  ends the body cleanly (the zero-length chunk); allowWatchBookmarks=true: a BOOKMARK
  {"kind", "apiVersion", "metadata": {"resourceVersion": <the store's rv>}} every
  --bookmark-interval-ms (default 60000, the real server's minute) and one before that end.
  A LIST's metadata.resourceVersion is a point a watch can start from. Watches are not counted
  in inflight (the real server counts no long-running request), and the request is logged once,
  status 200, when its stream starts.
- --watch-history N (default 10000): the changes (creates, updates that changed something,
  deletes) a watch can start from; older ones are dropped first.
- Status errors with the real server's messages and shapes.
- faults from --faults-file (JSON, re-read when it changes): a list of
  {"path": regex, "method": "GET", "status": 500, "retry_after": 1, "delay": 2.5,
   "drop": true, "count": 2}; count (default: unlimited) is the number of requests hit;
  "query": regex (optional) must also be found in the raw query string (e.g. "watch").
  {"wrong_cert": true, "count": n} serves --wrong-cert (another CA) to new connections.
  {"path": regex, "gone": true, "count": n}: a watch gets 200 and one ERROR event (410
  Expired, too old resource version), any other request 410 Expired (the continue token is too
  old): what the real server says once its history has moved past the client.
- every request is appended to --log as one JSON line: method, path, query, content_type,
  accept, body, auth ("bearer" | "cert" | "none"), status, conn (which TLS connection carried
  it, numbered from 1), inflight (requests being handled when it arrived, itself
  included) and bytes (the answer's body; absent for a watch's stream). Token values are
  never written.
- --state: JSON {"objects": [...]} preloaded (nodes, pods, namespaces, ...).
- --write-latency-ms N (default 0): the service time of the real server's storage. Every
  authenticated mutating request (PATCH, POST, PUT, DELETE) waits N ms before the store
  handles it, standing in for the etcd commit a real API server makes for each write (a Raft
  round and an fsync: milliseconds). The wait holds no lock and sleeps outside the GIL, so
  concurrent requests overlap as they do on a real server (which commits many writes at
  once); reads (GET, LIST, discovery) are answered at once, from memory, as the real
  server's watch cache answers them. Rejected writes wait too (the real server would refuse
  some before storage: the model is pessimistic there). Nothing else changes: answers,
  order, faults and the log are the same as with 0.
"""
import argparse
import collections
import copy
import datetime
import http.server
import json
import os
import re
import select
import socket
import socketserver
import ssl
import sys
import threading
import time
import urllib.parse
import uuid

BUILTIN = {
    # group: (version, [(resource, kind, namespaced, verbs)])
    "": ("v1", [
        ("namespaces", "Namespace", False),
        ("nodes", "Node", False),
        ("pods", "Pod", True),
        ("configmaps", "ConfigMap", True),
        ("services", "Service", True),
        ("secrets", "Secret", True),
        ("serviceaccounts", "ServiceAccount", True),
    ]),
    "apps": ("v1", [
        ("deployments", "Deployment", True),
        ("statefulsets", "StatefulSet", True),
        ("daemonsets", "DaemonSet", True),
        ("replicasets", "ReplicaSet", True),
    ]),
    "batch": ("v1", [
        ("jobs", "Job", True),
        ("cronjobs", "CronJob", True),
    ]),
    "apiextensions.k8s.io": ("v1", [
        ("customresourcedefinitions", "CustomResourceDefinition", False),
    ]),
    "ray.io": ("v1", [
        ("rayclusters", "RayCluster", True),
        ("rayjobs", "RayJob", True),
        ("rayservices", "RayService", True),
    ]),
}
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
APPLY_CT = "application/apply-patch+yaml"
MUTATING = ("PATCH", "POST", "PUT", "DELETE")
# Go's strconv.ParseBool, which the real server reads watch=, allowWatchBookmarks= with
TRUE = ("1", "t", "T", "TRUE", "true", "True")
# a watch without timeoutSeconds: the real server picks 30 to 60 minutes (--min-request-timeout
# 1800 s, times 1 to 2)
WATCH_TIMEOUT = 1800
# what the real storage layer answers a list whose continue token etcd has compacted away
CONTINUE_EXPIRED = ("The provided continue parameter is too old to display a consistent list "
                    "result. You can start a new list without the continue parameter.")


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def status(code, reason, message, details=None):
    s = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
         "message": message, "reason": reason, "code": code}
    if details:
        s["details"] = details
    return code, s


def merge(dst, src):
    """SSA-like merge for a single manager: maps merge, everything else replaces."""
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            merge(dst[k], v)
        else:
            dst[k] = copy.deepcopy(v)
    return dst


def parse_selector(text):
    """kubectl label selector syntax → list of (key, op, values)."""
    reqs = []
    if not text:
        return reqs
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    for p in parts:
        p = p.strip()
        if not p:
            continue
        m = re.match(r"^(\S+)\s+(in|notin)\s+\((.*)\)$", p)
        if m:
            reqs.append((m.group(1), m.group(2), [v.strip() for v in m.group(3).split(",")]))
        elif "!=" in p:
            k, v = p.split("!=", 1)
            reqs.append((k.strip(), "!=", [v.strip()]))
        elif "==" in p:
            k, v = p.split("==", 1)
            reqs.append((k.strip(), "=", [v.strip()]))
        elif "=" in p:
            k, v = p.split("=", 1)
            reqs.append((k.strip(), "=", [v.strip()]))
        elif p.startswith("!"):
            reqs.append((p[1:].strip(), "!", []))
        else:
            reqs.append((p, "exists", []))
    return reqs


def selector_matches(reqs, labels):
    for k, op, vals in reqs:
        has = k in labels
        v = labels.get(k)
        if op == "=" and (not has or v != vals[0]):
            return False
        if op == "!=" and has and v == vals[0]:
            return False
        if op == "in" and (not has or v not in vals):
            return False
        if op == "notin" and has and v in vals:
            return False
        if op == "exists" and not has:
            return False
        if op == "!" and has:
            return False
    return True


FIELDS = ("metadata.name", "metadata.namespace", "spec.nodeName", "status.phase",
          "spec.unschedulable")


def parse_field_selector(text):
    """field selector: a=b, a==b, a!=b, comma-separated, on the fields the real server
    supports for pods and nodes (others: 400 like the real one)."""
    reqs = []
    for p in [x.strip() for x in text.split(",") if x.strip()]:
        if "!=" in p:
            k, v = p.split("!=", 1)
            op = "!="
        elif "==" in p:
            k, v = p.split("==", 1)
            op = "="
        elif "=" in p:
            k, v = p.split("=", 1)
            op = "="
        else:
            raise ValueError("invalid selector: '%s'; can't understand '%s'" % (text, p))
        if k.strip() not in FIELDS:
            raise ValueError('"%s" is not a known field selector: only "%s"'
                             % (k.strip(), '", "'.join(FIELDS)))
        reqs.append((k.strip(), op, v.strip()))
    return reqs


def field_matches(reqs, obj):
    for k, op, v in reqs:
        cur = obj
        for part in k.split("."):
            cur = cur.get(part) if isinstance(cur, dict) else None
        cur = "" if cur is None else (str(cur).lower() if isinstance(cur, bool) else str(cur))
        if (op == "=") != (cur == v):
            return False
    return True


class Objects(dict):
    """(group, resource, ns, name) -> obj, keeping the CRDs' keys aside (in insertion order)
    so that discovery, which every request consults, does not walk every object."""

    def __init__(self):
        super().__init__()
        self.crds = {}

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        if key[0] == "apiextensions.k8s.io" and key[1] == "customresourcedefinitions":
            self.crds[key] = None

    def __delitem__(self, key):
        super().__delitem__(key)
        self.crds.pop(key, None)


class Store:
    def __init__(self, args):
        self.lock = threading.RLock()
        # watches wait on it (waiting releases the lock) and every change wakes them
        self.changed = threading.Condition(self.lock)
        self.objects = Objects()  # (group, resource, ns, name) -> obj
        self.rv = 1000
        self.args = args
        self.crd_gets = {}
        # the changes a watch can start from, oldest first: (rv, key, old, new), old None for a
        # create, new None for a delete; --watch-history bounds it as the real server's watch
        # cache is bounded, and a watch from before its first change gets 410 Expired
        self.history = collections.deque()
        self.floor = self.rv  # a watch from any rv >= floor sees every change after it
        self.watches = set()  # the open watch streams, each handed every change as it happens
        for ns in ("default", "kube-system"):
            self._put_raw("", "namespaces", None, ns, {
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": ns}, "status": {"phase": "Active"}})

    def next_rv(self):
        self.rv += 1
        return str(self.rv)

    def _put_raw(self, group, resource, ns, name, obj):
        md = obj.setdefault("metadata", {})
        md.setdefault("uid", str(uuid.uuid4()))
        md.setdefault("resourceVersion", self.next_rv())
        md.setdefault("creationTimestamp", now())
        self.objects[(group, resource, ns, name)] = obj
        self.floor = self.rv  # preloaded objects are where the history starts, not changes

    def change(self, key, old, new):
        """Record a stored change (lock held): a create (old None), an update, or a delete (new
        None, which gets a resourceVersion of its own, as etcd gives a delete a revision)."""
        if new is None:
            rv = int(self.next_rv())
        else:
            rv = int(new["metadata"]["resourceVersion"])
            # what the watches send must not follow later edits of the stored object; old
            # needs no copy: it has left the store (replaced or deleted), nothing edits it
            new = copy.deepcopy(new)
        ch = (rv, key, old, new)
        self.history.append(ch)
        while len(self.history) > self.args.watch_history:
            self.floor = self.history.popleft()[0]
        for w in self.watches:
            if w.wants(key):
                w.pending.append(ch)
        self.changed.notify_all()

    def resources(self):
        """group -> (version, {resource: (kind, namespaced)})"""
        out = {}
        for g, (v, lst) in BUILTIN.items():
            if g == "ray.io" and self.args.gate_ray:
                continue
            out[g] = (v, {r: (k, n) for r, k, n in lst})
        for key in self.objects.crds:
            crd = self.objects[key]
            if not crd_established(crd):
                continue
            spec = crd.get("spec", {})
            names = spec.get("names", {})
            grp = spec.get("group", "")
            vers = [v.get("name") for v in spec.get("versions", []) if v.get("served", True)]
            for v in vers[:1]:
                entry = out.setdefault(grp, (v, {}))
                entry[1][names.get("plural", "")] = (names.get("kind", ""),
                                                     spec.get("scope") == "Namespaced")
        return out


def crd_established(crd):
    for c in crd.get("status", {}).get("conditions", []):
        if c.get("type") == "Established" and c.get("status") == "True":
            return True
    return False


def watch_object(c, obj, rv):
    """obj as a watch event carries it: with apiVersion and kind (LIST items have none), at the
    change's resourceVersion. Shallow copies: the event is encoded at once."""
    out = dict(obj)
    out["apiVersion"] = c["gv"]
    out["kind"] = c["kind"]
    out["metadata"] = dict(obj.get("metadata") or {}, resourceVersion=str(rv))
    return out


def encode_event(typ, obj):
    """One event of a watch stream: a JSON object and a newline, "type" first as the real
    server writes it."""
    return ('{"type": "%s", "object": %s}\n' % (typ, json.dumps(obj, sort_keys=True))).encode()


def too_old(rv, oldest):
    """The Status of the ERROR event a watch from an rv the history no longer reaches gets."""
    return status(410, "Expired", "too old resource version: %s (%d)" % (rv, oldest))[1]


class Watch:
    """One open watch stream: what it selects, and the changes it has not sent yet (Store.change
    appends them under the store lock; the stream's thread takes them)."""

    def __init__(self, c, reqs, fsel):
        self.c = c
        self.reqs = reqs
        self.fsel = fsel
        self.start = 0  # changes at or before this rv are not sent (a watch from rv N)
        self.pending = []
        self.initial = []  # encoded ADDED events of a watch from "0" or ""
        self.expired = None  # the Status of an ERROR event that is all the stream says
        self.bookmarks = False
        self.timeout = WATCH_TIMEOUT

    def wants(self, key):
        c = self.c
        return (key[0] == c["group"] and key[1] == c["resource"]
                and (c["ns"] is None or key[2] == c["ns"]))

    def matches(self, obj):
        return (obj is not None
                and selector_matches(self.reqs, obj.get("metadata", {}).get("labels") or {})
                and field_matches(self.fsel, obj))

    def event(self, ch):
        """The encoded event a change makes on this watch, or None. The real server's rules for
        a selector: an object that leaves the selection is DELETED (in its new state), one that
        enters it ADDED; a change outside it before and after is not sent."""
        rv, key, old, new = ch
        if rv <= self.start or not self.wants(key):
            return None
        was, now_ = self.matches(old), self.matches(new)
        if new is None:
            typ, obj = ("DELETED", old) if was else (None, None)
        elif was and now_:
            typ, obj = "MODIFIED", new
        elif was:
            typ, obj = "DELETED", new
        elif now_:
            typ, obj = "ADDED", new
        else:
            typ, obj = None, None
        if typ is None:
            return None
        return encode_event(typ, watch_object(self.c, obj, rv))

    def bookmark(self, rv):
        # never behind the rv the watch asked for (a future one): resuming from it is the same
        rv = max(rv, self.start)
        return encode_event("BOOKMARK", {"kind": self.c["kind"], "apiVersion": self.c["gv"],
                                         "metadata": {"resourceVersion": str(rv)}})


class Faults:
    def __init__(self, path):
        self.path = path
        self.mtime = None
        self.rules = []
        self.lock = threading.Lock()

    def match(self, method, path, query=""):
        if not self.path:
            return None
        with self.lock:
            try:
                st = os.stat(self.path)
                key = (st.st_mtime_ns, st.st_size, st.st_ino)
            except OSError:
                key = None
            if key != self.mtime:
                self.mtime = key
                self.rules = []
                if key:
                    with open(self.path) as f:
                        text = f.read()
                    self.rules = json.loads(text) if text.strip() else []
            for r in self.rules:
                if bool(r.get("wrong_cert")) != (method == "TLS"):
                    continue
                if r.get("method") and r["method"] != method:
                    continue
                if not re.search(r.get("path", ""), path):
                    continue
                # the raw query string, e.g. "watch" to hit a path's watches but not its lists
                if r.get("query") and not re.search(r["query"], query):
                    continue
                if "count" in r:
                    if r["count"] <= 0:
                        continue
                    r["count"] -= 1
                return dict(r)
        return None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fakekube/1"

    def log_message(self, fmt, *args):  # quiet
        pass

    # ---- plumbing ----
    def send_json(self, code, obj, extra=None):
        data = json.dumps(obj, sort_keys=True).encode()
        self.rec["status"] = code
        self.rec["bytes"] = len(data)  # the answer's body (benches add them up)
        self.record()  # before the answer: a client that got it finds the request logged
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        # headers and body in one write (one TLS record, one wake-up of the client), as Go's
        # net/http sends a small answer
        self._headers_buffer.append(b"\r\n" + data)
        self.flush_headers()

    def auth_kind(self):
        srv = self.server
        h = self.headers.get("Authorization", "")
        if h.startswith("Bearer "):
            tok = h[7:].strip()
            try:
                with open(srv.args.tokens_file) as f:
                    valid = [t.strip() for t in f.read().split("\n") if t.strip()]
            except OSError:
                valid = []
            return "bearer" if tok in valid else "bad-bearer"
        cert = None
        try:
            cert = self.connection.getpeercert()
        except (ValueError, AttributeError):
            cert = None
        if cert:
            return "cert"
        return "none"

    def record(self):
        rec = self.rec
        if rec.get("_logged"):
            return
        rec["_logged"] = True
        rec = {k: v for k, v in rec.items() if k != "_logged"}
        line = (json.dumps(rec, sort_keys=True) + "\n").encode()
        with self.server.log_lock:
            # one O_APPEND descriptor for the server's life: a test that truncates the log
            # (th_kube_clear_requests) gets the next lines from its new start
            os.write(self.server.log_fd, line)

    def handle_any(self, method):
        u = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(u.query, keep_blank_values=True)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        auth = self.auth_kind()
        with self.server.log_lock:
            self.server.inflight += 1
            inflight = self.server.inflight
        self.rec = {"method": method, "path": u.path, "query": {k: v[0] for k, v in query.items()},
                    "conn": getattr(self.connection, "rp_conn_id", 0), "inflight": inflight,
                    "content_type": self.headers.get("Content-Type"),
                    "accept": self.headers.get("Accept"),
                    "body": body.decode("utf-8", "replace"),
                    "auth": "bearer" if auth == "bad-bearer" else auth,
                    "status": None}
        self.streamed = False  # a watch stream: no longer counted in flight
        try:
            fault = self.server.faults.match(method, u.path, u.query)
            if fault:
                self.rec["fault"] = True
                if fault.get("delay"):
                    time.sleep(float(fault["delay"]))
                if fault.get("drop"):
                    self.rec["status"] = "dropped"
                    self.record()
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return
                if fault.get("gone"):
                    # what the real server says once its history has moved past the client's
                    # resourceVersion: in a watch, a 200 stream of one ERROR event; to a list
                    # continued with a compacted token, 410
                    if method == "GET" and query.get("watch", [""])[0] in TRUE:
                        with self.server.api.s.lock:
                            oldest = self.server.api.s.rv
                        rv = query.get("resourceVersion", [""])[0] or "0"
                        w = Watch(None, [], [])
                        w.expired = too_old(rv, oldest)
                        self.stream(w)
                    else:
                        self.send_json(*status(410, "Expired", CONTINUE_EXPIRED))
                    return
                if fault.get("status"):
                    code = int(fault["status"])
                    extra = {}
                    if code == 429:
                        extra["Retry-After"] = str(fault.get("retry_after", 1))
                        _, st = status(429, "TooManyRequests",
                                       "Too many requests, please try again later.",
                                       {"retryAfterSeconds": int(fault.get("retry_after", 1))})
                    else:
                        _, st = status(code, "InternalError",
                                       "Internal error occurred: injected fault")
                    self.send_json(code, st, extra)
                    return
            if auth not in ("bearer", "cert"):
                self.send_json(*status(401, "Unauthorized", "Unauthorized"))
                return
            if method in MUTATING and self.server.write_latency > 0:
                time.sleep(self.server.write_latency)  # the storage commit: no lock held
            code, obj = self.server.api.dispatch(method, u.path, query,
                                                 self.headers.get("Content-Type"), body)
            if isinstance(obj, Watch):
                self.stream(obj)
            else:
                self.send_json(code, obj)
        finally:
            if not self.streamed:
                with self.server.log_lock:
                    self.server.inflight -= 1
            self.record()

    # ---- watch streams ----
    def chunk(self, data):
        """One chunk of the chunked body (b"": the last); the socket writer sends it at once."""
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def peer_closed(self):
        """Whether the client has closed its end (a watch writes nothing while idle, so a write
        error would come only at the next event or bookmark)."""
        conn = self.connection
        try:
            poll = select.poll()  # not select(): a busy test can hold descriptors past 1023
            poll.register(conn, select.POLLIN)
            if not poll.poll(0):
                return False
        except (OSError, ValueError):
            return True
        timeout = conn.gettimeout()
        try:
            conn.setblocking(False)
            data = conn.recv(1)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return False  # part of a TLS record: not an end
        except OSError:
            return True
        finally:
            conn.settimeout(timeout)
        if data:
            # a byte of a pipelined request, now lost: this connection ends after the watch
            self.close_connection = True
            return False
        return True  # EOF or TLS close_notify

    def stream(self, w):
        """Serve an open watch until its timeout, the client's leaving, or an ERROR event. No
        lock is held while it waits or writes."""
        srv = self.server
        store = srv.api.s
        self.rec["status"] = 200
        self.record()
        # a watch is a long-running request: the real server counts none of them in flight
        self.streamed = True
        with srv.log_lock:
            srv.inflight -= 1
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if w.expired:
                self.chunk(encode_event("ERROR", w.expired))
                self.chunk(b"")
                return
            for data in w.initial:
                self.chunk(data)
            w.initial = None
            interval = srv.args.bookmark_interval_ms / 1000.0
            t = time.monotonic()
            deadline = t + w.timeout
            next_bookmark = t + interval
            while True:
                with store.changed:
                    if not w.pending:
                        until = min(deadline, next_bookmark) if w.bookmarks else deadline
                        # at least once a second: to notice a client that has gone
                        store.changed.wait(max(0.0, min(until - time.monotonic(), 1.0)))
                    batch, w.pending = w.pending, []
                    rv = store.rv  # every change up to rv is in this batch or was sent before
                for ch in batch:
                    data = w.event(ch)
                    if data:
                        self.chunk(data)
                t = time.monotonic()
                if t >= deadline:
                    if w.bookmarks:
                        self.chunk(w.bookmark(rv))
                    self.chunk(b"")  # a clean end of the body: the client watches again
                    return
                if w.bookmarks and t >= next_bookmark:
                    self.chunk(w.bookmark(rv))
                    next_bookmark = t + interval
                if self.peer_closed():
                    self.close_connection = True
                    return
        except OSError:  # the client went away, or stopped reading for the socket's timeout
            self.close_connection = True
        finally:
            with store.lock:
                store.watches.discard(w)

    def do_GET(self):
        self.handle_any("GET")

    def do_PATCH(self):
        self.handle_any("PATCH")

    def do_DELETE(self):
        self.handle_any("DELETE")

    def do_POST(self):
        self.handle_any("POST")

    def do_PUT(self):
        self.handle_any("PUT")


class API:
    def __init__(self, store):
        self.s = store

    def dispatch(self, method, path, query, ctype, body):
        with self.s.lock:
            return self._dispatch(method, path, query, ctype, body)

    def _dispatch(self, method, path, query, ctype, body):
        parts = [p for p in path.split("/") if p]
        res = self.s.resources()
        if method == "GET" and parts == ["api"]:
            return 200, {"kind": "APIVersions", "versions": ["v1"],
                         "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                         "serverAddress": "127.0.0.1:6443"}]}
        if method == "GET" and parts == ["apis"]:
            groups = []
            for g in sorted(k for k in res if k):
                gv = "%s/%s" % (g, res[g][0])
                groups.append({"name": g, "versions": [{"groupVersion": gv, "version": res[g][0]}],
                               "preferredVersion": {"groupVersion": gv, "version": res[g][0]}})
            return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
        if parts[:1] == ["api"] and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return status(404, "NotFound", "the server could not find the requested resource")
        if group not in res or res[group][0] != version:
            return status(404, "NotFound", "the server could not find the requested resource")
        gv = version if not group else "%s/%s" % (group, version)
        table = res[group][1]
        if not rest:
            if method != "GET":
                return status(405, "MethodNotAllowed", "the server does not allow this method")
            lst = []
            for r in sorted(table):
                kind, nsd = table[r]
                lst.append({"name": r, "singularName": kind.lower(), "namespaced": nsd,
                            "kind": kind, "verbs": VERBS})
                lst.append({"name": r + "/status", "singularName": "", "namespaced": nsd,
                            "kind": kind, "verbs": ["get", "patch", "update"]})
            return 200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                         "resources": lst}
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        resource = rest[0]
        name = rest[1] if len(rest) > 1 else None
        # subresources: only pods/status and nodes/status, for tests that move a pod's phase
        # or a node's conditions and allocatable as a kubelet does
        sub = rest[2] if len(rest) == 3 else None
        if len(rest) > 3 or resource not in table or \
                (sub is not None and (group, resource) not in (("", "pods"), ("", "nodes"))) or \
                (sub is not None and sub != "status"):
            return status(404, "NotFound", "the server could not find the requested resource")
        kind, namespaced = table[resource]
        if ns is not None and not namespaced:
            return status(404, "NotFound", "the server could not find the requested resource")
        gr = resource if not group else "%s.%s" % (resource, group)
        ctx = dict(group=group, version=version, gv=gv, kind=kind, resource=resource, gr=gr,
                   ns=ns, name=name, namespaced=namespaced)
        watch = method == "GET" and sub is None and query.get("watch", [""])[0] in TRUE
        if name is None:
            if watch:
                return self.watch(ctx, query)
            if method == "GET":
                return self.list(ctx, query)
            return status(405, "MethodNotAllowed", "the server does not allow this method")
        if namespaced and ns is None:
            return status(404, "NotFound", "the server could not find the requested resource")
        if watch:
            return self.watch(ctx, query)  # one object's watch: metadata.name=<name>
        if sub == "status":
            if method == "GET":
                return self.get(ctx)
            if method == "PATCH":
                return self.apply_status(ctx, query, ctype, body)
            return status(405, "MethodNotAllowed", "the server does not allow this method")
        if method == "GET":
            return self.get(ctx)
        if method == "PATCH":
            return self.apply(ctx, query, ctype, body)
        if method == "DELETE":
            return self.delete(ctx, ctype, body)
        return status(405, "MethodNotAllowed", "the server does not allow this method")

    def key(self, c, name=None):
        return (c["group"], c["resource"], c["ns"], name or c["name"])

    def notfound(self, c):
        return status(404, "NotFound", '%s "%s" not found' % (c["gr"], c["name"]),
                      {"name": c["name"], "group": c["group"], "kind": c["resource"]})

    def present(self, c, obj):
        out = copy.deepcopy(obj)
        out["apiVersion"] = c["gv"]
        out["kind"] = c["kind"]
        return out

    def get(self, c):
        k = self.key(c)
        obj = self.s.objects.get(k)
        if obj is None:
            return self.notfound(c)
        if c["resource"] == "customresourcedefinitions" and not crd_established(obj):
            n = self.s.crd_gets.get(c["name"], 0) + 1
            self.s.crd_gets[c["name"]] = n
            if n >= self.s.args.crd_establish_after:
                # the real server's controller writes the status: a change, which watches see
                new = copy.deepcopy(obj)
                establish(new)
                new["metadata"]["resourceVersion"] = self.s.next_rv()
                self.s.objects[k] = new
                self.s.change(k, obj, new)
                obj = new
        return 200, self.present(c, obj)

    def selectors(self, query):
        """(error, label requirements, field requirements) of a list or watch."""
        try:
            reqs = parse_selector(query.get("labelSelector", [""])[0])
        except Exception:  # noqa
            return status(400, "BadRequest", "unable to parse requirement"), None, None
        try:
            fsel = parse_field_selector(query.get("fieldSelector", [""])[0])
        except ValueError as e:
            return status(400, "BadRequest", str(e)), None, None
        return None, reqs, fsel

    def select(self, c, reqs, fsel):
        """The stored objects a list (or a watch's first events) shows, in the list's order."""
        out = []
        for (g, r, ns, name), obj in sorted(self.s.objects.items(),
                                            key=lambda kv: (kv[0][2] or "", kv[0][3])):
            if g != c["group"] or r != c["resource"]:
                continue
            if c["ns"] is not None and ns != c["ns"]:
                continue
            if not selector_matches(reqs, obj.get("metadata", {}).get("labels") or {}):
                continue
            if not field_matches(fsel, obj):
                continue
            out.append(obj)
        return out

    def watch(self, c, query):
        """Open a watch (the handler streams it): the first events and the registration happen
        under the store lock, so that the stream misses no change and repeats none."""
        err, reqs, fsel = self.selectors(query)
        if err:
            return err
        if c["name"]:
            fsel = fsel + [("metadata.name", "=", c["name"])]
        rv = query.get("resourceVersion", [""])[0]
        if rv not in ("", "0") and not re.match(r"^[0-9]+$", rv):
            return status(400, "BadRequest",
                          'resourceVersion: Invalid value: "%s": invalid resource version' % rv)
        t = query.get("timeoutSeconds", [""])[0]
        if t and not re.match(r"^[0-9]+$", t):
            return status(400, "BadRequest",
                          'timeoutSeconds: Invalid value: "%s": not a number of seconds' % t)
        # limit and continue mean nothing to a watch: the real server ignores them too
        w = Watch(c, reqs, fsel)
        w.bookmarks = query.get("allowWatchBookmarks", [""])[0] in TRUE
        if t and int(t) > 0:
            w.timeout = int(t)
        if rv in ("", "0"):
            # the current state as ADDED events, then the changes after it
            w.start = self.s.rv
            w.initial = [encode_event("ADDED", watch_object(
                c, obj, obj.get("metadata", {}).get("resourceVersion", "")))
                for obj in self.select(c, reqs, fsel)]
        else:
            n = int(rv)
            if n < self.s.floor:
                w.expired = too_old(n, self.s.floor)
                return 200, w
            # a future rv (which this server never gave) sends nothing until the store passes
            # it, as the real watch cache skips what is not newer than the watch
            w.start = n
            w.pending = [ch for ch in self.s.history if ch[0] > n and w.wants(ch[1])]
        self.s.watches.add(w)
        return 200, w

    def list(self, c, query):
        err, reqs, fsel = self.selectors(query)
        if err:
            return err
        items = [copy.deepcopy(obj) for obj in self.select(c, reqs, fsel)]
        start = 0
        cont = query.get("continue", [""])[0]
        if cont:
            m = re.match(r"^fake-continue-(\d+)$", cont)
            if not m:
                return status(400, "BadRequest", "continue key is not valid")
            start = int(m.group(1))
        limit = int(query.get("limit", ["0"])[0] or 0)
        md = {"resourceVersion": str(self.s.rv)}
        if limit > 0 and start + limit < len(items):
            md["continue"] = "fake-continue-%d" % (start + limit)
            md["remainingItemCount"] = len(items) - start - limit
            items = items[start:start + limit]
        else:
            items = items[start:]
        return 200, {"kind": c["kind"] + "List", "apiVersion": c["gv"], "metadata": md,
                     "items": items}

    def apply_doc(self, c, query, ctype, body):
        """The checks of an apply request, in the real server's order: (error, the body's
        object, fieldManager, dryRun)."""
        ct = (ctype or "").split(";")[0].strip()
        if ct != APPLY_CT:
            return status(415, "UnsupportedMediaType",
                          "the body of the request was in an unknown format - accepted media "
                          "types include: application/json-patch+json, application/merge-patch"
                          "+json, application/apply-patch+yaml"), None, None, None
        fm = query.get("fieldManager", [""])[0]
        if not fm:
            return status(400, "BadRequest",
                          'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required '
                          'value: is required for apply patch'), None, None, None
        dry = query.get("dryRun", [""])[0]
        if dry not in ("", "All"):
            return (status(400, "BadRequest", "Invalid dry run value: %s" % dry),
                    None, None, None)
        force = query.get("force", ["false"])[0]
        if force not in ("true", "false"):
            return (status(400, "BadRequest", "invalid value for force: %s" % force),
                    None, None, None)
        try:
            obj = json.loads(body.decode("utf-8"))
        except Exception:  # the fake only reads the JSON subset of YAML
            return (status(400, "BadRequest", "error decoding YAML: invalid body"),
                    None, None, None)
        if not isinstance(obj, dict):
            return (status(400, "BadRequest", "error decoding YAML: not an object"),
                    None, None, None)
        md = obj.get("metadata") or {}
        if obj.get("apiVersion") != c["gv"] or obj.get("kind") != c["kind"]:
            return status(400, "BadRequest",
                          "the API version in the data (%s) does not match the expected API "
                          "version (%s)" % (obj.get("apiVersion"), c["gv"])), None, None, None
        if md.get("name") != c["name"]:
            return status(400, "BadRequest",
                          "the name of the object (%s) does not match the name on the URL (%s)"
                          % (md.get("name"), c["name"])), None, None, None
        if c["namespaced"] and md.get("namespace") not in (None, c["ns"]):
            return status(400, "BadRequest",
                          "the namespace of the provided object does not match the namespace "
                          "sent on the request"), None, None, None
        if "managedFields" in md:
            return (status(400, "BadRequest", "metadata.managedFields must be nil"),
                    None, None, None)
        return None, obj, fm, dry

    def apply(self, c, query, ctype, body):
        err, obj, fm, dry = self.apply_doc(c, query, ctype, body)
        if err:
            return err
        if c["namespaced"] and ("", "namespaces", None, c["ns"]) not in self.s.objects:
            return status(404, "NotFound", 'namespaces "%s" not found' % c["ns"],
                          {"name": c["ns"], "kind": "namespaces"})
        k = self.key(c)
        cur = self.s.objects.get(k)
        applied = copy.deepcopy(obj)
        applied.pop("apiVersion", None)
        applied.pop("kind", None)
        applied.pop("status", None)
        if c["namespaced"]:
            applied.setdefault("metadata", {})["namespace"] = c["ns"]
        mf = {"manager": fm, "operation": "Apply", "apiVersion": c["gv"], "time": now(),
              "fieldsType": "FieldsV1", "fieldsV1": {}}
        if cur is None:
            new = applied
            nmd = new["metadata"]
            nmd["uid"] = str(uuid.uuid4())
            nmd["resourceVersion"] = self.s.next_rv()
            nmd["creationTimestamp"] = now()
            nmd["generation"] = 1
            nmd["managedFields"] = [mf]
            if c["resource"] == "customresourcedefinitions":
                new["status"] = {"conditions": []}
                if self.s.args.crd_establish_after <= 0:
                    establish(new)
            if c["resource"] == "namespaces":
                new["status"] = {"phase": "Active"}
            if not dry:
                self.s.objects[k] = new
                self.s.change(k, None, new)
            return 201, self.present(c, new)
        before = json.dumps(cur, sort_keys=True)
        new = copy.deepcopy(cur)
        merge(new, applied)
        nmd = new["metadata"]
        nmd["managedFields"] = [m for m in cur["metadata"].get("managedFields", [])
                                if (m.get("manager"), m.get("subresource")) != (fm, None)] + [mf]
        chk = copy.deepcopy(new)
        chk["metadata"]["managedFields"] = cur["metadata"].get("managedFields", [])
        if json.dumps(chk, sort_keys=True) != before:
            nmd["resourceVersion"] = self.s.next_rv()
            if json.dumps(new.get("spec"), sort_keys=True) != json.dumps(cur.get("spec"),
                                                                          sort_keys=True):
                nmd["generation"] = cur["metadata"].get("generation", 1) + 1
        else:
            new = cur  # no-op apply: nothing changes, not even resourceVersion
        if not dry and new is not cur:
            self.s.objects[k] = new
            self.s.change(k, cur, new)
        return 200, self.present(c, new)

    def apply_status(self, c, query, ctype, body):
        """Server-side apply to pods/NAME/status or nodes/NAME/status: the body's status only (the rest of it is
        ignored, as the real status subresource ignores it), merged as apply merges."""
        err, obj, fm, dry = self.apply_doc(c, query, ctype, body)
        if err:
            return err
        k = self.key(c)
        cur = self.s.objects.get(k)
        if cur is None:
            return self.notfound(c)
        new = copy.deepcopy(cur)
        st = obj.get("status")
        if isinstance(st, dict):
            merge(new.setdefault("status", {}), st)
        if json.dumps(new.get("status"), sort_keys=True) == \
                json.dumps(cur.get("status"), sort_keys=True):
            return 200, self.present(c, cur)  # nothing changes, not even resourceVersion
        mf = {"manager": fm, "operation": "Apply", "apiVersion": c["gv"], "time": now(),
              "fieldsType": "FieldsV1", "fieldsV1": {}, "subresource": "status"}
        nmd = new["metadata"]
        nmd["managedFields"] = [m for m in cur["metadata"].get("managedFields", [])
                                if (m.get("manager"), m.get("subresource")) != (fm, "status")]
        nmd["managedFields"].append(mf)
        nmd["resourceVersion"] = self.s.next_rv()
        if not dry:
            self.s.objects[k] = new
            self.s.change(k, cur, new)
        return 200, self.present(c, new)

    def delete(self, c, ctype, body):
        opts = {}
        if body:
            try:
                opts = json.loads(body.decode("utf-8"))
            except Exception:
                return status(400, "BadRequest", "error decoding DeleteOptions")
            if opts.get("kind", "DeleteOptions") != "DeleteOptions":
                return status(400, "BadRequest", "body is not DeleteOptions")
            pp = opts.get("propagationPolicy")
            if pp not in (None, "Background", "Foreground", "Orphan"):
                return status(400, "BadRequest",
                              "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: "
                              "Unsupported value: \"%s\"" % pp)
        k = self.key(c)
        cur = self.s.objects.get(k)
        if cur is None:
            return self.notfound(c)
        pre = opts.get("preconditions") or {}
        uid = cur["metadata"].get("uid")
        if pre.get("uid") and pre["uid"] != uid:
            return status(409, "Conflict",
                          'Operation cannot be fulfilled on %s "%s": Precondition failed: UID in '
                          'precondition: %s, UID in object meta: %s'
                          % (c["gr"], c["name"], pre["uid"], uid),
                          {"name": c["name"], "group": c["group"], "kind": c["resource"]})
        if pre.get("resourceVersion") and pre["resourceVersion"] != \
                cur["metadata"].get("resourceVersion"):
            return status(409, "Conflict",
                          'Operation cannot be fulfilled on %s "%s": Precondition failed: '
                          'ResourceVersion in precondition: %s, ResourceVersion in object meta: '
                          '%s' % (c["gr"], c["name"], pre["resourceVersion"],
                                  cur["metadata"].get("resourceVersion")))
        if c["resource"] == "namespaces":
            # what was in it goes first (the real namespace controller empties a namespace,
            # then lets it go), each its own change
            for key in [kk for kk in self.s.objects if kk[2] == c["name"]]:
                old = self.s.objects[key]
                del self.s.objects[key]
                self.s.change(key, old, None)
        del self.s.objects[k]
        self.s.change(k, cur, None)
        return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                     "details": {"name": c["name"], "group": c["group"], "kind": c["resource"],
                                 "uid": uid}}


def establish(crd):
    names = crd.get("spec", {}).get("names", {})
    crd["status"] = {
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found", "lastTransitionTime": now()},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted", "lastTransitionTime": now()},
        ],
        "acceptedNames": names,
        "storedVersions": [v.get("name") for v in crd.get("spec", {}).get("versions", [])][:1],
    }


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # the listen backlog: socketserver's default (5) drops the SYNs of clients that open many
    # connections at once (each dropped SYN costs the client a 1 s retransmit); Go's net
    # package, which the real API server uses, listens with the system's somaxconn
    request_queue_size = 128

    def finish_request(self, request, client_address):
        # TLS handshake in the connection's own thread, so a client that stalls or aborts
        # cannot block the listener.
        ctx = self.ssl_ctx
        if self.wrong_ctx is not None and self.faults.match("TLS", ""):
            ctx = self.wrong_ctx  # a certificate from another CA for this connection
        try:
            request.settimeout(30)
            # answers go out as headers then body: without this, Nagle's algorithm holds the
            # body until the client's delayed ACK (~40 ms a request), which no real API server
            # does
            request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = ctx.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        with self.log_lock:
            self.conns += 1
            conn.rp_conn_id = self.conns  # the request log names each TLS connection
        try:
            self.RequestHandlerClass(conn, client_address, self)
        finally:
            try:
                conn.close()
            except OSError:
                pass


def load_state(store, path):
    with open(path) as f:
        data = json.load(f)
    for obj in data.get("objects", []):
        av = obj["apiVersion"]
        group = av.split("/")[0] if "/" in av else ""
        res = BUILTIN.get(group)
        if not res:
            raise SystemExit("fakekube: unknown group in state: %s" % av)
        for r, k, nsd in res[1]:
            if k == obj["kind"]:
                o = copy.deepcopy(obj)
                o.pop("apiVersion")
                o.pop("kind")
                md = o["metadata"]
                ns = md.get("namespace", "default") if nsd else None
                if nsd:
                    md["namespace"] = ns
                store._put_raw(group, r, ns, md["name"], o)
                break
        else:
            raise SystemExit("fakekube: unknown kind in state: %s" % obj["kind"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--client-ca", required=True)
    ap.add_argument("--wrong-cert")
    ap.add_argument("--wrong-key")
    ap.add_argument("--tokens-file", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--faults-file")
    ap.add_argument("--state")
    ap.add_argument("--gate-ray", action="store_true")
    ap.add_argument("--crd-establish-after", type=int, default=0)
    ap.add_argument("--write-latency-ms", type=float, default=0.0,
                    help="service time of each mutating request (the storage commit)")
    ap.add_argument("--watch-history", type=int, default=10000,
                    help="changes kept for watches to start from (older: 410 Expired)")
    ap.add_argument("--bookmark-interval-ms", type=float, default=60000.0,
                    help="time between the BOOKMARK events of a watch that allows them")
    args = ap.parse_args()
    if args.watch_history < 0 or args.bookmark_interval_ms <= 0:
        ap.error("--watch-history must be >= 0 and --bookmark-interval-ms > 0")

    # sys.setswitchinterval(0.0005)
    store = Store(args)
    if args.state:
        load_state(store, args.state)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    ctx.load_verify_locations(args.client_ca)
    ctx.verify_mode = ssl.CERT_OPTIONAL

    srv = Server(("127.0.0.1", 0), Handler)
    srv.ssl_ctx = ctx
    srv.wrong_ctx = None
    if args.wrong_cert:
        srv.wrong_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        srv.wrong_ctx.load_cert_chain(args.wrong_cert, args.wrong_key)
    srv.args = args
    srv.api = API(store)
    srv.faults = Faults(args.faults_file)
    srv.log_lock = threading.Lock()
    srv.log_fd = os.open(args.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    srv.conns = 0
    srv.inflight = 0
    srv.write_latency = max(args.write_latency_ms, 0.0) / 1000.0
    port = srv.server_address[1]
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % port)
    os.rename(tmp, args.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
