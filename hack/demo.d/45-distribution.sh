#!/usr/bin/env bash
# Demo step: per-cluster overrides and replica division (DistributionPolicy,
# flotilla.dev). cluster1 is labelled region=eu and cluster2 region=us; one
# Deployment of 30 replicas goes to both through a ManifestWorkReplicaSet whose
# policy points each region at its own registry and divides the replicas 2:1.
# Then a rule naming a label cluster2 lacks: its render fails with a condition
# naming the rule, and cluster2 keeps what it runs.
set -euo pipefail
HUB="$DATA_DIR/hub.kubeconfig"
NS=distribution-demo
TIMEOUT=${DISTRIBUTION_DEMO_TIMEOUT:-120}
spoke() { kubectl --kubeconfig "$DATA_DIR/clusters/$1.kubeconfig" "${@:2}"; }
hub() { kubectl --kubeconfig "$HUB" "$@"; }

echo "==> Label the clusters by region: cluster1 region=eu, cluster2 region=us"
hub label managedcluster cluster1 region=eu --overwrite
hub label managedcluster cluster2 region=us --overwrite

echo "==> Namespace $NS, bound to the built-in cluster set 'global', and a placement of every cluster"
hub create namespace "$NS" --dry-run=client -o yaml | hub apply -f -
"$FLOTILLA" clusterset bind global -n "$NS" --kubeconfig "$HUB"
if ! grep -Eq "^$NS +all " <<<"$("$FLOTILLA" get placements -n "$NS" --kubeconfig "$HUB")"; then
	"$FLOTILLA" create placement all -n "$NS" --clusterset global --kubeconfig "$HUB"
fi

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/policy.yaml" <<YAML
apiVersion: flotilla.dev/v1alpha1
kind: DistributionPolicy
metadata: {name: regions, namespace: $NS}
spec:
  overrides:
  - name: eu-registry
    clusters: {labelSelector: {matchLabels: {region: eu}}}
    images: [{component: Registry, value: registry.eu.example.com}]
  - name: us-registry
    clusters: {labelSelector: {matchLabels: {region: us}}}
    images: [{component: Registry, value: registry.us.example.com}]
  - name: cluster-label
    manifests: [{group: apps, kind: Deployment}]
    labels: [{key: example.com/cluster, value: '{{ cluster.name }}'}]
  replicas:
    type: Weighted
    weights:
    - {clusters: {labelSelector: {matchLabels: {region: eu}}}, weight: 2}
    - {clusters: {labelSelector: {matchLabels: {region: us}}}, weight: 1}
YAML
cat >"$dir/web.yaml" <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: distribution-demo}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: distribution-demo}
spec:
  replicas: 30
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: pause:3.9}]
YAML
echo "==> The policy (kubectl apply): an image registry per region, 30 replicas divided 2:1 (eu:us)"
cat "$dir/policy.yaml"
hub apply -f "$dir/policy.yaml"

echo "==> A bad policy is refused at admission (a template that is not one):"
sed 's/{{ cluster.name }}/{{ cluster.zone }}/; s/name: regions/name: broken/' "$dir/policy.yaml" >"$dir/broken.yaml"
if hub apply -f "$dir/broken.yaml" 2>"$dir/err"; then
	echo "the broken policy was admitted" >&2
	exit 1
fi
cat "$dir/err"

echo "==> flotilla create work web -f web.yaml --placement $NS/all --replicaset --distribution-policy regions"
"$FLOTILLA" create work web -f "$dir/web.yaml" --placement "$NS/all" --replicaset --distribution-policy regions --overwrite --kubeconfig "$HUB"

shares() { for c in cluster1 cluster2; do
	echo "$c $(spoke "$c" -n "$NS" get deployment web -o jsonpath='{.spec.replicas} {.spec.template.spec.containers[0].image}' 2>/dev/null)"
done; }
want=$'cluster1 20 registry.eu.example.com/pause:3.9\ncluster2 10 registry.us.example.com/pause:3.9'
echo "==> Waiting (up to ${TIMEOUT}s) for the divided, overridden Deployment on each cluster"
for _ in $(seq 1 "$TIMEOUT"); do
	[ "$(shares)" = "$want" ] && break
	sleep 1
done
echo "==> On the clusters (replicas, image):"
shares
if [ "$(shares)" != "$want" ]; then
	echo "the clusters do not run 20 (eu registry) and 10 (us registry) replicas" >&2
	"$FLOTILLA" get works --replicaset -n "$NS" -o yaml --kubeconfig "$HUB" >&2 || true
	exit 1
fi
"$FLOTILLA" get works --replicaset -n "$NS" --kubeconfig "$HUB"

echo "==> A rule that needs a label cluster2 does not have (zone): its render fails, it keeps its work"
hub label managedcluster cluster1 zone=eu-west-1a --overwrite
hub patch distributionpolicy regions -n "$NS" --type json -p '[{"op":"add","path":"/spec/overrides/-","value":
	{"name":"zone","annotations":[{"key":"example.com/zone","value":"{{ cluster.labels[zone] }}"}]}}]'
for _ in $(seq 1 "$TIMEOUT"); do
	reason=$(hub get manifestworkreplicaset web -n "$NS" -o jsonpath='{.status.conditions[?(@.type=="DistributionPolicyApplied")].reason}')
	[ "$reason" = RenderFailed ] && break
	sleep 1
done
hub get manifestworkreplicaset web -n "$NS" -o jsonpath='{.status.conditions[?(@.type=="DistributionPolicyApplied")].message}{"\n"}'
[ "$reason" = RenderFailed ] || { echo "no RenderFailed condition after ${TIMEOUT}s" >&2; exit 1; }
"$FLOTILLA" get works --replicaset -n "$NS" --kubeconfig "$HUB"
echo "==> cluster2 still runs its last good Deployment:"
shares

echo "==> Fix: drop the rule again"
hub patch distributionpolicy regions -n "$NS" --type json -p '[{"op":"remove","path":"/spec/overrides/3"}]'
hub label managedcluster cluster1 zone-
echo "==> DistributionPolicy regions renders web per cluster: overrides per region, 30 replicas divided 2:1"
