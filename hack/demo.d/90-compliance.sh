#!/usr/bin/env bash
# Demo step: the compliance report. Two more policy-collection-style NIST
# policies in the hub's default namespace, bound to a Placement of both
# clusters: CM-8 (the namespace default exists: Compliant) and SC-28 (an
# encryption ConfigMap that no cluster has: NonCompliant on purpose, inform
# only). Then the report in the terminal by standard, family and control, the
# history the hub recorded, report.html, and the live page's URL. Only flotilla
# verbs: no kubectl needed.
set -euo pipefail
HUB="$DATA_DIR/hub.kubeconfig"
TIMEOUT=${COMPLIANCE_DEMO_TIMEOUT:-180}
NS=default
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
wait_for() { # wait_for <what> <command...>: until the command succeeds
	local what=$1
	shift
	for _ in $(seq 1 "$TIMEOUT"); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 1
	done
	echo "$what: not after ${TIMEOUT}s (logs in $DATA_DIR/logs)" >&2
	"$FLOTILLA" get policies -n "$NS" --clusters --kubeconfig "$HUB" >&2 || true
	exit 1
}
available() {
	[ "$("$FLOTILLA" get addon --kubeconfig "$HUB" | grep -Ec '^(governance-policy-framework|config-policy-controller) +cluster[12] +True ')" = 4 ]
}
cluster_state() { # cluster_state <policy> <cluster> <state>
	grep -Eq "^$NS +$1 +$2 +$3\$" <<<"$("$FLOTILLA" get policies -n "$NS" --clusters --kubeconfig "$HUB")"
}

if ! available; then
	echo "==> flotilla addon enable --names governance-policy-framework,config-policy-controller --clusters cluster1,cluster2"
	"$FLOTILLA" addon enable --names governance-policy-framework,config-policy-controller --clusters cluster1,cluster2 --kubeconfig "$HUB"
	wait_for "governance addons Available" available
fi

echo "==> A Placement of both clusters in namespace $NS"
"$FLOTILLA" clusterset bind global -n "$NS" --kubeconfig "$HUB"
if ! grep -Eq "^$NS +all " <<<"$("$FLOTILLA" get placements -n "$NS" --kubeconfig "$HUB")"; then
	"$FLOTILLA" create placement all -n "$NS" --clusterset global --kubeconfig "$HUB"
fi

cat >"$work/inventory.yaml" <<'YAML'
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata:
  name: inventory-default-namespace
spec:
  remediationAction: inform
  severity: low
  object-templates:
    - complianceType: musthave
      objectDefinition:
        apiVersion: v1
        kind: Namespace
        metadata:
          name: default
YAML
cat >"$work/encryption.yaml" <<'YAML'
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata:
  name: encryption-at-rest-config
spec:
  remediationAction: inform
  severity: high
  object-templates:
    - complianceType: musthave
      objectDefinition:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: encryption-at-rest
          namespace: kube-system
        data:
          provider: aescbc
YAML
create() { # create <name> <file> <categories> <controls>
	if grep -Eq "^$NS +$1 " <<<"$("$FLOTILLA" get policies -n "$NS" --kubeconfig "$HUB")"; then
		echo "==> $NS/$1 exists (demo run before)"
		return
	fi
	echo "==> flotilla create policy $1 (NIST SP 800-53, $4)"
	"$FLOTILLA" create policy "$1" -n "$NS" -f "$2" --remediation-action inform \
		--standards "NIST SP 800-53" --categories "$3" --controls "$4" --placement all --kubeconfig "$HUB"
}
create policy-component-inventory "$work/inventory.yaml" "CM Configuration Management" "CM-8 System Component Inventory"
create policy-encryption-at-rest "$work/encryption.yaml" "SC System and Communications Protection" "SC-28 Protection of Information at Rest"

echo "==> Waiting for both clusters to report: CM-8 Compliant, SC-28 NonCompliant (on purpose: inform only)"
for c in cluster1 cluster2; do
	wait_for "policy-component-inventory Compliant on $c" cluster_state policy-component-inventory "$c" Compliant
	wait_for "policy-encryption-at-rest NonCompliant on $c" cluster_state policy-encryption-at-rest "$c" NonCompliant
done

# The hub records the history in <data dir>/hub/compliance.db (flotilla dev up
# passes --data-dir) and serves it, with the report, as the aggregated API
# compliance.flotilla.dev: the commands below read it through the hub
# apiserver with the kubeconfig alone (--compliance-db would read the file).
api_available() { "$FLOTILLA" compliance history --since 1m --kubeconfig "$HUB" >/dev/null 2>&1; }
wait_for "the hub's APIService v1alpha1.compliance.flotilla.dev Available" api_available
echo
echo "==> flotilla compliance report --since 1d"
"$FLOTILLA" compliance report --since 1d --baseline moderate --kubeconfig "$HUB"
echo
echo "==> flotilla compliance history --since 1d"
"$FLOTILLA" compliance history --since 1d --kubeconfig "$HUB"
GOV=policies/policy-baseline-namespace
if grep -Eq "^policies +policy-baseline-namespace " <<<"$("$FLOTILLA" get policies -n policies --kubeconfig "$HUB" 2>/dev/null)"; then
	echo
	echo "==> flotilla compliance history --policy $GOV --since 1d (the governance step: NonCompliant on cluster2, then enforced)"
	out=$("$FLOTILLA" compliance history --policy "$GOV" --since 1d --kubeconfig "$HUB")
	echo "$out"
	# Within the same second or not, the remediation reads as one: the
	# newest change on cluster2 is to Compliant.
	# The changes table (from its TIME header to the blank line): its last
	# row of cluster2, column TO.
	last=$(awk '/^TIME /{t=1; next} /^$/{t=0} t && / cluster2 /{s=$NF} END{print s}' <<<"$out")
	if [ "$last" != Compliant ]; then
		echo "the history of $GOV on cluster2 ends $last, not Compliant as the cluster is" >&2
		exit 1
	fi
fi
echo
echo "==> flotilla compliance verify (the history's hash chain and head, through the hub)"
"$FLOTILLA" compliance verify --kubeconfig "$HUB"
echo
echo "==> flotilla compliance report --by cluster"
"$FLOTILLA" compliance report --by cluster --kubeconfig "$HUB"

REPORT="$DATA_DIR/report.html"
"$FLOTILLA" compliance report --since 7d -o html --kubeconfig "$HUB" >"$REPORT"
url=$(grep -o 'compliance report served.*' "$DATA_DIR/logs/hub.log" 2>/dev/null | tail -1 | grep -o 'url="[^"]*"' | cut -d'"' -f2 || true)
echo
echo "==> The report as one self-contained page: $(cd "$(dirname "$REPORT")" && pwd)/$(basename "$REPORT")"
if [ -n "$url" ]; then
	echo "==> Live on the hub: $url (JSON: ${url%/compliance}/api/compliance)"
	echo "    It asks for a bearer token the hub apiserver accepts (a ServiceAccount token, say);"
	echo "    you see the policies of the namespaces you may list."
else
	echo "==> Live on the hub at https://<hub webhook address>/compliance (see \"compliance report served\" in $DATA_DIR/logs/hub.log)"
fi
echo "==> With any kubeconfig for the hub, as its user: kubectl get --raw '/apis/compliance.flotilla.dev/v1alpha1/reports?since=7d'"
echo "    (and .../histories?cluster=cluster1; docs/compliance.md, \"The aggregated API\")"
