#!/usr/bin/env python3
"""Structure check of kiln's Kubernetes manifests (examples/kubernetes/*.yaml).

No cluster is needed: each YAML document is parsed (python3-yaml) and checked
against the fields the API server and the mpi-operator require and the types
they accept, for the kinds kiln ships (core v1 PersistentVolumeClaim, Kubeflow
MPIJob v2beta1, whose pod templates are core v1 PodTemplateSpecs), plus the
cross-references that only fail at run time: a volumeMount names a volume of
its pod, a claimName names a PVC of the examples, and `mpirun -np` equals
Worker replicas x slotsPerWorker. Fields a schema does not know are errors,
as `kubectl apply --validate=strict` makes them.

Usage: check_k8s_manifests.py FILE...   (exit 1 with one line per problem)
"""
import re
import sys

try:
    import yaml
except ImportError:
    print("SKIP: python3-yaml is not installed (scripts/install-deps.sh installs it)")
    sys.exit(77)

QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|Ki|Mi|Gi|Ti|Pi|Ei|M|G|T|P|E)?$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
problems = []


def bad(where, what):
    problems.append(f"{where}: {what}")


def check_fields(where, obj, required, optional):
    """obj is a mapping with every required key and no key outside both sets."""
    if not isinstance(obj, dict):
        bad(where, f"must be a mapping, got {type(obj).__name__}")
        return False
    for k in required:
        if k not in obj:
            bad(where, f"missing required field '{k}'")
    for k in obj:
        if k not in required and k not in optional:
            bad(where, f"unknown field '{k}'")
    return True


def check_type(where, value, kind):
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        bad(where, f"must be {kind.__name__}, got {type(value).__name__}")
        return False
    return True


def check_metadata(where, meta):
    if check_fields(where, meta, ["name"], ["namespace", "labels", "annotations"]):
        name = meta.get("name", "")
        if not (isinstance(name, str) and DNS_LABEL.match(name) and len(name) <= 63):
            bad(where + ".name", f"'{name}' is not a DNS-1123 label")


def check_resources(where, res):
    if not check_fields(where, res, [], ["limits", "requests"]):
        return
    for part in ("limits", "requests"):
        for name, q in (res.get(part) or {}).items():
            if not QUANTITY.match(str(q)):
                bad(f"{where}.{part}.{name}", f"'{q}' is not a Kubernetes quantity")


CONTAINER_FIELDS = ["image", "command", "args", "env", "resources", "volumeMounts",
                    "workingDir", "ports", "securityContext", "imagePullPolicy"]


def check_container(where, c, volumes):
    if not check_fields(where, c, ["name", "image"], CONTAINER_FIELDS):
        return
    for field in ("command", "args"):
        if field in c and check_type(f"{where}.{field}", c[field], list):
            for i, a in enumerate(c[field]):
                check_type(f"{where}.{field}[{i}]", a, str)
    for i, e in enumerate(c.get("env", [])):
        check_fields(f"{where}.env[{i}]", e, ["name"], ["value", "valueFrom"])
    if "resources" in c:
        check_resources(where + ".resources", c["resources"])
    for i, m in enumerate(c.get("volumeMounts", [])):
        w = f"{where}.volumeMounts[{i}]"
        if check_fields(w, m, ["name", "mountPath"], ["readOnly", "subPath"]):
            if m["name"] not in volumes:
                bad(w, f"names volume '{m['name']}', which the pod does not declare")
            if not str(m["mountPath"]).startswith("/"):
                bad(w, "mountPath must be absolute")


def check_pod_template(where, template, claims_used):
    if not check_fields(where, template, ["spec"], ["metadata"]):
        return
    spec = template["spec"]
    if not check_fields(where + ".spec", spec, ["containers"],
                        ["initContainers", "volumes", "terminationGracePeriodSeconds",
                         "restartPolicy", "nodeSelector", "tolerations", "affinity",
                         "securityContext", "imagePullSecrets", "hostNetwork"]):
        return
    volumes = {}
    for i, v in enumerate(spec.get("volumes", [])):
        w = f"{where}.spec.volumes[{i}]"
        if check_fields(w, v, ["name"], ["persistentVolumeClaim", "emptyDir", "configMap",
                                         "secret", "hostPath"]):
            volumes[v["name"]] = v
            pvc = v.get("persistentVolumeClaim")
            if pvc is not None and check_fields(w + ".persistentVolumeClaim", pvc, ["claimName"],
                                                ["readOnly"]):
                claims_used.append((w, pvc["claimName"]))
    if "terminationGracePeriodSeconds" in spec:
        check_type(where + ".spec.terminationGracePeriodSeconds",
                   spec["terminationGracePeriodSeconds"], int)
    for part in ("initContainers", "containers"):
        items = spec.get(part, [])
        if check_type(f"{where}.spec.{part}", items, list):
            if part == "containers" and not items:
                bad(f"{where}.spec.containers", "must not be empty")
            for i, c in enumerate(items):
                check_container(f"{where}.spec.{part}[{i}]", c, volumes)
    return spec


