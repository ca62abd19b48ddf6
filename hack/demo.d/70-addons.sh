#!/usr/bin/env bash
# Demo step: addons. Enable the example addon on cluster1 and cluster2 with
# `flotilla addon enable`, show it Available (its agent runs hosted next to each
# klusterlet, renews its lease and copies a hub ConfigMap to its cluster with
# its own hub credential), then disable it and show its works and credentials gone.
set -euo pipefail
HUB="$DATA_DIR/hub.kubeconfig"
TIMEOUT=${ADDON_DEMO_TIMEOUT:-180}
NS=open-cluster-management-agent-addon

wait_for() { # wait_for <what> <command...>: until the command succeeds
	local what=$1
	shift
	for _ in $(seq 1 "$TIMEOUT"); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 1
	done
	echo "$what: not after ${TIMEOUT}s (flotilla dev status --data-dir $DATA_DIR; logs in $DATA_DIR/logs)" >&2
	"$FLOTILLA" get addon --kubeconfig "$HUB" >&2 || true
	exit 1
}
spoke() { kubectl --kubeconfig "$DATA_DIR/clusters/$1.kubeconfig" "${@:2}"; }
available() { [ "$("$FLOTILLA" get addon example --kubeconfig "$HUB" | grep -Ec '^example +cluster[12] +True ')" = 2 ]; }
gone() { ! grep -Eq '^example +cluster[12] ' <<<"$("$FLOTILLA" get addon example --kubeconfig "$HUB")"; }
no_works() { ! grep -q 'addon-example-deploy' <<<"$("$FLOTILLA" get works --clusters cluster1,cluster2 --kubeconfig "$HUB")"; }

echo "==> The hub ships the example addon (Manual install strategy): flotilla get addon"
"$FLOTILLA" get addon --kubeconfig "$HUB"

echo "==> flotilla addon enable --names example --clusters cluster1,cluster2"
"$FLOTILLA" addon enable --names example --clusters cluster1,cluster2 --kubeconfig "$HUB"

echo "==> Waiting (up to ${TIMEOUT}s) for the agents to register and report their lease (AVAILABLE True)"
wait_for "example addon Available on both clusters" available
"$FLOTILLA" get addon example --kubeconfig "$HUB"
"$FLOTILLA" get works --clusters cluster1,cluster2 --kubeconfig "$HUB"

if command -v kubectl >/dev/null; then
	echo "==> The agent's hub credential on cluster1 (written by the klusterlet from its approved CSR):"
	wait_for "credential written on cluster1" spoke cluster1 get secret example-hub-kubeconfig -n "$NS"
	spoke cluster1 get secret example-hub-kubeconfig -n "$NS"
	echo "==> A hub ConfigMap labelled addon.flotilla.dev/example=true in cluster1's namespace..."
	kubectl --kubeconfig "$HUB" -n cluster1 create configmap demo-greeting --from-literal=hello="from the hub" \
		--dry-run=client -o yaml | kubectl --kubeconfig "$HUB" label --local -f - addon.flotilla.dev/example=true -o yaml |
		kubectl --kubeconfig "$HUB" apply -f - >/dev/null
	echo "    ...is copied to cluster1 by the agent, with its own hub credential:"
	wait_for "ConfigMap demo-greeting copied to cluster1" spoke cluster1 get configmap demo-greeting -n "$NS"
	spoke cluster1 get configmap demo-greeting -n "$NS" -o jsonpath='{.data.hello}{"\n"}'
	kubectl --kubeconfig "$HUB" -n cluster1 delete configmap demo-greeting >/dev/null
fi

echo "==> flotilla addon disable --names example --all-clusters"
"$FLOTILLA" addon disable --names example --all-clusters --kubeconfig "$HUB"
wait_for "example addon removed" gone
wait_for "addon works removed" no_works
"$FLOTILLA" get addon --kubeconfig "$HUB"
if command -v kubectl >/dev/null; then
	wait_for "credential removed from cluster1" bash -c "! kubectl --kubeconfig '$DATA_DIR/clusters/cluster1.kubeconfig' get secret example-hub-kubeconfig -n $NS"
	echo "==> cluster1's addon credential is gone:"
	spoke cluster1 get secrets -n "$NS" 2>&1 || true
fi
echo "==> the example addon was enabled, Available, and disabled with its works and credentials removed"
