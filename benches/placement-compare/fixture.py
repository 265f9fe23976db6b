#!/usr/bin/env python3
"""Prints the fixture of the placement comparison (docs/placement.md) as a kubectl-applyable
JSON List: one namespace, cluster set and binding per scenario, with its clusters and placement, so
that no two scenarios share a cluster (Balance counts decisions hub-wide). Status fields (resources,
claims, score values, fake decisions) are printed by `statuses` as `kubectl patch --subresource
status` arguments."""

import json
import sys
from datetime import datetime, timedelta, timezone

NOW = datetime.now(timezone.utc).replace(microsecond=0)
LATER = (NOW + timedelta(hours=10)).isoformat().replace("+00:00", "Z")
EARLIER = (NOW - timedelta(hours=1)).isoformat().replace("+00:00", "Z")
STAMP = NOW.isoformat().replace("+00:00", "Z")

objects, statuses = [], []


def scenario(name, clusters, placement, set_spec=None, extra_sets=()):
    ns = f"cmp-{name}"
    objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    objects.append({"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSet",
                    "metadata": {"name": ns}, "spec": set_spec or {}})
    for s in (ns,) + tuple(extra_sets):
        objects.append({"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSetBinding",
                        "metadata": {"name": s, "namespace": ns}, "spec": {"clusterSet": s}})
    for i, c in enumerate(clusters):
        name_ = f"{ns}-c{i}"
        labels = {"cluster.open-cluster-management.io/clusterset": ns, **c.get("labels", {})}
        objects.append({"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
                        "metadata": {"name": name_, "labels": labels},
                        "spec": {"hubAcceptsClient": True, **({"taints": c["taints"]} if "taints" in c else {})}})
        status = {k: c[k] for k in ("allocatable", "capacity", "clusterClaims") if k in c}
        if status:
            statuses.append(("managedcluster", name_, None, {"status": status}))
        if "score" in c:
            objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name_}})
            objects.append({"apiVersion": "cluster.open-cluster-management.io/v1alpha1", "kind": "AddOnPlacementScore",
                            "metadata": {"name": "demo", "namespace": name_}})
            statuses.append(("addonplacementscore", "demo", name_, {"status": {
                "scores": [{"name": "demo", "value": c["score"]}],
                "validUntil": EARLIER if c.get("expired") else LATER}}))
        if c.get("fake"):
            pd = f"fake-{i}-decision-1"
            objects.append({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "PlacementDecision",
                            "metadata": {"name": pd, "namespace": ns,
                                         "labels": {"cluster.open-cluster-management.io/placement": f"fake-{i}"}}})
            statuses.append(("placementdecision", pd, ns, {"status": {"decisions": [
                {"clusterName": name_, "reason": ""}] * c["fake"]}}))
    objects.append({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
                    "metadata": {"name": "p", "namespace": ns}, "spec": placement})


def res(cpu, mem):
    return {"allocatable": {"cpu": cpu, "memory": mem}, "capacity": {"cpu": "64", "memory": "256Gi"}}


def taint(key, effect, value=""):
    return {"key": key, "value": value, "effect": effect, "timeAdded": STAMP}


def config(built_in, weight):
    return {"scoreCoordinate": {"type": "BuiltIn", "builtIn": built_in}, "weight": weight}


scenario("default", [{}, {"fake": 2}, {}, {"fake": 1}, {}, {}], {"numberOfClusters": 3})
scenario("resources", [{**res("8", "32Gi")}, {**res("16", "16Gi")}, {**res("12", "64Gi")}, {**res("4", "8Gi")}, {}],
         {"numberOfClusters": 2, "prioritizerPolicy": {"mode": "Exact", "configurations": [
             config("ResourceAllocatableCPU", 1), config("ResourceAllocatableMemory", 2)]}})
scenario("addon", [{"score": 30}, {"score": 90, "expired": True}, {"score": 60}, {"score": 60}, {}],
         {"numberOfClusters": 2, "prioritizerPolicy": {"mode": "Additive", "configurations": [
             {"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "demo", "scoreName": "demo"}}, "weight": 3},
             config("Balance", 0)]}})
scenario("predicates", [{"labels": {"tier": "gold"}}, {"labels": {"tier": "silver"}, "clusterClaims": [{"name": "region", "value": "eu"}]},
                        {"clusterClaims": [{"name": "region", "value": "us"}]}, {"labels": {"tier": "gold"}, "clusterClaims": [{"name": "region", "value": "us"}]}],
         {"predicates": [
             {"requiredClusterSelector": {"labelSelector": {"matchLabels": {"tier": "gold"}},
                                          "claimSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["us"]}]}}},
             {"requiredClusterSelector": {"claimSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["eu"]}]}}}]})
scenario("cel-taints", [{"labels": {"v": "1.30.1"}, "taints": [taint("gpu", "NoSelect")]},
                        {"labels": {"v": "1.28.0"}},
                        {"labels": {"v": "1.31.0"}, "taints": [taint("maint", "PreferNoSelect")]},
                        {"labels": {"v": "1.32.0"}, "taints": [taint("new", "NoSelectIfNew")]},
                        {"labels": {"v": "1.33.0"}, "taints": [taint("zone", "NoSelect", "x")]}],
         {"tolerations": [{"key": "gpu", "operator": "Exists", "tolerationSeconds": 36000}],
          "predicates": [{"requiredClusterSelector": {"celSelector": {"celExpressions": [
              "semver(managedCluster.metadata.labels['v']).isGreaterThan(semver('1.29.0'))"]}}}]})
scenario("groups", [{"labels": {"vendor": "OpenShift"}}, {}, {"labels": {"vendor": "OpenShift"}}, {}, {}, {}, {}],
         {"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "30%", "decisionGroups": [
             {"groupName": "canary", "groupClusterSelector": {"labelSelector": {"matchLabels": {"vendor": "OpenShift"}}}}]}}})
scenario("misconfigured", [{}], {"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]})
scenario("nointersection", [{}], {"clusterSets": ["cmp-nowhere"]})
scenario("pages", [{} for _ in range(130)], {"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": 120}}})
scenario("labelset", [{"labels": {"cmp-env": "prod"}}, {"labels": {"cmp-env": "dev"}}], {"numberOfClusters": 5},
         set_spec={"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": {"matchLabels": {"cmp-env": "prod"}}}})

if sys.argv[1:] == ["statuses"]:
    for kind, name, ns, patch in statuses:
        print(json.dumps([kind, name, ns or "", json.dumps(patch)]))
else:
    print(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
