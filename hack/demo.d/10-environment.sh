#!/usr/bin/env bash
# Demo step: what the local default runs.
set -euo pipefail
echo "==> Every hub and managed cluster is a real etcd + kube-apiserver + kube-controller-manager, built from source:"
"$FLOTILLA" dev status --data-dir "$DATA_DIR"
