#!/usr/bin/env bash
# Demo step: fleet search. Enable the search addon on cluster1 and cluster2,
# then ask the fleet from the hub, as the admin and as a user with no rights:
# where does Deployment web run, which Deployments are short of replicas,
# the same through the hub apiserver with kubectl (docs/search.md).
set -euo pipefail
HUB="$DATA_DIR/hub.kubeconfig"
TIMEOUT=${SEARCH_DEMO_TIMEOUT:-180}

wait_for() { # wait_for <what> <command...>: until the command succeeds
	local what=$1
	shift
	for _ in $(seq 1 "$TIMEOUT"); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 1
	done
	echo "$what: not after ${TIMEOUT}s (flotilla dev status --data-dir $DATA_DIR; logs in $DATA_DIR/logs)" >&2
	"$FLOTILLA" get addon search --kubeconfig "$HUB" >&2 || true
	exit 1
}
available() { [ "$("$FLOTILLA" get addon search --kubeconfig "$HUB" | grep -Ec '^search +cluster[12] +True ')" = 2 ]; }
# Both clusters' web Deployments (the work step's demo-app) are in the index.
indexed() { [ "$("$FLOTILLA" search deployments -n demo-app --kubeconfig "$HUB" | grep -Ec '^cluster[12] +demo-app +web ')" = 2 ]; }

echo "==> flotilla addon enable --names search --clusters cluster1,cluster2"
"$FLOTILLA" addon enable --names search --clusters cluster1,cluster2 --kubeconfig "$HUB"
wait_for "search addon Available on both clusters" available
"$FLOTILLA" get addon search --kubeconfig "$HUB"

echo "==> Where does Deployment web run? flotilla search deployments -n demo-app"
wait_for "demo-app's Deployments in the search index" indexed
"$FLOTILLA" search deployments -n demo-app --kubeconfig "$HUB"

echo "==> Which Deployments are short of replicas? flotilla search deployments --not-ready"
"$FLOTILLA" search deployments --not-ready --kubeconfig "$HUB" || true

echo "==> The cluster-admin Roles across the fleet: flotilla search clusterroles --name-prefix cluster-admin"
"$FLOTILLA" search clusterroles --name-prefix cluster-admin --kubeconfig "$HUB"

if command -v kubectl >/dev/null; then
	echo "==> The same index through the hub apiserver, with kubectl:"
	echo "    kubectl get --raw '/apis/search.flotilla.dev/v1alpha1/resources/apis/apps/v1/namespaces/demo-app/deployments'"
	kubectl --kubeconfig "$HUB" get --raw '/apis/search.flotilla.dev/v1alpha1/resources/apis/apps/v1/namespaces/demo-app/deployments' |
		grep -o '"search.flotilla.dev/cluster":"[^"]*"' | sort
	echo "==> A user who may get no ManagedCluster finds nothing:"
	kubectl --kubeconfig "$HUB" create namespace demo-users --dry-run=client -o yaml | kubectl --kubeconfig "$HUB" apply -f - >/dev/null
	kubectl --kubeconfig "$HUB" -n demo-users create serviceaccount nobody --dry-run=client -o yaml | kubectl --kubeconfig "$HUB" apply -f - >/dev/null
	token=$(kubectl --kubeconfig "$HUB" -n demo-users create token nobody)
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
	server=$(kubectl --kubeconfig "$HUB" config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
	kubectl --kubeconfig "$HUB" config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$dir/ca.crt"
	KUBECONFIG="$dir/nobody" kubectl config set-cluster hub --server "$server" --certificate-authority "$dir/ca.crt" --embed-certs >/dev/null
	KUBECONFIG="$dir/nobody" kubectl config set-credentials nobody --token "$token" >/dev/null
	KUBECONFIG="$dir/nobody" kubectl config set-context hub --cluster hub --user nobody >/dev/null
	KUBECONFIG="$dir/nobody" kubectl config use-context hub >/dev/null
	echo "    flotilla search deployments -n demo-app (as system:serviceaccount:demo-users:nobody)"
	"$FLOTILLA" search deployments -n demo-app --kubeconfig "$dir/nobody" 2>&1 || true
fi
echo "==> fleet search answers for cluster1 and cluster2 (docs/search.md)"
