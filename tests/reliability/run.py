#!/usr/bin/env python3
"""Reliability harness for rightplace (docs/reliability.md). Not a ctest: it takes minutes.

Runs the built binary (build/rightplace) on git repositories made from examples/repo with the
git CLI, and prints the figures docs/reliability.md reports:

  crash    SIGKILL `reconcile --once --no-apply` after k ms (k spread over a pass), then a clean
           pass; the deploy tree must equal a clean run's on a fresh copy and `git fsck` be clean.
  crash-url  the same over --repo file://... (fetch, commit, push, the mirror's upkeep); also
           nothing of the killed pass may be left in the state directory or its mirror.
  stall    the same over git:// with the remote stopping after k bytes of a pass's fetch and
           push (a proxy that forwards k bytes, then nothing, and keeps the connection open):
           the pass must end with --git-timeout's error; the pass after it as in crash-url.
  race     3 reconcilers race on one repository for R rounds, with source commits before and
           during each round; every commit's objects must reach deploy, history stay linear.
  hostile  each file of tests/data/bad and generated hostile files pushed beside the example:
           passes killed by a signal, innocent placements lost, peak RSS.
  disk-full  the first pass, an incremental one, and a first pass in URL mode (the state
           directory's mirror on the tmpfs) with 0 to 512 KiB left on a small tmpfs (in a mount
           namespace of its own: `unshare`), then a pass with room: a pass that runs out
           must exit with an error that says what it could not write, move no ref, and leave
           nothing that stops the next pass; that pass must give a clean run's tree, fsck clean.
  fuzz     each libFuzzer target of build-fuzz/ for S seconds: executions and findings.

usage: tests/reliability/run.py [--crash N] [--rounds R] [--fuzz-seconds S]
                                [--only crash,crash-url,stall,race,hostile,disk-full,fuzz]
RP_RELIABILITY_BIN: another build of rightplace to try (default build/rightplace).
"""
import argparse
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RP = os.environ.get("RP_RELIABILITY_BIN") or os.path.join(ROOT, "build", "rightplace")
ENV = dict(os.environ, GIT_AUTHOR_NAME="rel", GIT_AUTHOR_EMAIL="rel@example.com",
           GIT_COMMITTER_NAME="rel", GIT_COMMITTER_EMAIL="rel@example.com",
           GIT_CONFIG_NOSYSTEM="1")
for k in ("KUBECONFIG", "RIGHTPLACE_KUBECONFIG", "RIGHTPLACE_KUBECONFIG_DIR", "RIGHTPLACE_OPTS"):
    ENV.pop(k, None)


