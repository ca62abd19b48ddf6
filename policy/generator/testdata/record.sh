#!/usr/bin/env bash
# Records the goldens: upstream's generator output for every case under
# testdata/<group>/<case>/ (want.yaml), or its error (upstream-error.txt) when
# upstream refuses the configuration. Usage:
#   policy/generator/testdata/record.sh /path/to/PolicyGenerator [/path/to/kbuild]
# With kbuild (krusty's `kustomize build --enable-alpha-plugins DIR`, README.md),
# a case with a kustomization also gets want-kustomize.yaml: the build with
# upstream's generator installed as kustomize's exec plugin.
# where PolicyGenerator is built from open-cluster-management-io/policy-generator-plugin
# (README.md in this folder says which commit). Each case is run as kustomize
# runs the plugin: from the case's directory, with the configuration file's
# name as the argument.
set -euo pipefail
bin=$(realpath "$1")
kbuild=${2:+$(realpath "$2")}
plugins=$(mktemp -d)
trap 'rm -rf "$plugins"' EXIT
mkdir -p "$plugins/kustomize/plugin/policy.open-cluster-management.io/v1/policygenerator"
cp "$bin" "$plugins/kustomize/plugin/policy.open-cluster-management.io/v1/policygenerator/PolicyGenerator"
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
	if [ -n "$kbuild" ] && ls "$dir"/kustomization.y*ml >/dev/null 2>&1; then
		(cd "$dir" && XDG_CONFIG_HOME=$plugins "$kbuild" . >want-kustomize.yaml)
		echo "$dir: kustomize build: $(grep -c '^kind:' "$dir/want-kustomize.yaml") objects"
	fi
done
