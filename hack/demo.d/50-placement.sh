#!/usr/bin/env bash
# Demo step: placement. Put cluster1 into a cluster set (a label on the cluster),
# bind the set to a namespace, create a Placement that selects it by label, and
# place a work by it: a ManifestWorkReplicaSet that lands on cluster1 only.
set -euo pipefail
HUB="$DATA_DIR/hub.kubeconfig"

echo "==> Label cluster1 into cluster set 'demo' (cluster.open-cluster-management.io/clusterset=demo)"
"$FLOTILLA" clusterset set demo --clusters cluster1 --kubeconfig "$HUB"

echo "==> Bind cluster set 'demo' to namespace 'default' so placements there may use it"
"$FLOTILLA" clusterset bind demo -n default --kubeconfig "$HUB"

echo "==> Create placement default/demo: clusters of set 'demo' with that label, one of them"
if grep -Eq '^default +demo ' <<<"$("$FLOTILLA" get placements -n default --kubeconfig "$HUB")"; then
	echo "placement default/demo already exists (demo run before)"
else
	"$FLOTILLA" create placement demo -n default --clusterset demo \
		--labels cluster.open-cluster-management.io/clusterset=demo --number 1 --kubeconfig "$HUB"
fi

echo "==> Waiting for the decision"
for _ in $(seq 1 120); do
	if grep -Eq '^default +demo +True .* cluster1$' <<<"$("$FLOTILLA" get placements -n default --kubeconfig "$HUB")"; then
		break
	fi
	sleep 0.5
done
"$FLOTILLA" get placements -n default --kubeconfig "$HUB"
grep -Eq '^default +demo +True .* cluster1$' <<<"$("$FLOTILLA" get placements -n default --kubeconfig "$HUB")" || {
	echo "placement default/demo did not select cluster1" >&2
	exit 1
}
echo "==> placement default/demo selects cluster1 (PlacementDecision default/demo-decision-1)"

echo "==> Place a work by the placement: a ManifestWorkReplicaSet (flotilla create work --replicaset)"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/placed.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: placed-by-label
  namespace: default
data:
  message: "only on clusters placement default/demo selects"
YAML
if grep -Eq '^cluster1 +placed ' <<<"$("$FLOTILLA" get works --kubeconfig "$HUB")"; then
	echo "work placed already exists (demo run before)"
else
	"$FLOTILLA" create work placed -f "$dir/placed.yaml" --placement default/demo --replicaset -n default --kubeconfig "$HUB"
fi

echo "==> Waiting for the work to be applied on cluster1 (and only there)"
applied=""
for _ in $(seq 1 120); do
	if grep -Eq '^cluster1 +placed +[0-9]+ +True' <<<"$("$FLOTILLA" get works --kubeconfig "$HUB")"; then
		applied=yes
		break
	fi
	sleep 0.5
done
"$FLOTILLA" get works --kubeconfig "$HUB" | grep -E '^CLUSTER|placed' || true
if [ -z "$applied" ] || grep -Eq '^cluster2 +placed ' <<<"$("$FLOTILLA" get works --kubeconfig "$HUB")"; then
	echo "the work placed by default/demo should be applied on cluster1 only" >&2
	exit 1
fi
echo "==> The work follows the placement: cluster1 has it, cluster2 does not"
