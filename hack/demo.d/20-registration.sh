#!/usr/bin/env bash
# Registration: `flotilla dev up` registered every cluster through the real path
# (init token -> join -> klusterlet CSR -> accept). Show the result and the guards.
set -euo pipefail
HUB="$DATA_DIR/hub.kubeconfig"
SPOKE="$DATA_DIR/clusters/cluster1.kubeconfig"
HUB_URL=$(sed -n 's/^ *server: *//p' "$HUB" | head -1)

echo "==> Managed clusters (joined with a bootstrap token, a CSR and flotilla accept)"
"$FLOTILLA" get clusters --kubeconfig "$HUB"

echo "==> Accepting an accepted cluster says so and succeeds"
"$FLOTILLA" accept --clusters cluster1 --kubeconfig "$HUB"

echo "==> A new bootstrap token (TokenRequest, 10 minutes) and the join command (token redacted)"
"$FLOTILLA" get token --kubeconfig "$HUB" --token-ttl 10m | sed -E 's/(--hub-token )[^ ]+/\1<token>/'

echo "==> A wrong token is refused before anything is written to the managed cluster"
if "$FLOTILLA" join --hub-token not-a-token --hub-apiserver "$HUB_URL" --cluster-name demo-bad --kubeconfig "$SPOKE" 2>&1; then
	echo "join with a wrong token succeeded: that is a bug" >&2
	exit 1
fi

echo "==> A cluster name that is not a DNS label is refused"
if "$FLOTILLA" join --hub-token not-a-token --hub-apiserver "$HUB_URL" --cluster-name Bad_Name --kubeconfig "$SPOKE" 2>&1; then
	echo "join with a bad name succeeded: that is a bug" >&2
	exit 1
fi

echo "==> Registration is done; each cluster's agent holds a certificate for system:open-cluster-management:<cluster>:<agent>"