def git(repo, *args, check=True):
    p = subprocess.run(["git", "-C", repo, *args], env=ENV, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError("git %s: %s" % (" ".join(args), p.stderr))
    return p


def commit_files(repo, msg, files):
    for path, data in files.items():
        full = os.path.join(repo, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        mode = "wb" if isinstance(data, bytes) else "w"
        with open(full, mode) as f:
            f.write(data)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", msg)


def make_repo(dst):
    git(os.path.dirname(dst) or ".", "init", "-q", "-b", "main", dst)
    shutil.copytree(os.path.join(ROOT, "examples", "repo"), dst, dirs_exist_ok=True)
    git(dst, "add", "-A")
    git(dst, "commit", "-q", "-m", "example fleet")


def start(repo, extra=()):
    return subprocess.Popen([RP, "reconcile", "--repo", repo, "--once", "--no-apply", *extra],
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(p):
    """wait for p: (exit status or -signal, stderr)"""
    _, status = os.waitpid(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode(errors="replace")
    p.stdout.read()
    p.stdout.close()
    p.stderr.close()
    return p.returncode, err


def kill_after(p, delay, res):
    """SIGKILL pass p after delay seconds unless it has finished; count the trial in res"""
    time.sleep(delay)
    killed = os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    if killed:
        p.send_signal(signal.SIGKILL)
    st, _ = finish(p)
    res["trials"] += 1
    res["killed mid-pass" if killed and st == -signal.SIGKILL else "finished before kill"] += 1


def run_pass(repo, extra=()):
    st, err = finish(start(repo, extra))
    return st, 0.0, err


def run_pass_rss(repo):
    """one pass under /usr/bin/time: (exit status or -signal, peak RSS in MiB, stderr)"""
    with tempfile.NamedTemporaryFile("r") as t:
        p = subprocess.run(["/usr/bin/time", "-q", "-f", "%x %M", "-o", t.name, RP, "reconcile",
                            "--repo", repo, "--once", "--no-apply"], env=ENV,
                           capture_output=True, text=True, errors="replace")
        words = t.read().split()
        sig = re.search(r"Command terminated by signal (\d+)", p.stderr)
        st = -int(sig.group(1)) if sig else int(words[-2])
        return st, int(words[-1]) / 1024.0, p.stderr


def tree(repo, ref="deploy"):
    p = git(repo, "rev-parse", "-q", "--verify", ref + "^{tree}", check=False)
    return p.stdout.strip() if p.returncode == 0 else None


def fsck_ok(repo):
    p = git(repo, "fsck", "--no-progress", "--strict", check=False)
    return p.returncode == 0 and "error" not in p.stderr.lower()


def linear(repo, ref="deploy"):
    out = git(repo, "rev-list", "--parents", ref).stdout.split("\n")
    return all(len(line.split()) <= 2 for line in out if line)


def entries(repo, ref="deploy"):
    out = git(repo, "ls-tree", "-r", ref).stdout.split("\n")
    res = {}
    for line in out:
        if "\t" in line:
            meta, path = line.split("\t", 1)
            res[path] = meta.split()[2]
    return res


def copy(src, dst):
    shutil.copytree(src, dst, symlinks=True)


def restore(*pairs):
    """each (snapshot, live) directory pair: live replaced by a copy of snapshot"""
    for snap, live in pairs:
        shutil.rmtree(live, ignore_errors=True)
        copy(snap, live)


RAYJOB3 = os.path.join(ROOT, "examples", "rayjob3.yaml")


# ---- crash trials --------------------------------------------------------------------------
def fresh_and_placed(work, prefix=""):
    """the example repository as pushed (fresh), and a copy placed by a clean pass with rayjob3
    pushed since (placed): the two passes the trials interrupt; and the placed copy's tree"""
    fresh = os.path.join(work, prefix + "fresh")
    make_repo(fresh)
    placed = os.path.join(work, prefix + "placed")
    copy(fresh, placed)
    st, _, err = run_pass(placed)
    assert st == 0, err
    placed_tree = tree(placed)
    with open(RAYJOB3) as f:
        commit_files(placed, "rayjob3", {"fill-and-spill/rayjob-rayjob3.yaml": f.read()})
    return fresh, placed, placed_tree


def crash(work, n):
    fresh, placed, _ = fresh_and_placed(work)
    # references: a clean run on a fresh copy, twice (the output must be deterministic)
    ref = {}
    pass_ms = {}
    for name, base in (("first pass", fresh), ("incremental pass", placed)):
        trees = []
        for i in range(2):
            d = os.path.join(work, "ref-%s-%d" % (name[0], i))
            copy(base, d)
            t0 = time.monotonic()
            st, _, err = run_pass(d)
            pass_ms[name] = (time.monotonic() - t0) * 1000
            assert st == 0, err
            trees.append(tree(d))
            shutil.rmtree(d)
        assert trees[0] == trees[1], "%s: two clean runs differ" % name
        ref[name] = trees[0]
    res = {"trials": 0, "killed mid-pass": 0, "finished before kill": 0, "recovery failed": 0,
           "tree mismatch": 0, "fsck errors": 0, "nonlinear": 0, "left behind": 0}
    failures = []
    for i in range(n):
        name, base = (("first pass", fresh), ("incremental pass", placed))[i % 2]
        d = os.path.join(work, "trial")
        copy(base, d)
        delay = (i // 2) / max(1, n // 2 - 1) * pass_ms[name] * 1.3 / 1000.0
        kill_after(start(d), delay, res)
        st, _, err = run_pass(d)
        if st != 0:
            res["recovery failed"] += 1
            failures.append("trial %d (%s, kill after %.0f ms): clean pass exited %d: %s"
                            % (i, name, delay * 1000, st, err.strip()[-300:]))
        if tree(d) != ref[name]:
            res["tree mismatch"] += 1
            failures.append("trial %d (%s, kill after %.0f ms): deploy tree %s, expected %s"
                            % (i, name, delay * 1000, tree(d), ref[name]))
        if not fsck_ok(d):
            res["fsck errors"] += 1
            failures.append("trial %d: git fsck: %s" % (i, git(d, "fsck", "--strict",
                                                                check=False).stderr[-300:]))
        if tree(d) and not linear(d):
            res["nonlinear"] += 1
        left = leftovers(os.path.join(d, ".git", "rightplace"))
        if left:
            res["left behind"] += 1
            failures.append("trial %d: left behind in the state directory: %s"
                            % (i, " ".join(sorted(left))))
        shutil.rmtree(d)
    shutil.rmtree(fresh)
    shutil.rmtree(placed)
    return res, failures, {k: round(v) for k, v in pass_ms.items()}


# ---- a full disk --------------------------------------------------------------------------
# Runs in a mount namespace of its own (unshare; as a mapped root when not root), on a tmpfs of
# its own: one line per trial, "trial KIND FREE_KB STATUS TREE_AFTER CLEAN_STATUS TREE_CLEAN
# FSCK LEFT | LAST_LINE".
DISK_FULL_SH = r"""
set -u
mnt=$1 rp=$2 step=$3 top=$4
shift 4
mount -t tmpfs -o size=8m tmpfs "$mnt" || exit 97
for kind_src in "$@"; do
    kind=${kind_src%%=*} src=${kind_src#*=}
    free=0
    while [ "$free" -le "$top" ]; do
        rm -rf "$mnt/r" "$mnt/state" "$mnt/fill" "$mnt.remote"
        if [ "$kind" = url ]; then
            # URL mode: the state directory (the mirror) on the tmpfs, the remote beside it
            cp -a "$src" "$mnt.remote"
            repo="file://$mnt.remote" opts="--state-dir $mnt/state" r="$mnt.remote" s="$mnt/state"
        else
            cp -a "$src" "$mnt/r"
            repo="$mnt/r" opts="" r="$mnt/r" s="$mnt/r/.git"
        fi
        avail=$(df -k --output=avail "$mnt" | tail -1)
        [ "$avail" -gt "$free" ] && fallocate -l $(( (avail - free) * 1024 )) "$mnt/fill"
        "$rp" reconcile --repo "$repo" $opts --once --no-apply >/dev/null 2>"$mnt.err"
        st=$?
        t1=$(git -C "$r" rev-parse -q --verify 'deploy^{tree}' || echo none)
        last=$(grep -v "warning" "$mnt.err" | tail -1)
        rm -f "$mnt/fill"
        "$rp" reconcile --repo "$repo" $opts --once --no-apply >/dev/null 2>"$mnt.err2"
        st2=$?
        t2=$(git -C "$r" rev-parse -q --verify 'deploy^{tree}' || echo none)
        if git -C "$r" fsck --no-progress --strict >/dev/null 2>&1; then fs=ok; else fs=bad; fi
        left=$(find "$s" -name '*_git2_*' -o -name '*.lock' -o -name '*.tmp.*' | wc -l)
        echo "trial $kind $free $st $t1 $st2 $t2 $fs $left | $last"
        free=$((free + step))
    done
done
"""


def disk_full(work, step_kb=4, top_kb=512):
    fresh, placed, old = fresh_and_placed(work, "df-")
    remote = os.path.join(work, "df-remote.git")
    git(work, "clone", "-q", "--bare", fresh, remote)
    ref = {}
    for kind, base in (("first", fresh), ("incremental", placed)):
        d = os.path.join(work, "df-ref")
        copy(base, d)
        st, _, err = run_pass(d)
        assert st == 0, err
        ref[kind] = tree(d)
        shutil.rmtree(d)
    ref["url"] = ref["first"]
    mnt = os.path.join(work, "df-mnt")
    os.makedirs(mnt)
    cmd = ["unshare", "--mount"] + ([] if os.geteuid() == 0 else ["--map-root-user"])
    p = subprocess.run(cmd + ["sh", "-c", DISK_FULL_SH, "sh", mnt, RP, str(step_kb), str(top_kb),
                              "first=" + fresh, "incremental=" + placed, "url=" + remote],
                       env=ENV, capture_output=True, text=True, errors="replace")
    res = {"trials": 0, "ran out": 0, "completed": 0, "signal": 0, "unclear error": 0,
           "ref moved wrongly": 0, "recovery failed": 0, "tree mismatch": 0, "fsck errors": 0,
           "left behind": 0}
    failures = []
    lines = [ln for ln in p.stdout.split("\n") if ln.startswith("trial ")]
    if p.returncode != 0 or not lines:
        return None, ["could not mount a tmpfs in a mount namespace (exit %d): %s" % (
            p.returncode, p.stderr.strip()[-300:])]
    for ln in lines:
        head, last = ln.split(" | ", 1)
        _, kind, free, st, t1, st2, t2, fs, left = head.split()
        st, st2 = int(st), int(st2)
        res["trials"] += 1
        what = "%s pass with %s KiB free" % (kind, free)
        if st > 128 or st < 0:
            res["signal"] += 1
            failures.append("%s: exit %d (a signal): %s" % (what, st, last))
        elif st == 0:
            res["completed"] += 1
        else:
            res["ran out"] += 1
            if not re.search(r"No space left|free on the file system|no free inodes", last):
                res["unclear error"] += 1
                failures.append("%s: exit %d, the error does not say why: %s" % (what, st, last))
        before = old if kind == "incremental" else None
        if t1 not in ((before or "none"), ref[kind]) or (st != 0 and t1 != (before or "none")):
            res["ref moved wrongly"] += 1
            failures.append("%s: exit %d left deploy at %s" % (what, st, t1))
        if st2 != 0:
            res["recovery failed"] += 1
            failures.append("%s: the pass with room exited %d" % (what, st2))
        if t2 != ref[kind]:
            res["tree mismatch"] += 1
            failures.append("%s: then deploy tree %s, expected %s" % (what, t2, ref[kind]))
        if fs != "ok":
            res["fsck errors"] += 1
            failures.append("%s: git fsck failed" % what)
        if left != "0":
            res["left behind"] += 1
            failures.append("%s: %s temporary files left" % (what, left))
    shutil.rmtree(fresh)
    shutil.rmtree(placed)
    shutil.rmtree(remote)
    return res, failures


# ---- crash trials in URL mode --------------------------------------------------------------
LEFTOVER = re.compile(r"_git2_|\.lock$|\.tmp(\.\d+)?$")


def leftovers(*dirs):
    """lock and temporary files a killed pass could leave (the state dir's own lock aside)"""
    found = []
    for top in dirs:
        for root, _, files in os.walk(top):
            found += [os.path.relpath(os.path.join(root, f), top) for f in files
                      if LEFTOVER.search(f) and not (root == top and f == "lock")]
    return found


def check_url_pass(what, st, err, url, extra, remote, state, ref, res, failures):
    """after a trial in URL mode, the clean pass that followed it (exit st, stderr err): it
    succeeded with the deploy tree ref, both repositories pass fsck, nothing of the trial is
    left in the state directory (the remote is shared: its temporary files are its owner's),
    and one more pass commits nothing"""
    if st != 0:
        res["recovery failed"] += 1
        failures.append("%s: clean pass exited %d: %s" % (what, st, err.strip()[-300:]))
    if tree(remote) != ref:
        res["tree mismatch"] += 1
        failures.append("%s: deploy tree %s, expected %s" % (what, tree(remote), ref))
    for d in (remote, os.path.join(state, "repo.git")):
        if not fsck_ok(d):
            res["fsck errors"] += 1
            failures.append("%s: git fsck %s" % (what, d))
    left = leftovers(state)
    if left:
        res["left behind"] += 1
        failures.append("%s: left behind: %s" % (what, " ".join(sorted(left))))
    head = git(remote, "rev-parse", "deploy").stdout
    if run_pass(url, extra)[0] != 0 or git(remote, "rev-parse", "deploy").stdout != head:
        res["commit on a quiet pass"] += 1
        failures.append("%s: the pass after the clean pass committed" % what)


def crash_url(work, n):
    """SIGKILL `reconcile --once --no-apply --repo file://...` at a random point of a pass that
    fetches, commits, pushes and merges the mirror's packs; then a clean pass. The remote's
    deploy tree must equal a clean run's, both repositories pass fsck, a third pass commits
    nothing, and nothing of the killed pass is left in the mirror or the state directory. Then
    n/2 first passes of an empty state directory killed while they make the mirror and clone:
    the clean pass after each must succeed with the same deploy tree."""
    src = os.path.join(work, "u-src")
    make_repo(src)
    snap_remote, snap_state = os.path.join(work, "u-remote0.git"), os.path.join(work, "u-state0")
    remote, state = os.path.join(work, "u-remote.git"), os.path.join(work, "u-state")
    url, extra = "file://" + remote, ["--state-dir", state]

    def push(i, to):
        commit_files(src, "cm %d" % i, {"crash-url/cm%03d.yaml" % i: configmap("cm%03d" % i)})
        git(src, "push", "-q", to, "main")

    # a mirror one fetch short of upkeep (16 packs): the trial's pass fetches, commits, pushes
    # and merges the mirror's packs
    git(work, "clone", "-q", "--bare", src, remote)
    for i in range(14):
        if i:
            push(i, remote)
        st, _, err = run_pass(url, extra)
        assert st == 0, err
    copy(remote, snap_remote)
    copy(state, snap_state)
    push(99, snap_remote)

    def fresh():
        restore((snap_remote, remote), (snap_state, state))

    fresh()
    t0 = time.monotonic()
    st, _, err = run_pass(url, extra + ["--log-level", "debug"])
    pass_ms = (time.monotonic() - t0) * 1000
    assert st == 0, err
    ref = tree(remote)
    res = {"pass merges packs": "packed" in err, "trials": 0, "killed mid-pass": 0,
           "finished before kill": 0, "recovery failed": 0, "tree mismatch": 0,
           "fsck errors": 0, "stopped on remote lock": 0, "left behind": 0,
           "commit on a quiet pass": 0}
    failures = []
    for i in range(n):
        fresh()
        delay = i / max(1, n - 1) * pass_ms * 1.3 / 1000.0
        kill_after(start(url, extra), delay, res)
        what = "trial %d (kill after %.0f ms)" % (i, delay * 1000)
        st, _, err = run_pass(url, extra)
        locks = [l for l in leftovers(remote) if l.endswith(".lock")]
        if st == 4 and locks and "exists (a git process is updating it, or one died" in err:
            # the killed pass held a ref lock of the remote, which another writer's live lock
            # cannot be told from until it is STALE_REF_LOCK_SECONDS old: age it, as time would
            res["stopped on remote lock"] += 1
            for l in locks:
                old = time.time() - 3600
                os.utime(os.path.join(remote, l), (old, old))
            st, _, err = run_pass(url, extra)
        check_url_pass(what, st, err, url, extra, remote, state, ref, res, failures)
    # the first pass of a new state directory killed while it makes the mirror and clones
    fresh()
    shutil.rmtree(state)
    t0 = time.monotonic()
    st, _, err = run_pass(url, extra)
    clone_ms = (time.monotonic() - t0) * 1000
    assert st == 0, err
    clones = {"trials": 0, "killed mid-pass": 0, "finished before kill": 0}
    for i in range(n // 2):
        fresh()
        shutil.rmtree(state)
        delay = i / max(1, n // 2 - 1) * clone_ms * 1.3 / 1000.0
        kill_after(start(url, extra), delay, clones)
        st, _, err = run_pass(url, extra)
        what = "clone trial %d (kill after %.1f ms)" % (i, delay * 1000)
        if st != 0:
            res["recovery failed"] += 1
            failures.append("%s: clean pass exited %d: %s" % (what, st, err.strip()[-300:]))
        elif tree(remote) != ref:
            res["tree mismatch"] += 1
            failures.append("%s: deploy tree %s, expected %s" % (what, tree(remote), ref))
    res["clone trials"] = "%d (%d killed mid-pass; a clone took %d ms)" % (
        clones["trials"], clones["killed mid-pass"], round(clone_ms))
    for d in (src, snap_remote, snap_state, remote, state):
        shutil.rmtree(d, ignore_errors=True)
    return res, failures, round(pass_ms)


# ---- a git remote that stops answering -----------------------------------------------------
class StallProxy:
    """A TCP proxy on 127.0.0.1 in front of `port` that forwards, over all its connections,
    `cut` bytes (both ways together; None: all) and then nothing more, keeping the connections
    open: a remote that stops answering at that point of the conversation. Counts the bytes."""

    def __init__(self, port):
        import socket
        import threading
        self.socket, self.threading = socket, threading
        self.target = port
        self.cut = None
        self.moved = 0
        self.lock = threading.Lock()
        self.conns = []
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.port = self.lsock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def reset(self, cut):
        with self.lock:
            for c in self.conns:
                try:  # wakes a pump blocked in recv, which close alone does not (Linux)
                    c.shutdown(self.socket.SHUT_RDWR)
                except OSError:
                    pass
                c.close()
            self.conns = []
            self.cut, self.moved = cut, 0

    def _accept(self):
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            u = self.socket.create_connection(("127.0.0.1", self.target))
            with self.lock:
                self.conns += [c, u]
            for a, b in ((c, u), (u, c)):
                self.threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, a, b):
        while True:
            try:
                data = a.recv(65536)
            except OSError:
                return
            if not data:
                try:
                    b.shutdown(self.socket.SHUT_WR)
                except OSError:
                    pass
                return
            with self.lock:
                room = len(data) if self.cut is None else max(0, self.cut - self.moved)
                data = data[:room]
                self.moved += len(data)
            try:
                if data:
                    b.sendall(data)
            except OSError:
                return
            if self.cut is not None and self.moved >= self.cut:
                return  # stalled: neither forwards nor closes


def stall(work, n):
    """`reconcile --once --no-apply` over git:// (git daemon behind StallProxy) with
    --git-timeout 1s, its remote stopping after k bytes of the pass's fetch and push, k spread
    over a clean pass's bytes. Each stalled pass must end (exit 4, in seconds) saying the
    timeout; the pass after it, with the remote answering, must give a clean run's deploy tree,
    fsck clean, nothing left in the state directory, and a pass after that commit nothing."""
    served = os.path.join(work, "s-served")
    src = os.path.join(work, "s-src")
    make_repo(src)
    os.makedirs(served)
    remote, snap = os.path.join(served, "r.git"), os.path.join(work, "s-snap.git")
    state, snap_state = os.path.join(work, "s-state"), os.path.join(work, "s-state0")
    git(work, "clone", "-q", "--bare", src, remote)
    git(remote, "config", "daemon.receivepack", "true")
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dport = s.getsockname()[1]
    daemon = subprocess.Popen(["git", "daemon", "--listen=127.0.0.1", "--port=%d" % dport,
                               "--base-path=" + served, "--export-all", "--reuseaddr",
                               "--enable=receive-pack", served], env=ENV,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", dport)).close()
            break
        except OSError:
            time.sleep(0.05)
    proxy = StallProxy(dport)
    url = "git://127.0.0.1:%d/r.git" % proxy.port
    extra = ["--state-dir", state]
    # a build before --git-timeout (RP_RELIABILITY_BIN) runs without it: its passes hang
    # the passes after a stall check recovery, not the timeout: a loaded host may keep git
    # daemon quiet for a second before it answers
    recover = list(extra)
    if "--git-timeout" in subprocess.run([RP, "reconcile", "--help"], capture_output=True,
                                         text=True).stdout:
        extra += ["--git-timeout", "1s"]
        recover += ["--git-timeout", "20s"]
    st, _, err = run_pass(url, extra)  # the state directory's first clone
    assert st == 0, err
    commit_files(src, "cm", {"stall/cm.yaml": configmap("stall-cm")})
    git(src, "push", "-q", remote, "main")
    copy(remote, snap)
    copy(state, snap_state)

    def fresh():
        restore((snap, remote), (snap_state, state))

    fresh()
    proxy.reset(None)
    st, _, err = run_pass(url, extra)
    assert st == 0, err
    total, ref = proxy.moved, tree(remote)
    res = {"bytes in a clean pass": total, "trials": 0, "stalled": 0, "passed before the cut": 0,
           "longest stalled pass": "0 s", "hung": 0, "unclear error": 0, "recovery failed": 0,
           "tree mismatch": 0, "fsck errors": 0, "left behind": 0, "commit on a quiet pass": 0}
    failures, longest = [], 0.0
    for i in range(n):
        fresh()
        cut = round(i / max(1, n - 1) * total * 1.05)
        proxy.reset(cut)
        what = "trial %d (stalled after %d of %d bytes)" % (i, cut, total)
        t0 = time.monotonic()
        p = start(url, extra)
        guard = proxy.threading.Timer(60, p.kill)
        guard.start()
        st, err = finish(p)
        guard.cancel()
        took = time.monotonic() - t0
        res["trials"] += 1
        if st == -signal.SIGKILL:
            res["hung"] += 1
            failures.append("%s: still running after 60 s" % what)
        elif st == 0:
            res["passed before the cut"] += 1
        else:
            res["stalled"] += 1
            longest = max(longest, took)
            if st != 4 or "(--git-timeout)" not in err:
                res["unclear error"] += 1
                failures.append("%s: exit %d: %s" % (what, st, err.strip()[-300:]))
        proxy.reset(None)
        st, _, err = run_pass(url, recover)
        check_url_pass(what, st, err, url, recover, remote, state, ref, res, failures)
    res["longest stalled pass"] = "%.1f s" % longest
    daemon.terminate()
    daemon.wait()
    for d in (served, src, snap, state, snap_state):
        shutil.rmtree(d, ignore_errors=True)
    return res, failures


# ---- races ---------------------------------------------------------------------------------
def configmap(name):
    return ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: development\n"
            "  labels: {app.kubernetes.io/instance: rayservice}\ndata: {round: \"%s\"}\n"
            % (name, name))


def race(work, rounds):
    repo = os.path.join(work, "race")
    make_repo(repo)
    res = {"rounds": rounds, "reconciler runs": 0, "exit statuses": {}, "lost updates": 0,
           "signal exits": 0}
    failures = []
    pending = []  # objects committed to source and not yet required on deploy
    for r in range(rounds):
        commit_files(repo, "round %d" % r, {"race/r%03d.yaml" % r: configmap("race-r%03d" % r)})
        required = pending + ["race-r%03d" % r]
        procs = [start(repo) for _ in range(3)]
        time.sleep(0.02 * (r % 5))
        # a push while they run: required from the next round on
        commit_files(repo, "mid %d" % r, {"race/m%03d.yaml" % r: configmap("race-m%03d" % r)})
        pending = ["race-m%03d" % r]
        for p in procs:
            st, err = finish(p)
            res["reconciler runs"] += 1
            res["exit statuses"][st] = res["exit statuses"].get(st, 0) + 1
            if st < 0:
                res["signal exits"] += 1
                failures.append("round %d: a reconciler died of signal %d" % (r, -st))
        have = entries(repo)
        for name in required:
            if "clusters/static-cluster/development/configmap.%s.yaml" % name not in have:
                res["lost updates"] += 1
                failures.append("round %d: %s committed before the round is not on deploy"
                                % (r, name))
    st, _, err = run_pass(repo)
    have = entries(repo)
    for name in pending:
        if "clusters/static-cluster/development/configmap.%s.yaml" % name not in have:
            res["lost updates"] += 1
            failures.append("final: %s not on deploy" % name)
    res["deploy commits"] = int(git(repo, "rev-list", "--count", "deploy").stdout)
    res["deploy linear"] = linear(repo)
    res["git fsck clean"] = fsck_ok(repo)
    if not res["deploy linear"] or not res["git fsck clean"]:
        failures.append("deploy history not linear or git fsck not clean")
    res["exit statuses"] = dict(sorted(res["exit statuses"].items()))
    shutil.rmtree(repo)
    return res, failures


# ---- hostile inputs ------------------------------------------------------------------------
def hostile_files():
    bomb = ("a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c,"
            " *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e,"
            " *e]\n")
    files = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "data", "bad", "*"))):
        with open(path, "rb") as f:
            files["bad/" + os.path.basename(path)] = f.read()
    files["gen/alias-bomb.yaml"] = bomb
    files["gen/alias-bomb-in-object.yaml"] = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb, namespace: development}\n"
        "data:\n  x: &x [" + ", ".join(["y"] * 50) + "]\n  z: [" + ", ".join(["*x"] * 5000)
        + "]\n")
    line = b"# padding padding padding padding padding padding padding paddi\n"
    files["gen/huge-100MB.yaml"] = line * ((100 << 20) // len(line))
    files["gen/deep-flow.yaml"] = "a: " + "[" * 100000 + "]" * 100000 + "\n"
    files["gen/deep-block.yaml"] = "".join("  " * i + "k:\n" for i in range(1000)) + "\n"
    files["gen/many-docs.yaml"] = "".join(
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c%d, namespace: nowhere}\n" % i
        for i in range(20000))
    files["gen/collision-output-path.yaml"] = (
        "apiVersion: evil.example.com/v1\nkind: Configmap\nmetadata:\n  name: ray-job-code-train\n"
        "  namespace: rayjob1\n  labels: {app.kubernetes.io/instance: rayjob1}\ndata: {a: '2'}\n")
    with open(os.path.join(ROOT, "examples", "repo", "infra",
                           "namespace-development.yaml")) as f:
        ns = f.read()
    files["gen/collision-same-object.yaml"] = ns.replace("labels:", "labels:\n    evil: 'yes'", 1)
    files["gen/13-resource-names.yaml"] = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: greedy\n  namespace: development"
        "\n  labels: {app.kubernetes.io/instance: rayservice}\nspec:\n  replicas: 1\n  template:\n"
        "    spec:\n      containers:\n      - name: w\n        image: nginx\n        resources:\n"
        "          requests: {" + ", ".join("a.example/r%d: 1" % i for i in range(1, 14)) + "}\n")
    # valid objects, hostile in intent: pushers decide placement (docs/security.md), so these
    # may move innocent objects; reported apart from the invalid ones
    files["valid/huge-replicas.yaml"] = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: wide\n  namespace: development"
        "\n  labels: {app.kubernetes.io/instance: rayservice}\nspec:\n  replicas: 2147483647\n"
        "  template:\n    spec:\n      containers:\n      - name: w\n        image: nginx\n"
        "        resources:\n          requests: {cpu: 1m}\n")
    files["valid/policy-grab-all.yaml"] = (
        "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\nmetadata: {name: grab-all}\n"
        "spec:\n  namespaceSelector: {}\n  resourceSelectors:\n    labelSelectors: [{}]\n"
        "  clusterSelector: {matchLabels: {none: none}}\n")
    files["gen/nul-bytes.yaml"] = b"apiVersion: v1\nkind: ConfigMap\x00\nmetadata: {name: x}\n"
    files["gen/kubeconfig-path-cluster.yaml"] = (
        "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata: {name: evil}\nspec:\n"
        "  kubeconfig: {path: /etc/passwd}\n")
    return files


