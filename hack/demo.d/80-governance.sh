#!/usr/bin/env bash
# Demo step: governance on the managed clusters. Enable the two governance
# addons (governance-policy-framework, config-policy-controller) on both
# clusters, write a policy-collection-style Policy (NIST annotations) on the hub
# bound to a Placement of both clusters: the framework agents copy it to each
# cluster, the engine evaluates it there, and the compliance comes back to the
# hub: NonCompliant on cluster2 (cluster1 already has the namespace), then,
# enforced, Compliant on both. Read on the hub with get/describe policy.
set -euo pipefail
HUB="$DATA_DIR/hub.kubeconfig"
TIMEOUT=${GOVERNANCE_DEMO_TIMEOUT:-180}
NS=policies
POLICY=policy-baseline-namespace
if ! command -v kubectl >/dev/null; then
	echo "==> skipping the governance step: it needs kubectl (to label a namespace and patch the policy); make controlplane builds one into bin/controlplane"
	exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
spoke() { kubectl --kubeconfig "$DATA_DIR/clusters/$1.kubeconfig" "${@:2}"; }
wait_for() { # wait_for <what> <command...>: until the command succeeds
	local what=$1
	shift
	for _ in $(seq 1 "$TIMEOUT"); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 1
	done
	echo "$what: not after ${TIMEOUT}s (logs in $DATA_DIR/logs)" >&2
	"$FLOTILLA" get addon --kubeconfig "$HUB" >&2 || true
	"$FLOTILLA" get policies -n "$NS" --clusters --kubeconfig "$HUB" >&2 || true
	exit 1
}
available() {
	[ "$("$FLOTILLA" get addon --kubeconfig "$HUB" | grep -Ec '^(governance-policy-framework|config-policy-controller) +cluster[12] +True ')" = 4 ]
}
cluster_state() { # cluster_state <cluster> <state>
	grep -Eq "^$NS +$POLICY +$1 +$2\$" <<<"$("$FLOTILLA" get policies -n "$NS" --clusters --kubeconfig "$HUB")"
}
root_compliant() {
	grep -Eq "^$NS +$POLICY +enforce +Compliant +2/2 compliant" <<<"$("$FLOTILLA" get policies -n "$NS" --kubeconfig "$HUB")"
}

echo "==> flotilla addon enable --names governance-policy-framework,config-policy-controller --clusters cluster1,cluster2"
"$FLOTILLA" addon enable --names governance-policy-framework,config-policy-controller --clusters cluster1,cluster2 --kubeconfig "$HUB"
echo "==> Waiting (up to ${TIMEOUT}s) for both agents on both clusters (each with its own hub credential) to be Available"
wait_for "governance addons Available" available
"$FLOTILLA" get addon --kubeconfig "$HUB"

echo "==> cluster1 already has namespace demo-governance labelled owner=platform; cluster2 has not"
spoke cluster1 create namespace demo-governance --dry-run=client -o yaml | spoke cluster1 apply -f - >/dev/null
spoke cluster1 label namespace demo-governance owner=platform --overwrite >/dev/null
spoke cluster2 delete namespace demo-governance --ignore-not-found --wait=false >/dev/null

echo "==> A Placement of both clusters in namespace $NS (cluster set global)"
kubectl --kubeconfig "$HUB" create namespace "$NS" --dry-run=client -o yaml | kubectl --kubeconfig "$HUB" apply -f - >/dev/null
"$FLOTILLA" clusterset bind global -n "$NS" --kubeconfig "$HUB"
if ! grep -Eq "^$NS +all " <<<"$("$FLOTILLA" get placements -n "$NS" --kubeconfig "$HUB")"; then
	"$FLOTILLA" create placement all -n "$NS" --clusterset global --kubeconfig "$HUB"
fi

cat >"$work/baseline.yaml" <<'YAML'
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata:
  name: baseline-namespace
spec:
  remediationAction: inform
  severity: low
  object-templates:
    - complianceType: musthave
      objectDefinition:
        apiVersion: v1
        kind: Namespace
        metadata:
          name: demo-governance
          labels:
            owner: platform
YAML
if kubectl --kubeconfig "$HUB" -n "$NS" get policies.policy.open-cluster-management.io "$POLICY" >/dev/null 2>&1; then
	echo "==> $NS/$POLICY exists (demo run before): back to inform"
	kubectl --kubeconfig "$HUB" -n "$NS" patch policies.policy.open-cluster-management.io "$POLICY" --type merge -p '{"spec":{"remediationAction":"inform"}}'
else
	echo "==> flotilla create policy $POLICY (NIST SP 800-53, CM-2 Baseline Configuration) bound to placement all"
	"$FLOTILLA" create policy "$POLICY" -n "$NS" -f "$work/baseline.yaml" --remediation-action inform \
		--standards "NIST SP 800-53" --categories "CM Configuration Management" \
		--controls "CM-2 Baseline Configuration" --placement all --kubeconfig "$HUB"
fi

echo "==> Waiting for the clusters to report: cluster1 Compliant, cluster2 NonCompliant (inform)"
wait_for "cluster1 Compliant" cluster_state cluster1 Compliant
wait_for "cluster2 NonCompliant" cluster_state cluster2 NonCompliant
"$FLOTILLA" get policies -n "$NS" --kubeconfig "$HUB"
"$FLOTILLA" get policies -n "$NS" --clusters --kubeconfig "$HUB"
echo "==> On cluster2, the framework agent's copy of the replica and the ConfigurationPolicy it created:"
spoke cluster2 -n cluster2 get policies.policy.open-cluster-management.io,configurationpolicies.policy.open-cluster-management.io

echo "==> Enforce: kubectl patch policy $POLICY --type merge -p '{\"spec\":{\"remediationAction\":\"enforce\"}}'"
kubectl --kubeconfig "$HUB" -n "$NS" patch policies.policy.open-cluster-management.io "$POLICY" --type merge -p '{"spec":{"remediationAction":"enforce"}}'
wait_for "$POLICY Compliant on both clusters" root_compliant
"$FLOTILLA" get policies -n "$NS" --clusters --kubeconfig "$HUB"
"$FLOTILLA" describe policy "$POLICY" -n "$NS" --kubeconfig "$HUB"
echo "==> cluster2 now has the namespace, created by the config-policy-controller agent:"
spoke cluster2 get namespace demo-governance --show-labels
echo "==> $POLICY: NonCompliant on cluster2, enforced, Compliant on both, read on the hub"
