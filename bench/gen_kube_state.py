# gen_kube_state.py NODES PODS_PER_NODE [ANNOTATION_KB] > state.json: a fakekube state (tests/fakekube) of one
# cluster as an EKS API server lists it: nodes with the labels, conditions, images and
# managedFields kubelet writes (about 10 KB of JSON each, every fifth a GPU node with a taint),
# and per node five DaemonSet pods and PODS_PER_NODE - 5 Ray worker pods with the unit label
# (about 5 KB each, with managedFields, env, volumes and status; every sixth Succeeded).
# ANNOTATION_KB (default 0): a further annotation of that many KB on every Ray worker pod, as
# tools that record a spec in an annotation leave (pages of 500 such pods of 130 KB pass the
# client's 64 MiB answer limit).
# For bench/observe_fleet.sh; deterministic.
import json, sys, hashlib
def uid(s):
    h = hashlib.sha1(s.encode()).hexdigest()
    return "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:32])
TS = "2026-11-30T08:14:%02dZ"
def mf(manager, op, fields, sub=None):
    m = {"manager": manager, "operation": op, "apiVersion": "v1", "time": TS % 1,
         "fieldsType": "FieldsV1", "fieldsV1": fields}
    if sub: m["subresource"] = sub
    return m
def node(i):
    name = "ip-10-0-%d-%d.us-west-2.compute.internal" % (i // 250, i % 250)
    gpu = i % 5 == 0
    labels = {"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/instance-type": "g5.12xlarge" if gpu else "m5.4xlarge",
              "beta.kubernetes.io/os": "linux", "eks.amazonaws.com/capacityType": "ON_DEMAND",
              "eks.amazonaws.com/nodegroup": "gpu" if gpu else "cpu", "eks.amazonaws.com/nodegroup-image": "ami-0a1b2c3d4e5f67890",
              "failure-domain.beta.kubernetes.io/region": "us-west-2", "failure-domain.beta.kubernetes.io/zone": "us-west-2a",
              "k8s.io/cloud-provider-aws": "8f0e5b3c2d1a4e6f7a8b9c0d1e2f3a4b", "kubernetes.io/arch": "amd64",
              "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
              "node.kubernetes.io/instance-type": "g5.12xlarge" if gpu else "m5.4xlarge",
              "topology.ebs.csi.aws.com/zone": "us-west-2a", "topology.kubernetes.io/region": "us-west-2",
              "topology.kubernetes.io/zone": "us-west-2a"}
    images = [{"names": ["602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/%s@sha256:%s" % (n, hashlib.sha256((n+str(k)).encode()).hexdigest()),
                         "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/%s:v1.%d.%d-eksbuild.1" % (n, k, k)],
               "sizeBytes": 10000000 + 1234567 * k} for k, n in enumerate(
                   ["kube-proxy", "aws-node", "aws-ebs-csi-driver", "csi-node-driver-registrar", "livenessprobe", "coredns", "pause",
                    "amazon-k8s-cni-init", "node-exporter", "fluent-bit", "rayproject-ray-ml-2.9.0-gpu", "rayproject-ray-2.9.0",
                    "nvidia-device-plugin", "dcgm-exporter", "kube-state-metrics", "metrics-server", "cert-manager-controller",
                    "external-dns", "aws-load-balancer-controller", "cluster-proportional-autoscaler"])]
    alloc = {"cpu": "47810m" if gpu else "15890m", "ephemeral-storage": "95551679124", "hugepages-1Gi": "0", "hugepages-2Mi": "0",
             "memory": "186155604Ki" if gpu else "63012828Ki", "pods": "110"}
    if gpu: alloc["nvidia.com/gpu"] = "4"
    cap = dict(alloc); cap["cpu"] = "48" if gpu else "16"
    conds = [{"type": t, "status": "False", "lastHeartbeatTime": TS % 2, "lastTransitionTime": TS % 3,
              "reason": "Kubelet" + r, "message": "kubelet has " + m} for t, r, m in
             [("MemoryPressure", "HasSufficientMemory", "sufficient memory available"),
              ("DiskPressure", "HasNoDiskPressure", "no disk pressure"), ("PIDPressure", "HasSufficientPID", "sufficient PID available")]]
    conds.append({"type": "Ready", "status": "True", "lastHeartbeatTime": TS % 2, "lastTransitionTime": TS % 3,
                  "reason": "KubeletReady", "message": "kubelet is posting ready status"})
    n = {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": name, "uid": uid(name), "resourceVersion": str(1000 + i), "creationTimestamp": TS % 0,
                      "labels": labels,
                      "annotations": {"alpha.kubernetes.io/provided-node-ip": "10.0.%d.%d" % (i // 250, i % 250),
                                      "csi.volume.kubernetes.io/nodeid": json.dumps({"ebs.csi.aws.com": "i-0%015x" % i}),
                                      "node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
                      "managedFields": [mf("kubelet", "Update", {"f:metadata": {"f:annotations": {".": {}, "f:alpha.kubernetes.io/provided-node-ip": {}}, "f:labels": {".": {}, **{"f:" + k: {} for k in labels}}}}),
                                        mf("kubelet", "Update", {"f:status": {"f:allocatable": {"f:ephemeral-storage": {}}, "f:conditions": {"k:{\"type\":\"Ready\"}": {"f:lastHeartbeatTime": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:reason": {}, "f:status": {}}}, "f:images": {}, "f:nodeInfo": {"f:bootID": {}}}}, "status")]},
         "spec": {"providerID": "aws:///us-west-2a/i-0%015x" % i},
         "status": {"capacity": cap, "allocatable": alloc, "conditions": conds,
                    "addresses": [{"type": "InternalIP", "address": "10.0.%d.%d" % (i // 250, i % 250)}, {"type": "Hostname", "address": name},
                                  {"type": "InternalDNS", "address": name}],
                    "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                    "nodeInfo": {"machineID": "ec2" + "%029x" % i, "systemUUID": "ec2" + "%029x" % i, "bootID": uid("boot" + name),
                                 "kernelVersion": "5.10.210-201.852.amzn2.x86_64", "osImage": "Amazon Linux 2",
                                 "containerRuntimeVersion": "containerd://1.7.11", "kubeletVersion": "v1.29.0-eks-5e0fdde",
                                 "kubeProxyVersion": "v1.29.0-eks-5e0fdde", "operatingSystem": "linux", "architecture": "amd64"},
                    "images": images}}
    if gpu:
        n["spec"]["taints"] = [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    return n
def pod(nodename, ns, name, labels, phase, cpu, mem, gpu=None, owner=("ReplicaSet", "x")):
    env = [{"name": "RAY_%s" % k, "value": "v%d" % k} for k in range(8)] + [
        {"name": "MY_POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}]
    req = {"cpu": cpu, "memory": mem}
    lim = {"memory": mem}
    if gpu: req["nvidia.com/gpu"] = gpu; lim["nvidia.com/gpu"] = gpu
    c = {"name": "main", "image": "rayproject/ray-ml:2.9.0-gpu", "imagePullPolicy": "IfNotPresent",
         "command": ["/bin/bash", "-lc", "--"], "args": ["ulimit -n 65536; ray start --address=raycluster-head-svc:6379 --block"],
         "env": env, "resources": {"requests": req, "limits": lim},
         "ports": [{"containerPort": 8080, "name": "metrics", "protocol": "TCP"}],
         "volumeMounts": [{"mountPath": "/dev/shm", "name": "shared-mem"},
                          {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": "kube-api-access-%s" % name[-5:], "readOnly": True}],
         "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
         "lifecycle": {"preStop": {"exec": {"command": ["/bin/sh", "-c", "ray stop"]}}}}
    p = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": name, "generateName": name[:-5], "namespace": ns, "uid": uid(ns + name), "resourceVersion": "12345",
                      "creationTimestamp": TS % 4, "labels": labels,
                      "annotations": {"kubernetes.io/psp": "eks.privileged", "ray.io/ft-enabled": "false"},
                      "ownerReferences": [{"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "uid": uid(owner[1]),
                                           "controller": True, "blockOwnerDeletion": True}],
                      "managedFields": [mf("kube-controller-manager", "Update", {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, **{"f:" + k: {} for k in labels}}, "f:ownerReferences": {".": {}, "k:{\"uid\":\"x\"}": {}}}, "f:spec": {"f:containers": {"k:{\"name\":\"main\"}": {".": {}, "f:args": {}, "f:command": {}, "f:env": {".": {}}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {}, "f:ports": {}, "f:resources": {".": {}, "f:limits": {}, "f:requests": {}}}}, "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:volumes": {}}}),
                                        mf("kubelet", "Update", {"f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}}, "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {}, "f:startTime": {}}}, "status")]},
         "spec": {"volumes": [{"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}},
                              {"name": "kube-api-access-%s" % name[-5:], "projected": {"defaultMode": 420, "sources": [
                                  {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                                  {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                                  {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}],
                  "containers": [c], "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
                  "serviceAccountName": "default", "serviceAccount": "default", "nodeName": nodename, "securityContext": {},
                  "schedulerName": "default-scheduler", "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority", "priority": 0,
                  "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                                  {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]},
         "status": {"phase": phase,
                    "conditions": [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": TS % 5} for t in
                                   ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]],
                    "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}], "podIP": "10.0.1.2", "podIPs": [{"ip": "10.0.1.2"}], "startTime": TS % 6,
                    "containerStatuses": [{"name": "main", "state": {"running": {"startedAt": TS % 7}}, "lastState": {}, "ready": True,
                                           "restartCount": 0, "image": "docker.io/rayproject/ray-ml:2.9.0-gpu",
                                           "imageID": "docker.io/rayproject/ray-ml@sha256:" + hashlib.sha256(name.encode()).hexdigest(),
                                           "containerID": "containerd://" + hashlib.sha256(ns.encode() + name.encode()).hexdigest(), "started": True}],
                    "qosClass": "Burstable"}}
    return p
nnodes, per = int(sys.argv[1]), int(sys.argv[2])
pad = "x" * (1024 * int(sys.argv[3])) if len(sys.argv) > 3 else ""
objs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in ["kube-system", "team-a"]]
nodes = [node(i) for i in range(nnodes)]
objs += nodes
for i, n in enumerate(nodes):
    nm = n["metadata"]["name"]
    gpu = i % 5 == 0
    for d in ["kube-proxy", "aws-node", "ebs-csi-node", "node-exporter", "fluent-bit"]:
        objs.append(pod(nm, "kube-system", "%s-%05d" % (d, i), {"app.kubernetes.io/name": d, "controller-revision-hash": "6d5f8b7c9d", "pod-template-generation": "3"},
                        "Running", "50m", "64Mi", owner=("DaemonSet", d)))
    for k in range(per - 5):
        unit = "%016x" % ((i * 31 + k) // 4)
        ph = "Succeeded" if k % 6 == 5 else "Running"
        objs.append(pod(nm, "team-a", "ray-worker-%05d-%05d" % (i, k), {"rightplace.dev/unit": unit, "ray.io/cluster": "rc-%s" % unit, "ray.io/node-type": "worker", "ray.io/group": "gpu-group" if gpu else "cpu-group"},
                        ph, "2", "8Gi", gpu="1" if gpu and k < 4 else None, owner=("RayCluster", "rc-" + unit)))
        if pad:
            objs[-1]["metadata"].setdefault("annotations", {})["example.com/recorded-spec"] = pad
json.dump({"objects": objs}, sys.stdout)
