#!/usr/bin/env bash
# The helloworld add-on with upstream's klusterlet (issue 15, docs/addons.md "Upstream
# interplay"): our `hub` (registration controllers, add-on owner controller, admission and the
# add-on conversion webhook) and our `helloworld` hub controller on a real kube-apiserver hub;
# upstream's Go `registration agent` and `work agent` as the klusterlet of a real managed cluster;
# our `helloworld-agent` run by hand with the secret upstream's agent wrote (the real-kube
# clusters have no kubelet to run its Deployment). Passes when the add-on is Available through
# upstream's lease check and a hub ConfigMap arrived on the managed cluster.
#
# Needs ../shared/tools/real-kube built (~/.cache/ocm-real-kube/{bin,ocm-bin}) and
# `cargo build -p ocm-examples --bins`. Usage: benches/addon-interplay/run.sh [HUB_PORT SPOKE_PORT]
set -euo pipefail
cd "$(dirname "$0")/../.."
HUB_PORT=${1:-46443} SPOKE_PORT=${2:-48443}
export KAS_BIN_DIR=${KAS_BIN_DIR:-$HOME/.cache/ocm-real-kube/bin}
OCM_BIN=${OCM_BIN:-$HOME/.cache/ocm-real-kube/ocm-bin}
REAL_KUBE=${REAL_KUBE:-../shared/tools/real-kube}
export RUN_DIR=${RUN_DIR:-/tmp/addon-interplay}
BIN=${BIN:-target/debug}
W=$RUN_DIR/work
CLUSTER=cluster1
ADDON_NS=open-cluster-management-agent-addon
rm -rf "$RUN_DIR"; mkdir -p "$W"
bash "$REAL_KUBE/up.sh" hub "$HUB_PORT" $((HUB_PORT - 4000)) >/dev/null
bash "$REAL_KUBE/up.sh" spoke "$SPOKE_PORT" $((SPOKE_PORT - 4000)) >/dev/null
HUB=$RUN_DIR/hub/admin.kubeconfig SPOKE=$RUN_DIR/spoke/admin.kubeconfig
hub() { kubectl --kubeconfig "$HUB" "$@"; }
spoke() { kubectl --kubeconfig "$SPOKE" "$@"; }
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  bash "$REAL_KUBE/down.sh" hub >/dev/null 2>&1 || true
  bash "$REAL_KUBE/down.sh" spoke >/dev/null 2>&1 || true
}
trap cleanup EXIT
wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...
  local deadline=$((SECONDS + $1)) what=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS > deadline)); then echo "FAIL: timed out waiting for $what" >&2; return 1; fi
    sleep 1
  done
  echo "ok: $what"
}