def kept_lines(repo, old, new):
    """every line of the old kustomization is still in the new one (a newcomer may add some)"""
    a = git(repo, "cat-file", "blob", old).stdout.split("\n")
    b = set(git(repo, "cat-file", "blob", new).stdout.split("\n"))
    return all(x in b for x in a)


def last_line(err, word):
    """the first line of stderr holding word (the error naming the file), shortened"""
    for line in err.split("\n"):
        if word in line:
            return line.replace("rightplace: ", "")[:120]
    return (err.strip().split("\n") or [""])[-1][:120]


def hostile(work):
    base = os.path.join(work, "hostile-base")
    make_repo(base)
    st, _, err = run_pass(base)
    assert st == 0, err
    innocent = {p: b for p, b in entries(base).items() if p.startswith("clusters/")}
    res = {"files": 0, "signal exits": 0, "innocent placements lost": 0, "peak RSS max MiB": 0.0,
           "exit statuses": {}, "valid hostile: innocent units changed": 0}
    rows = []
    failures = []
    for name, data in hostile_files().items():
        d = os.path.join(work, "hostile")
        copy(base, d)
        commit_files(d, "hostile " + name, {"zz-hostile/" + os.path.basename(name): data})
        st, rss, err = run_pass_rss(d)
        res["files"] += 1
        res["exit statuses"][st] = res["exit statuses"].get(st, 0) + 1
        res["peak RSS max MiB"] = max(res["peak RSS max MiB"], round(rss, 1))
        if st < 0:
            res["signal exits"] += 1
            failures.append("%s: killed by signal %d" % (name, -st))
        have = entries(d)
        lost = [p for p, b in innocent.items() if have.get(p) != b and not (
            p.endswith("/kustomization.yaml") and p in have and kept_lines(d, b, have[p]))]
        if name.startswith("valid/"):
            res["valid hostile: innocent units changed"] += len(lost)
            rows.append((name, st, round(rss, 1), len(lost), last_line(err, "wins")))
            shutil.rmtree(d)
            continue
        res["innocent placements lost"] += len(lost)
        if lost:
            failures.append("%s: innocent placements lost: %s" % (name, ", ".join(lost[:5])))
        rows.append((name, st, round(rss, 1), len(lost), last_line(err, "zz-hostile/")))
        shutil.rmtree(d)
    res["exit statuses"] = dict(sorted(res["exit statuses"].items()))
    shutil.rmtree(base)
    return res, rows, failures


