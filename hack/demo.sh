#!/usr/bin/env bash
# The scripted demo behind `make demo`: starts the local default, then runs every
# step in hack/demo.d/ in order. Each capability adds its own step there. The
# environment is left running at the end.
#
# Environment: FLOTILLA (the binary, default bin/flotilla), DATA_DIR (default
# .flotilla), CLUSTERS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."

FLOTILLA=$(cd "$(dirname "${FLOTILLA:-bin/flotilla}")" && pwd)/$(basename "${FLOTILLA:-bin/flotilla}")
DATA_DIR=${DATA_DIR:-.flotilla}
CLUSTERS=${CLUSTERS:-2}
export FLOTILLA DATA_DIR CLUSTERS

echo "==> Starting Flotilla's local default: a hub and $CLUSTERS managed clusters (data in $DATA_DIR)"
"$FLOTILLA" dev up --clusters "$CLUSTERS" --data-dir "$DATA_DIR"

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