# The managed cluster as upstream's klusterlet operator prepares it: its CRDs (ours are
# upstream's, byte for byte in schema) and namespaces.
for crd in ocm-api/crds/managed/*.yaml; do spoke apply -f "$crd" >/dev/null; done
spoke create namespace open-cluster-management-agent >/dev/null
spoke create namespace "$ADDON_NS" >/dev/null

# Our hub, with the webhooks (the add-on CRDs converted by ours) and a bootstrap kubeconfig.
$BIN/hub --kubeconfig "$HUB" --bootstrap-kubeconfig-out "$W/bootstrap.kubeconfig" \
  --webhook-bind-address 127.0.0.1:$((HUB_PORT + 100)) --metrics-bind-address 127.0.0.1:$((HUB_PORT + 101)) \
  > "$W/hub.log" 2>&1 & PIDS+=($!)
wait_for 120 "our hub's bootstrap kubeconfig" test -s "$W/bootstrap.kubeconfig"
wait_for 60 "the add-on CRDs converted by our webhook" \
  bash -c "kubectl --kubeconfig $HUB get crd managedclusteraddons.addon.open-cluster-management.io -o jsonpath='{.spec.conversion.strategy}' | grep -q Webhook"

# Upstream's klusterlet: registration agent and work agent.
$OCM_BIN/registration agent --kubeconfig "$SPOKE" --namespace open-cluster-management-agent \
  --disable-leader-election --listen 127.0.0.1:$((SPOKE_PORT + 100)) --spoke-cluster-name $CLUSTER \
  --bootstrap-kubeconfig "$W/bootstrap.kubeconfig" --hub-kubeconfig-dir "$W/hub-kubeconfig" \
  --spoke-external-server-urls https://127.0.0.1:$SPOKE_PORT > "$W/go-registration.log" 2>&1 & PIDS+=($!)
wait_for 60 "the cluster's CSR" bash -c "kubectl --kubeconfig $HUB get csr -l open-cluster-management.io/cluster-name=$CLUSTER -o name | grep -q ."
hub certificate approve "$(hub get csr -l open-cluster-management.io/cluster-name=$CLUSTER -o name | head -1)" >/dev/null
hub patch managedcluster $CLUSTER --type merge -p '{"spec":{"hubAcceptsClient":true}}' >/dev/null
hub wait managedcluster $CLUSTER --for condition=ManagedClusterConditionAvailable --timeout 180s >/dev/null
echo "ok: $CLUSTER joined through upstream's registration agent"
$OCM_BIN/work agent --kubeconfig "$SPOKE" --namespace open-cluster-management-agent \
  --disable-leader-election --listen 127.0.0.1:$((SPOKE_PORT + 101)) --spoke-cluster-name $CLUSTER \
  --hub-kubeconfig "$W/hub-kubeconfig/kubeconfig" --workload-source-config "$W/hub-kubeconfig/kubeconfig" \
  > "$W/go-work.log" 2>&1 & PIDS+=($!)

# Our helloworld hub controller, the blog's ClusterManagementAddOn and ManagedClusterAddOn (v1alpha1).
$BIN/helloworld --kubeconfig "$HUB" > "$W/helloworld.log" 2>&1 & PIDS+=($!)
hub apply -f - >/dev/null <<Y
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata: {name: helloworld}
spec: {addOnMeta: {displayName: helloworld, description: helloworld is an example addon}}
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ManagedClusterAddOn
metadata: {name: helloworld, namespace: $CLUSTER}
spec: {installNamespace: $ADDON_NS}
Y
wait_for 120 "ManifestWork addon-helloworld-deploy-0 applied by upstream's work agent" \
  bash -c "kubectl --kubeconfig $HUB -n $CLUSTER get manifestwork addon-helloworld-deploy-0 -o jsonpath='{.status.conditions[?(@.type==\"Applied\")].status}' | grep -q True"
wait_for 60 "Deployment helloworld-agent on $CLUSTER" spoke -n $ADDON_NS get deployment helloworld-agent
wait_for 120 "secret helloworld-hub-kubeconfig written by upstream's registration agent" \
  spoke -n $ADDON_NS get secret helloworld-hub-kubeconfig

# The add-on agent, with the secret as its pod would mount it.
mkdir -p "$W/helloworld-hub"
for key in kubeconfig tls.crt tls.key cluster-name; do
  spoke -n $ADDON_NS get secret helloworld-hub-kubeconfig -o jsonpath="{.data.${key//./\\.}}" | base64 -d > "$W/helloworld-hub/$key"
done
$BIN/helloworld-agent --hub-kubeconfig "$W/helloworld-hub/kubeconfig" --addon-namespace $ADDON_NS \
  --kubeconfig "$SPOKE" > "$W/helloworld-agent.log" 2>&1 & PIDS+=($!)
hub -n $CLUSTER create configmap hello-from-the-hub --from-literal=greeting=hello >/dev/null
wait_for 60 "ConfigMap hello-from-the-hub copied to $CLUSTER" spoke -n $ADDON_NS get configmap hello-from-the-hub
wait_for 120 "the add-on Available through upstream's lease check" \
  bash -c "kubectl --kubeconfig $HUB -n $CLUSTER get managedclusteraddon helloworld -o jsonpath='{.status.conditions[?(@.type==\"Available\")].reason}' | grep -q ManagedClusterAddOnLeaseUpdated"
hub -n $CLUSTER get managedclusteraddon helloworld -o yaml > "$W/managedclusteraddon.yaml"
hub get managedclusteraddons -A
echo "Forbidden in upstream's logs: $(cat "$W/go-registration.log" "$W/go-work.log" | grep -c Forbidden || true)"
echo "PASS (logs and the add-on's YAML in $W)"
