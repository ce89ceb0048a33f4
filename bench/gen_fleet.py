#!/usr/bin/env python3
"""gen_fleet.py - write a source repository tree for the end-to-end bench (bench/e2e.sh).

    gen_fleet.py DIR WORKLOADS CLUSTERS [--change K]

DIR gets:
  jobs/team-NN/job-NNNNNN.yaml  WORKLOADS copies of skyray's RayJob + ConfigMap
                                (tests/data/skyray/deploy-scripts/ray-job.train.yaml), one gang
                                each: a per-job app.kubernetes.io/instance label, 50 namespaces
  policy.yaml                   one Nova capacity SchedulePolicy grouping by that label
  fleet/cluster-NNN.yaml        CLUSTERS simulated clusters of 100 nodes: 80 CPU nodes and 20
                                GPU nodes of 8 GPUs; every fifth cluster has a Luna autoscaler

--change K rewrites job K only (a one-workload change: its head asks for one more CPU).
Deterministic: the same arguments give the same bytes.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RAYJOB = os.path.join(HERE, "..", "tests", "data", "skyray", "deploy-scripts",
                      "ray-job.train.yaml")
NAMESPACES = 50


def job_text(template, i, change=False):
    ns = "team-%02d" % (i % NAMESPACES)
    t = template
    t = t.replace("name: rayjob-train", "name: rayjob-train-%06d" % i)
    t = t.replace("name: ray-job-code-train", "name: ray-job-code-train-%06d" % i)
    t = t.replace("app.kubernetes.io/instance: rayjob",
                  "app.kubernetes.io/instance: rayjob-%06d" % i)
    # every document in the job's namespace
    t = t.replace("\nmetadata:\n", "\nmetadata:\n  namespace: %s\n" % ns)
    if t.startswith("metadata:\n"):
        t = t.replace("metadata:\n", "metadata:\n  namespace: %s\n" % ns, 1)
    if change:
        t = t.replace('cpu: "4"\n                  memory: "12G"',
                      'cpu: "3"\n                  memory: "12G"', 1)
    return ns, t


POLICY = """apiVersion: policy.elotl.co/v1alpha1
kind: SchedulePolicy
metadata:
  name: skyray-capacity
spec:
  namespaceSelector:
    matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: In
      values: [%s]
  resourceSelectors:
    labelSelectors:
    - matchExpressions:
      - {key: app.kubernetes.io/instance, operator: Exists}
  groupBy:
    labelKey: app.kubernetes.io/instance
"""

CLUSTER = """apiVersion: rightplace.dev/v1alpha1
kind: Cluster
metadata:
  name: cluster-%(n)03d
  labels:
    cluster.class: %(cls)s
spec:
  autoscaler:
%(autoscaler)s  nodes:
  - name: cpu
    count: 80
    allocatable: {cpu: "32", memory: 128Gi, pods: "110"}
  - name: gpu
    count: 20
    allocatable: {cpu: "96", memory: 1Ti, nvidia.com/gpu: "8", pods: "110"}
    taints:
    - {key: nvidia.com/gpu, value: "true", effect: NoSchedule}
"""

LUNA = """    type: luna
    nodeShapes:
    - name: p4d.24xlarge
      max: 40
      costPerHour: 32.77
      allocatable: {cpu: "96", memory: 1Ti, nvidia.com/gpu: "8", pods: "110"}
      taints:
      - {key: nvidia.com/gpu, value: "true", effect: NoSchedule}
"""


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def main():
    args = sys.argv[1:]
    change = None
    if "--change" in args:
        k = args.index("--change")
        change = int(args[k + 1])
        del args[k:k + 2]
    if len(args) != 3:
        sys.exit(__doc__)
    root, n, c = args[0], int(args[1]), int(args[2])
    with open(RAYJOB) as f:
        template = f.read()
    if change is not None:
        ns, t = job_text(template, change, change=True)
        write(os.path.join(root, "jobs", ns, "job-%06d.yaml" % change), t)
        return
    for i in range(n):
        ns, t = job_text(template, i)
        write(os.path.join(root, "jobs", ns, "job-%06d.yaml" % i), t)
    write(os.path.join(root, "policy.yaml"),
          POLICY % ", ".join("team-%02d" % k for k in range(NAMESPACES)))
    for k in range(c):
        write(os.path.join(root, "fleet", "cluster-%03d.yaml" % k),
              CLUSTER % {"n": k, "cls": "gpu" if k % 2 else "general",
                         "autoscaler": LUNA if k % 5 == 4 else "    type: none\n"})


if __name__ == "__main__":
    main()
