#!/usr/bin/env bash
# The scripted demo behind `make demo`: starts the local default, then runs every
# step in hack/demo.d/ in order. Each capability adds its own step there. The
# environment is left running at the end.
#
# Environment: FLOTILLA (the binary, default bin/flotilla), DATA_DIR (default
# .flotilla), CLUSTERS (default 2), NODES (1: real nodes, klusterlets as Pods;
# needs root and Debian's containerd runc containernetworking-plugins iptables).
set -euo pipefail
cd "$(dirname "$0")/.."

FLOTILLA=$(cd "$(dirname "${FLOTILLA:-bin/flotilla}")" && pwd)/$(basename "${FLOTILLA:-bin/flotilla}")
DATA_DIR=${DATA_DIR:-.flotilla}
CLUSTERS=${CLUSTERS:-2}
NODES=${NODES:-}
export FLOTILLA DATA_DIR CLUSTERS NODES
# kubectl: the machine's, else the one `make controlplane` built from source.
export PATH="$PATH:$(pwd)/${CONTROLPLANE_DIR:-bin/controlplane}"

nodes=()
what="a hub and $CLUSTERS managed clusters"
if [ -n "$NODES" ] && [ "$NODES" != 0 ]; then
	nodes=(--nodes)
	what="$what, each with a real node running its klusterlet as a Pod"
fi
echo "==> Starting Flotilla's local default: $what (data in $DATA_DIR)"
"$FLOTILLA" dev up --clusters "$CLUSTERS" --data-dir "$DATA_DIR" "${nodes[@]}"
if [ ${#nodes[@]} -gt 0 ]; then
	for c in $(seq 1 "$CLUSTERS"); do
		echo "==> cluster$c: nodes and the klusterlet Pod"
		kubectl --kubeconfig "$DATA_DIR/clusters/cluster$c.kubeconfig" get nodes -o wide 2>/dev/null || true
		kubectl --kubeconfig "$DATA_DIR/clusters/cluster$c.kubeconfig" -n open-cluster-management-agent get pods -o wide 2>/dev/null || true
	done
fi

for step in hack/demo.d/[0-9]*.sh; do
	[ -e "$step" ] || continue
	echo
	echo "==> Demo step $(basename "$step" .sh)"
	bash "$step"
done

cat <<MSG

==> Demo complete. Flotilla is still running in $DATA_DIR:
      $FLOTILLA dev status --data-dir $DATA_DIR
      $FLOTILLA get clusters --kubeconfig $DATA_DIR/hub.kubeconfig
    Stop it with:  make demo-down   (or: $FLOTILLA dev down --data-dir $DATA_DIR)
MSG
