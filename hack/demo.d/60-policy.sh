#!/usr/bin/env bash
# Demo step: the ConfigurationPolicy engine. A policy from the policy-collection
# style (an OCM Policy wrapping a ConfigurationPolicy, NIST annotations) is first
# evaluated offline with `policy dryrun`, then run against cluster1 with
# `policy run`: NonCompliant in inform, enforced, then Compliant.
set -euo pipefail
FLOTILLA=${FLOTILLA:-bin/flotilla}
DATA_DIR=${DATA_DIR:-.flotilla}
K=$DATA_DIR/clusters/cluster1.kubeconfig
work=$(mktemp -d)
engine=""
cleanup() {
	if [ -n "$engine" ]; then kill "$engine" 2>/dev/null || true; wait "$engine" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

cat > "$work/policy.yaml" <<'YAML'
apiVersion: policy.open-cluster-management.io/v1
kind: Policy
metadata:
  name: policy-payments-baseline
  namespace: default
  annotations:
    policy.open-cluster-management.io/standards: NIST SP 800-53
    policy.open-cluster-management.io/categories: CM Configuration Management
    policy.open-cluster-management.io/controls: CM-2 Baseline Configuration
spec:
  remediationAction: inform
  policy-templates:
    - objectDefinition:
        apiVersion: policy.open-cluster-management.io/v1
        kind: ConfigurationPolicy
        metadata:
          name: payments-baseline
        spec:
          severity: high
          pruneObjectBehavior: DeleteIfCreated
          object-templates:
            - complianceType: musthave
              objectDefinition:
                apiVersion: v1
                kind: Namespace
                metadata:
                  name: demo-payments
                  labels:
                    pod-security.kubernetes.io/enforce: restricted
            - complianceType: musthave
              objectDefinition:
                apiVersion: v1
                kind: LimitRange
                metadata:
                  name: container-mem-limit-range
                  namespace: demo-payments
                spec:
                  limits:
                    - type: Container
                      default: {memory: 512Mi}
                      defaultRequest: {memory: 256Mi}
YAML
cat > "$work/cluster.yaml" <<'YAML'
apiVersion: v1
kind: Namespace
metadata:
  name: demo-payments
  labels:
    pod-security.kubernetes.io/enforce: baseline
YAML

echo "==> policy dryrun: evaluate the policy offline against a namespace that has the wrong pod-security label"
rc=0
"$FLOTILLA" policy dryrun -f "$work/policy.yaml" --from "$work/cluster.yaml" || rc=$?
echo "==> dryrun exit code: $rc (0 Compliant, 2 NonCompliant, 1 error)"
[ "$rc" = 2 ] || { echo "expected exit code 2" >&2; exit 1; }

cat > "$work/selector.yaml" <<'YAML'
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: app-settings, namespace: default}
spec:
  remediationAction: inform
  namespaceSelector: {include: ["default"]}
  object-templates:
    - complianceType: musthave
      objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: app-settings}, data: {mode: strict}}
YAML
cat > "$work/settings.yaml" <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: payments}
YAML
echo "==> policy dryrun: the input names only namespace payments; namespace default exists all the same, as on every cluster (and in upstream's dryrun)"
rc=0
out=$("$FLOTILLA" policy dryrun -f "$work/selector.yaml" --from "$work/settings.yaml") || rc=$?
echo "$out"
[ "$rc" = 2 ] && grep -q "configmaps \[app-settings\] not found in namespace default" <<<"$out" ||
	{ echo "expected NonCompliant: the ConfigMap missing in namespace default" >&2; exit 1; }

echo "==> starting the policy engine against cluster1 (flotilla policy run --kubeconfig $K)"
"$FLOTILLA" policy run --kubeconfig "$K" --install-crds --metrics-addr 127.0.0.1:18383 >"$work/engine.log" 2>&1 &
engine=$!

# state: the COMPLIANCE column of the demo policy ("-" until evaluated).
state() {
	"$FLOTILLA" policy status --kubeconfig "$K" -n default 2>/dev/null | awk '$2 == "payments-baseline" {print $4}'
}
# wait_status STATE: until the demo policy is STATE (at most 60s).
wait_status() {
	for _ in $(seq 1 120); do
		[ "$(state)" = "$1" ] && return 0
		sleep 0.5
	done
	echo "policy did not become $1; engine log:" >&2
	cat "$work/engine.log" >&2
	return 1
}

echo "==> applying the policy in inform mode"
for _ in $(seq 1 60); do
	"$FLOTILLA" policy apply --kubeconfig "$K" -f "$work/policy.yaml" 2>/dev/null && break
	sleep 0.5 # the engine is still installing the CRD
done
# A second run of the demo finds the policy Compliant already.
[ "$(state)" = Compliant ] || wait_status NonCompliant
"$FLOTILLA" policy status --kubeconfig "$K" -n default

echo "==> switching the Policy to enforce: the engine creates the namespace and the LimitRange"
sed -i 's/remediationAction: inform/remediationAction: enforce/' "$work/policy.yaml"
"$FLOTILLA" policy apply --kubeconfig "$K" -f "$work/policy.yaml"
wait_status Compliant
"$FLOTILLA" policy status --kubeconfig "$K" -n default --history

if command -v curl >/dev/null; then
	echo "==> engine metrics (cluster_policy_governance_info: 0 Compliant, 1 NonCompliant)"
	curl -fsS http://127.0.0.1:18383/metrics | grep -E '^(cluster_policy_governance_info|config_policy_evaluation_total)' || true
fi
echo "==> stopping the policy engine (the policy and its objects stay on cluster1)"
