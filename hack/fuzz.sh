#!/usr/bin/env bash
# Runs every native Go fuzz target (func FuzzXxx in a _test.go file) for
# FUZZTIME each (default 10s). Inputs that once failed are kept as regression
# cases in the package's testdata/fuzz/<target>/ and run by every `go test`.
#
# Usage: hack/fuzz.sh [FUZZTIME]
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-${FUZZTIME:-10s}}
targets=$(git ls-files '*_test.go' | xargs grep -l '^func Fuzz' | sort)
count=0
start=$(date +%s)
for file in $targets; do
	pkg=./$(dirname "$file")
	for name in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | cut -d' ' -f2); do
		echo "fuzz: $pkg $name for $fuzztime"
		go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"
		count=$((count + 1))
	done
done
echo "fuzz: $count targets, no failure, in $(( $(date +%s) - start ))s"
