#!/usr/bin/env bash
# Runs upstream's placement controller, then ours, on the same fixture on one hub, and compares the
# decisions, groups and conditions they write (docs/placement.md).
#   KUBECONFIG=<hub admin kubeconfig> UPSTREAM=<path of upstream's placement binary> bash compare.sh
# Each run starts from the fixture without placements' results: the placements are created fresh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/placement-compare}
mkdir -p "$out"
: "${KUBECONFIG:?}" "${UPSTREAM:?}"
settle=${SETTLE:-20}

apply_fixture() {
  python3 "$here/fixture.py" | jq '.items |= map(select(.kind != "Placement"))' | kubectl apply -f - >/dev/null
  python3 "$here/fixture.py" statuses | while read -r line; do
    kind=$(jq -r '.[0]' <<<"$line"); name=$(jq -r '.[1]' <<<"$line"); ns=$(jq -r '.[2]' <<<"$line"); patch=$(jq -r '.[3]' <<<"$line")
    kubectl patch "$kind" "$name" ${ns:+-n "$ns"} --subresource status --type merge -p "$patch" >/dev/null
  done
}

placements() { python3 "$here/fixture.py" | jq '.items |= map(select(.kind == "Placement"))'; }

snapshot() {
  for ns in $(placements | jq -r '.items[].metadata.namespace'); do
    kubectl get placement p -n "$ns" -o json | jq --arg ns "$ns" '{ns: $ns,
      selected: .status.numberOfSelectedClusters, groups: .status.decisionGroups,
      conditions: [.status.conditions[]? | {type, status, reason, message}] | sort_by(.type)}'
    kubectl get placementdecision -n "$ns" -l cluster.open-cluster-management.io/placement=p -o json | jq --arg ns "$ns" '
      [.items[] | {ns: $ns, name: .metadata.name,
        labels: (.metadata.labels | with_entries(select(.key | startswith("cluster.open-cluster-management.io/")))),
        owner: [.metadata.ownerReferences[]? | {kind, name, controller, blockOwnerDeletion}],
        clusters: [.status.decisions[]?.clusterName]}] | sort_by(.name)'
  done
}

run_one() {
  local label=$1; shift
  placements | kubectl delete -f - --ignore-not-found --wait=true >/dev/null
  for ns in $(placements | jq -r '.items[].metadata.namespace'); do
    kubectl delete placementdecision -n "$ns" -l cluster.open-cluster-management.io/placement=p --ignore-not-found >/dev/null
  done
  "$@" >"$out/$label.log" 2>&1 &
  local pid=$!
  sleep 3
  placements | kubectl apply -f - >/dev/null
  sleep "$settle"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  snapshot >"$out/$label.json"
}

apply_fixture
run_one upstream "$UPSTREAM" controller --kubeconfig "$KUBECONFIG" --disable-leader-election --namespace default
run_one ours "${OURS:-$here/../../target/debug/examples/placement_controller}"
if diff <(jq -S . "$out/upstream.json") <(jq -S . "$out/ours.json") >"$out/diff.txt"; then
  echo "same decisions, groups and conditions ($(jq -s 'length' "$out/ours.json") objects compared)"
else
  echo "differences: $out/diff.txt"; exit 1
fi
