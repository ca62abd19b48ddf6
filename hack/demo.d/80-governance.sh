#!/usr/bin/env bash
# Demo step: governance on the managed clusters. Enable the two governance
# addons (governance-policy-framework, config-policy-controller) on both
# clusters, write a policy-collection-style Policy (NIST annotations) on the hub
# bound to a Placement of both clusters: the framework agents copy it to each
# cluster, the engine evaluates it there, and the compliance comes back to the
# hub: NonCompliant on cluster2 (cluster1 already has the namespace), then,
# enforced, Compliant on both. Read on the hub with get/describe policy.
# Then a CertificatePolicy (cluster1's certificate expires within its minimum:
# NonCompliant there, Compliant on cluster2) and an OperatorPolicy (no OLM on the
# dev clusters: NonCompliant, saying so), delivered by the same two addons.
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

echo
echo "==> Certificates and operators: a CertificatePolicy and policy-collection's OperatorPolicy shape, delivered by the same addons"
if ! command -v openssl >/dev/null; then
	echo "==> skipping the certificate step: it needs openssl to make the demo certificates"
	exit 0
fi
CERT_POLICY=policy-certificates
OP_POLICY=policy-operator
# cluster1's certificate expires in 5 days, cluster2's in a year.
for c in cluster1 cluster2; do
	days=365
	[ "$c" = cluster1 ] && days=5
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$days" -subj "/CN=web.demo" \
		-addext "subjectAltName=DNS:web.demo.example.com" -keyout "$work/$c.key" -out "$work/$c.crt" 2>/dev/null
	spoke "$c" create namespace demo-certs --dry-run=client -o yaml | spoke "$c" apply -f - >/dev/null
	spoke "$c" -n demo-certs create secret tls web-tls --cert "$work/$c.crt" --key "$work/$c.key" --dry-run=client -o yaml | spoke "$c" apply -f - >/dev/null
done
cat >"$work/certs.yaml" <<'YAML'
apiVersion: policy.open-cluster-management.io/v1
kind: CertificatePolicy
metadata:
  name: web-certificates
spec:
  namespaceSelector:
    include: ["demo-certs"]
  remediationAction: inform
  severity: low
  minimumDuration: 720h
YAML
cat >"$work/operator.yaml" <<'YAML'
apiVersion: policy.open-cluster-management.io/v1beta1
kind: OperatorPolicy
metadata:
  name: compliance-operator
spec:
  remediationAction: inform
  severity: high
  complianceType: musthave
  upgradeApproval: Automatic
  operatorGroup:
    name: compliance-operator
    namespace: openshift-compliance
    targetNamespaces: [openshift-compliance]
  subscription:
    name: compliance-operator
    namespace: openshift-compliance
    source: redhat-operators
    sourceNamespace: openshift-marketplace
YAML
policy_state() { # policy_state <policy> <cluster> <state>
	grep -Eq "^$NS +$1 +$2 +$3\$" <<<"$("$FLOTILLA" get policies -n "$NS" --clusters --kubeconfig "$HUB")"
}
if ! kubectl --kubeconfig "$HUB" -n "$NS" get policies.policy.open-cluster-management.io "$CERT_POLICY" >/dev/null 2>&1; then
	echo "==> flotilla create policy $CERT_POLICY -f certs.yaml (NIST SC-8) --placement all"
	"$FLOTILLA" create policy "$CERT_POLICY" -n "$NS" -f "$work/certs.yaml" --remediation-action inform \
		--standards "NIST SP 800-53" --categories "SC System and Communications Protection" \
		--controls "SC-8 Transmission Confidentiality and Integrity" --placement all --kubeconfig "$HUB"
fi
if ! kubectl --kubeconfig "$HUB" -n "$NS" get policies.policy.open-cluster-management.io "$OP_POLICY" >/dev/null 2>&1; then
	echo "==> flotilla create policy $OP_POLICY -f operator.yaml (NIST CA-2) --placement all"
	"$FLOTILLA" create policy "$OP_POLICY" -n "$NS" -f "$work/operator.yaml" --remediation-action inform \
		--standards "NIST SP 800-53" --categories "CA Security Assessment and Authorization" \
		--controls "CA-2 Security Assessments" --placement all --kubeconfig "$HUB"
fi
echo "==> Waiting: cluster1's certificate expires within 720h (NonCompliant), cluster2's does not (Compliant)"
wait_for "$CERT_POLICY NonCompliant on cluster1" policy_state "$CERT_POLICY" cluster1 NonCompliant
wait_for "$CERT_POLICY Compliant on cluster2" policy_state "$CERT_POLICY" cluster2 Compliant
echo "==> The dev clusters run no OLM: the OperatorPolicy says so (NonCompliant, never a silent Compliant)"
wait_for "$OP_POLICY NonCompliant on cluster1" policy_state "$OP_POLICY" cluster1 NonCompliant
"$FLOTILLA" get policies -n "$NS" --clusters --kubeconfig "$HUB"
"$FLOTILLA" describe policy "$CERT_POLICY" -n "$NS" --kubeconfig "$HUB"
"$FLOTILLA" describe policy "$OP_POLICY" -n "$NS" --kubeconfig "$HUB"
echo "==> On cluster1, the CertificatePolicy lists the certificate with its reason and expiry:"
spoke cluster1 -n cluster1 get certificatepolicies.policy.open-cluster-management.io web-certificates -o jsonpath='{.status.compliancyDetails.demo-certs.message}'