# ---- fuzz ----------------------------------------------------------------------------------
def fuzz(work, secs):
    rows = []
    targets = sorted(glob.glob(os.path.join(ROOT, "build-fuzz", "tests", "fuzz_*")))
    for t in targets:
        if not os.access(t, os.X_OK) or os.path.isdir(t):
            continue
        name = os.path.basename(t)[len("fuzz_"):]
        corpus = tempfile.mkdtemp(dir=work)
        seeds = os.path.join(ROOT, "tests", "fuzz", "corpus", name)
        if os.path.isdir(seeds):
            shutil.copytree(seeds, corpus, dirs_exist_ok=True)
        args = [t, "-max_total_time=%d" % secs, "-max_len=65536", "-rss_limit_mb=2048",
                "-timeout=10", "-print_final_stats=1", "-artifact_prefix=" + work + "/"]
        d = os.path.join(ROOT, "tests", "fuzz", name + ".dict")
        if os.path.exists(d):
            args.append("-dict=" + d)
        p = subprocess.run(args + [corpus], capture_output=True, text=True)
        log = p.stderr
        execs = re.search(r"stat::number_of_executed_units:\s*(\d+)", log)
        rss = re.search(r"stat::peak_rss_mb:\s*(\d+)", log)
        crash = re.findall(r"(?:ERROR: libFuzzer|ERROR: AddressSanitizer|runtime error|"
                           r"SUMMARY: \w+Sanitizer)[^\n]*", log)
        rows.append((name, int(execs.group(1)) if execs else None,
                     int(rss.group(1)) if rss else None, p.returncode, crash[:2]))
        shutil.rmtree(corpus)
    return rows


