#!/usr/bin/env bash
# Demo step: placement. Put cluster1 into a cluster set (a label on the cluster),
# bind the set to a namespace, and create a Placement that selects it by label.
# Later steps can place work with placement default/demo.
set -euo pipefail
HUB="$DATA_DIR/hub.kubeconfig"

echo "==> Label cluster1 into cluster set 'demo' (cluster.open-cluster-management.io/clusterset=demo)"
"$FLOTILLA" clusterset set demo --clusters cluster1 --kubeconfig "$HUB"

echo "==> Bind cluster set 'demo' to namespace 'default' so placements there may use it"
"$FLOTILLA" clusterset bind demo -n default --kubeconfig "$HUB"

echo "==> Create placement default/demo: clusters of set 'demo' with that label, one of them"
"$FLOTILLA" create placement demo -n default --clusterset demo \
	--labels cluster.open-cluster-management.io/clusterset=demo --number 1 --kubeconfig "$HUB"

echo "==> Waiting for the decision"
for _ in $(seq 1 120); do
	if "$FLOTILLA" get placements -n default --kubeconfig "$HUB" | grep -Eq '^default +demo +True .* cluster1$'; then
		break
	fi
	sleep 0.5
done
"$FLOTILLA" get placements -n default --kubeconfig "$HUB"
"$FLOTILLA" get placements -n default --kubeconfig "$HUB" | grep -Eq '^default +demo +True .* cluster1$' || {
	echo "placement default/demo did not select cluster1" >&2
	exit 1
}
echo "==> placement default/demo selects cluster1 (PlacementDecision default/demo-decision-1)"
