#!/usr/bin/env python3
"""Writes ocm-controlplane/src/registry/builtin_schemas.json: the structure of the built-in kinds the
control plane stores, reduced to what field management and strategic merge need (properties, item and
map value types, and the x-kubernetes-* list, map and patch extensions), without descriptions.

Input: the `_definitions.json` of a Kubernetes release's OpenAPI definitions as JSON Schema, for
example from the `kubernetes-validate` package on PyPI:

    pip download --no-deps kubernetes-validate==1.37.0 && unzip -q kubernetes_validate-*.whl
    python3 ocm-controlplane/tools/gen_builtin_schemas.py \
        kubernetes_validate/kubernetes-json-schema/v1.36.0-local/_definitions.json
"""
import json
import sys
from pathlib import Path

# (group, resource) -> definition name of the stored built-in kinds (and request-only kinds).
ROOTS = {
    "/namespaces": "io.k8s.api.core.v1.Namespace",
    "/configmaps": "io.k8s.api.core.v1.ConfigMap",
    "/secrets": "io.k8s.api.core.v1.Secret",
    "/serviceaccounts": "io.k8s.api.core.v1.ServiceAccount",
    "/events": "io.k8s.api.core.v1.Event",
    "/endpoints": "io.k8s.api.core.v1.Endpoints",
    "/limitranges": "io.k8s.api.core.v1.LimitRange",
    "/resourcequotas": "io.k8s.api.core.v1.ResourceQuota",
    "/podtemplates": "io.k8s.api.core.v1.PodTemplate",
    "/pods": "io.k8s.api.core.v1.Pod",
    "/services": "io.k8s.api.core.v1.Service",
    "/nodes": "io.k8s.api.core.v1.Node",
    "/persistentvolumes": "io.k8s.api.core.v1.PersistentVolume",
    "/persistentvolumeclaims": "io.k8s.api.core.v1.PersistentVolumeClaim",
    "/replicationcontrollers": "io.k8s.api.core.v1.ReplicationController",
    "apps/deployments": "io.k8s.api.apps.v1.Deployment",
    "apps/daemonsets": "io.k8s.api.apps.v1.DaemonSet",
    "apps/statefulsets": "io.k8s.api.apps.v1.StatefulSet",
    "apps/replicasets": "io.k8s.api.apps.v1.ReplicaSet",
    "apps/controllerrevisions": "io.k8s.api.apps.v1.ControllerRevision",
    "batch/jobs": "io.k8s.api.batch.v1.Job",
    "batch/cronjobs": "io.k8s.api.batch.v1.CronJob",
    "coordination.k8s.io/leases": "io.k8s.api.coordination.v1.Lease",
    "certificates.k8s.io/certificatesigningrequests": "io.k8s.api.certificates.v1.CertificateSigningRequest",
    "rbac.authorization.k8s.io/roles": "io.k8s.api.rbac.v1.Role",
    "rbac.authorization.k8s.io/rolebindings": "io.k8s.api.rbac.v1.RoleBinding",
    "rbac.authorization.k8s.io/clusterroles": "io.k8s.api.rbac.v1.ClusterRole",
    "rbac.authorization.k8s.io/clusterrolebindings": "io.k8s.api.rbac.v1.ClusterRoleBinding",
    "apiextensions.k8s.io/customresourcedefinitions":
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
    "events.k8s.io/events": "io.k8s.api.events.v1.Event",
    "authentication.k8s.io/tokenrequests": "io.k8s.api.authentication.v1.TokenRequest",
    "authentication.k8s.io/tokenreviews": "io.k8s.api.authentication.v1.TokenReview",
    "authentication.k8s.io/selfsubjectreviews": "io.k8s.api.authentication.v1.SelfSubjectReview",
    "authorization.k8s.io/subjectaccessreviews": "io.k8s.api.authorization.v1.SubjectAccessReview",
    "authorization.k8s.io/selfsubjectaccessreviews": "io.k8s.api.authorization.v1.SelfSubjectAccessReview",
    "authorization.k8s.io/selfsubjectrulesreviews": "io.k8s.api.authorization.v1.SelfSubjectRulesReview",
    "authorization.k8s.io/localsubjectaccessreviews": "io.k8s.api.authorization.v1.LocalSubjectAccessReview",
}

KEEP = [
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-patch-merge-key",
    "x-kubernetes-patch-strategy",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
]


def ref_name(ref):
    return ref.rsplit("/", 1)[-1]


def main_type(node):
    t = node.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), None)
    return t


def reduce(node, pending):
    out = {}
    if "$ref" in node:
        name = ref_name(node["$ref"])
        pending.append(name)
        out["$ref"] = name
    t = main_type(node)
    if t:
        out["type"] = t
    if "items" in node:
        out["items"] = reduce(node["items"], pending)
    if isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = reduce(node["additionalProperties"], pending)
    if "properties" in node:
        out["properties"] = {k: reduce(v, pending) for k, v in node["properties"].items()}
    for k in KEEP:
        if k in node:
            out[k] = node[k]
    if node.get("format") in ("int32", "int64", "double", "float", "byte", "date-time"):
        out["format"] = node["format"]
    if node.get("format") == "int-or-string":
        out["x-kubernetes-int-or-string"] = True
    return out


def main():
    src = json.loads(Path(sys.argv[1]).read_text())["$defs"]
    defs = {}
    pending = list(ROOTS.values())
    while pending:
        name = pending.pop()
        if name in defs:
            continue
        defs[name] = reduce(src[name], pending)
    out = {"roots": ROOTS, "definitions": dict(sorted(defs.items()))}
    dest = Path(__file__).resolve().parent.parent / "src/registry/builtin_schemas.json"
    dest.write_text(json.dumps(out, separators=(",", ":"), sort_keys=False) + "\n")
    print(f"{dest}: {len(defs)} definitions, {dest.stat().st_size} bytes")


if __name__ == "__main__":
    main()