def mpirun_np(spec):
    for c in spec.get("containers", []):
        m = re.search(r"\bmpirun\b.*?\s-np\s+([0-9]+)", " ".join(c.get("args", []) + c.get("command", [])),
                      re.S)
        if m:
            return int(m.group(1))
    return None


def check_pvc(where, doc, claims):
    check_fields(where, doc, ["apiVersion", "kind", "metadata", "spec"], [])
    check_metadata(where + ".metadata", doc.get("metadata"))
    spec = doc.get("spec")
    if check_fields(where + ".spec", spec, ["accessModes", "resources"],
                    ["storageClassName", "volumeMode", "selector"]):
        modes = spec["accessModes"]
        allowed = {"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"}
        if check_type(where + ".spec.accessModes", modes, list):
            for m in modes:
                if m not in allowed:
                    bad(where + ".spec.accessModes", f"unknown access mode '{m}'")
        req = (spec["resources"] or {}).get("requests", {})
        if "storage" not in req:
            bad(where + ".spec.resources.requests", "missing 'storage'")
        check_resources(where + ".spec.resources", spec["resources"])
    claims[doc["metadata"]["name"]] = spec.get("accessModes", []) if isinstance(spec, dict) else []


def check_mpijob(where, doc, claims_used):
    check_fields(where, doc, ["apiVersion", "kind", "metadata", "spec"], [])
    check_metadata(where + ".metadata", doc.get("metadata"))
    spec = doc.get("spec")
    if not check_fields(where + ".spec", spec, ["mpiReplicaSpecs"],
                        ["slotsPerWorker", "runPolicy", "sshAuthMountPath", "mpiImplementation",
                         "launcherCreationPolicy"]):
        return
    slots = spec.get("slotsPerWorker", 1)
    check_type(where + ".spec.slotsPerWorker", slots, int)
    if "runPolicy" in spec:
        check_fields(where + ".spec.runPolicy", spec["runPolicy"], [],
                     ["cleanPodPolicy", "backoffLimit", "ttlSecondsAfterFinished",
                      "activeDeadlineSeconds", "schedulingPolicy", "suspend"])
        if spec["runPolicy"].get("cleanPodPolicy", "None") not in ("None", "Running", "All"):
            bad(where + ".spec.runPolicy.cleanPodPolicy", "must be None, Running or All")
    if spec.get("mpiImplementation", "OpenMPI") not in ("OpenMPI", "Intel", "MPICH"):
        bad(where + ".spec.mpiImplementation", "must be OpenMPI, Intel or MPICH")
    replicas = spec["mpiReplicaSpecs"]
    if not check_fields(where + ".spec.mpiReplicaSpecs", replicas, ["Launcher", "Worker"], []):
        return
    specs = {}
    for role, r in replicas.items():
        w = f"{where}.spec.mpiReplicaSpecs.{role}"
        if check_fields(w, r, ["template"], ["replicas", "restartPolicy"]):
            check_type(w + ".replicas", r.get("replicas", 1), int)
            specs[role] = check_pod_template(w + ".template", r["template"], claims_used)
    if replicas["Launcher"].get("replicas", 1) != 1:
        bad(where + ".spec.mpiReplicaSpecs.Launcher.replicas", "must be 1")
    np = mpirun_np(specs.get("Launcher") or {})
    workers = replicas["Worker"].get("replicas", 1)
    if np is None:
        bad(where + ".spec.mpiReplicaSpecs.Launcher", "no `mpirun -np N` in the launcher's command")
    elif isinstance(slots, int) and np != workers * slots:
        bad(where + ".spec.mpiReplicaSpecs.Launcher",
            f"mpirun -np {np}, but Worker replicas x slotsPerWorker is {workers * slots}")


KINDS = {("v1", "PersistentVolumeClaim"): check_pvc, ("kubeflow.org/v2beta1", "MPIJob"): check_mpijob}


def main(paths):
    claims = {}
    claims_used = []
    docs = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                loaded = [d for d in yaml.safe_load_all(f) if d is not None]
        except (OSError, yaml.YAMLError) as e:
            bad(path, f"does not parse: {e}".replace("\n", " "))
            continue
        if not loaded:
            bad(path, "holds no YAML document")
        docs += [(f"{path}[{i}]", d) for i, d in enumerate(loaded)]
    for where, doc in sorted(docs, key=lambda wd: wd[1].get("kind") != "PersistentVolumeClaim"):
        kind = (doc.get("apiVersion"), doc.get("kind")) if isinstance(doc, dict) else None
        if kind not in KINDS:
            bad(where, f"apiVersion/kind {kind} is not one kiln ships (v1 PersistentVolumeClaim, "
                "kubeflow.org/v2beta1 MPIJob)")
        elif kind[1] == "PersistentVolumeClaim":
            check_pvc(where, doc, claims)
        else:
            check_mpijob(where, doc, claims_used)
    for w, name in claims_used:
        if name not in claims:
            bad(w, f"claims PVC '{name}', which no manifest defines")
        elif "ReadWriteMany" not in claims[name]:
            bad(w, f"PVC '{name}' is shared by several pods and must be ReadWriteMany")
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"{len(docs)} manifests from {len(paths)} files: structure ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
