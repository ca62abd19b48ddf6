#!/usr/bin/env bash
# Demo step: work distribution. Create one ManifestWork (a namespace, a
# configmap and a deployment) on cluster1 and cluster2 with `flotilla create
# work`, then show each klusterlet applied it.
set -euo pipefail
HUB="$DATA_DIR/hub.kubeconfig"
TIMEOUT=${WORK_DEMO_TIMEOUT:-180}

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/demo-app.yaml" <<'YAML'
apiVersion: v1
kind: Namespace
metadata:
  name: demo-app
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: greeting
  namespace: demo-app
data:
  message: "hello from the hub"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: demo-app
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.k8s.io/pause:3.9
YAML

echo "==> Waiting (up to ${TIMEOUT}s) for cluster1 and cluster2 to be accepted: a work lives in its cluster's hub namespace"
accepted() { "$FLOTILLA" get clusters --kubeconfig "$HUB" 2>/dev/null | grep -Ec '^cluster[12] +true ' || true; }
for _ in $(seq 1 "$TIMEOUT"); do
	[ "$(accepted)" = 2 ] && break
	sleep 1
done
if [ "$(accepted)" != 2 ]; then
	"$FLOTILLA" get clusters --kubeconfig "$HUB" || true
	echo "cluster1 and cluster2 are not both accepted after ${TIMEOUT}s: is registration running? (flotilla dev status --data-dir $DATA_DIR)" >&2
	exit 1
fi

echo "==> flotilla create work demo-app -f demo-app.yaml --clusters cluster1,cluster2"
"$FLOTILLA" create work demo-app -f "$dir/demo-app.yaml" --clusters cluster1,cluster2 --overwrite --kubeconfig "$HUB"

echo "==> Waiting (up to ${TIMEOUT}s) for both klusterlets' work agents to apply it (APPLIED True)"
applied() { "$FLOTILLA" get works --clusters cluster1,cluster2 --kubeconfig "$HUB" | grep -Ec '^cluster[12] +demo-app +3 +True ' || true; }
for _ in $(seq 1 "$TIMEOUT"); do
	[ "$(applied)" = 2 ] && break
	sleep 1
done
"$FLOTILLA" get works --clusters cluster1,cluster2 --kubeconfig "$HUB"
if [ "$(applied)" != 2 ]; then
	echo "work demo-app is not applied on both clusters after ${TIMEOUT}s: are the klusterlets running? (flotilla dev status --data-dir $DATA_DIR)" >&2
	"$FLOTILLA" get work demo-app --cluster cluster1 --kubeconfig "$HUB" || true
	exit 1
fi

echo "==> Each manifest on cluster1, with its conditions:"
"$FLOTILLA" get work demo-app --cluster cluster1 --kubeconfig "$HUB"
echo "==> work demo-app is applied on cluster1 and cluster2"