def report(title, res, failures):
    """print one part's figures and failures; the number of failures"""
    print("\n== " + title)
    for k, v in (res or {}).items():
        print("  %-22s %s" % (k, v))
    for f in failures:
        print("  FAIL " + f)
    return len(failures)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--crash", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--fuzz-seconds", type=int, default=60)
    ap.add_argument("--only", default="crash,crash-url,stall,race,hostile,disk-full,fuzz")
    a = ap.parse_args()
    only = a.only.split(",")
    work = tempfile.mkdtemp(prefix="rightplace-reliability.")
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    print("rightplace reliability run: %s UTC, commit %s, %d CPUs, load %s" % (
        time.strftime("%Y-%m-%d %H:%M", time.gmtime()), head, os.cpu_count(),
        " ".join("%.1f" % x for x in os.getloadavg())))
    bad = 0
    if "crash" in only:
        t0 = time.monotonic()
        res, failures, ms = crash(work, a.crash)
        bad += report("crash trials (%.0f s; clean pass took %s ms)" % (time.monotonic() - t0, ms),
                      res, failures)
    if "crash-url" in only:
        t0 = time.monotonic()
        res, failures, ms = crash_url(work, a.crash)
        bad += report("crash trials, URL mode (%.0f s; clean pass took %s ms)" % (
            time.monotonic() - t0, ms), res, failures)
    if "stall" in only:
        t0 = time.monotonic()
        res, failures = stall(work, a.crash)
        bad += report("a git remote that stops answering, --git-timeout 1s (%.0f s)" % (
            time.monotonic() - t0), res, failures)
    if "race" in only:
        t0 = time.monotonic()
        res, failures = race(work, a.rounds)
        bad += report("races: 3 reconcilers per round (%.0f s)" % (time.monotonic() - t0), res,
                      failures)
    if "hostile" in only:
        t0 = time.monotonic()
        res, rows, failures = hostile(work)
        print("\n== hostile inputs (%.0f s)" % (time.monotonic() - t0))
        print("  %-38s %6s %8s %5s  %s" % ("file", "exit", "RSS MiB", "lost", "last line of stderr"))
        for r in rows:
            print("  %-38s %6s %8s %5s  %s" % r)
        bad += report("hostile inputs: figures", res, failures)
    if "disk-full" in only:
        t0 = time.monotonic()
        res, failures = disk_full(work)
        bad += report("a full disk: 0 to 512 KiB free, 4 KiB apart (%.0f s)" % (
            time.monotonic() - t0), res, failures)
    if "fuzz" in only:
        t0 = time.monotonic()
        rows = fuzz(work, a.fuzz_seconds)
        print("\n== fuzz: %d s per target (%.0f s)" % (a.fuzz_seconds, time.monotonic() - t0))
        if not rows:
            print("  no targets in build-fuzz/tests (build them first, see docs/reliability.md)")
            bad += 1
        for name, execs, rss, rc, crash_lines in rows:
            print("  %-12s executions %-10s peak RSS %s MiB, exit %d%s" % (
                name, execs, rss, rc, ("  FINDING: " + " | ".join(crash_lines)) if rc else ""))
            if rc != 0:
                bad += 1
        print("  total executions %d" % sum(r[1] or 0 for r in rows))
    shutil.rmtree(work, ignore_errors=True)
    print("\n%s" % ("all checks held" if bad == 0 else "%d FAILURES (see FAIL lines)" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
