#!/usr/bin/env bash
# Records the goldens: upstream's generator output for every case under
# testdata/<group>/<case>/ (want.yaml), or its error (upstream-error.txt) when
# upstream refuses the configuration. Usage:
#   policy/generator/testdata/record.sh /path/to/PolicyGenerator
# where PolicyGenerator is built from open-cluster-management-io/policy-generator-plugin
# (README.md in this folder says which commit). Each case is run as kustomize
# runs the plugin: from the case's directory, with the configuration file's
# name as the argument.
set -euo pipefail
bin=$(realpath "$1")
cd "$(dirname "$0")"
for dir in */*/; do
	dir=${dir%/}
	config=$(grep -l '^kind: PolicyGenerator' "$dir"/*.yaml "$dir"/*.yml 2>/dev/null | head -1 || true)
	[ -n "$config" ] || continue
	rm -f "$dir/want.yaml" "$dir/upstream-error.txt"
	if (cd "$dir" && "$bin" "$(basename "$config")" >want.yaml 2>upstream-error.txt); then
		rm -f "$dir/upstream-error.txt"
		echo "$dir: $(grep -c '^kind:' "$dir/want.yaml") objects"
	else
		rm -f "$dir/want.yaml"
		echo "$dir: upstream refuses it: $(head -c 200 "$dir/upstream-error.txt")"
	fi
done
