#!/usr/bin/env bash
# Tidies go.mod and go.sum of the main module (`go mod tidy`). With --verify,
# changes nothing and fails, showing the difference, when they are not tidy.
#
# Tidy never upgrades here: every module it needs is pinned in go.mod and go.sum,
# so it asks the proxy for no version list and no @latest (which the proxy refuses
# for open-cluster-management.io/*). It does download more than `go build`: the
# modules that only the tests of our dependencies import (about 80, 40 MiB), whose
# checksums go.sum holds, so no checksum database is asked either.
# hack/tools is a module of its own and is not checked here.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if [ "${1:-}" != "--verify" ]; then
	exec go mod tidy
fi

rc=0
diff=$(go mod tidy -diff) || rc=$?
if [ "$rc" -ne 0 ] && [ -z "$diff" ]; then
	echo "gomod: 'go mod tidy -diff' failed (exit $rc; its errors are above), so whether go.mod is tidy is unknown" >&2
	exit "$rc"
fi
if [ -n "$diff" ]; then
	echo "go.mod or go.sum is not tidy; run 'go mod tidy' (or hack/gomod-tidy.sh) and commit the result:" >&2
	echo "$diff" >&2
	exit 1
fi
echo "gomod: go.mod and go.sum are tidy"
