#!/usr/bin/env bash
# Builds upstream OCM binaries from source for the interop suite (make interop) and for
# comparisons (make bench-compare). Nothing here is copied into Flotilla: the sources are
# checked out into the git-ignored folder .upstream/ and built with their own vendor tree.
#
#   hack/upstream-build.sh            build (or reuse) and print the bin directory
#
# Sources (a git URL or a local git directory; a bare mirror works):
#   OCM_GIT         default https://github.com/open-cluster-management-io/ocm.git
#   CLUSTERADM_GIT  default https://github.com/open-cluster-management-io/clusteradm.git
#   CPC_GIT         default https://github.com/open-cluster-management-io/config-policy-controller.git
#   OCM_REF, CLUSTERADM_REF   commit, tag or branch to build (default: the source's HEAD)
#   CPC_REF         default ecf24b4086f374d9a8788557b9c46b29cf1fdfd1 (main of 2026-08-11, the
#                   commit docs/benchmarks.md's policy figures were measured with)
#
# config-policy-controller does not commit a vendor tree: its modules are vendored into the
# checkout with `go mod vendor` (through GOPROXY) before the same `go build -mod=vendor`.
#   UPSTREAM_DIR    default <repo>/.upstream
#
# Layout, cached by commit (a commit already built is never rebuilt):
#   $UPSTREAM_DIR/git/<name>.git              bare clones
#   $UPSTREAM_DIR/build/<name>-<commit>/bin/  the binaries of that commit
#   $UPSTREAM_DIR/bin -> the binaries of the commits last built (registration, work,
#                        placement, clusteradm, config-policy-controller) and
#                        $UPSTREAM_DIR/bin/COMMITS
# Builds run one at a time (they are heavy); when `slot` is on PATH each holds a CPU slot.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${UPSTREAM_DIR:-$root/.upstream}
mkdir -p "$dir/git" "$dir/build"
run() { if command -v slot >/dev/null; then slot "$@"; else "$@"; fi; }

# resolve NAME URL REF -> prints the commit, after fetching the source when needed.
resolve() {
	local name=$1 url=$2 ref=$3 git=$dir/git/$1.git
	if [ ! -d "$git" ]; then
		git clone --quiet --bare "$url" "$git" >&2
	elif [ "${UPSTREAM_FETCH:-1}" = 1 ]; then
		git --git-dir="$git" fetch --quiet "$url" '+refs/heads/*:refs/heads/*' '+refs/tags/*:refs/tags/*' >&2 || \
			echo "upstream-build: fetching $url failed; using the commits already fetched" >&2
	fi
	git --git-dir="$git" rev-parse --verify "$ref^{commit}"
}

# build NAME COMMIT PKG... : go build -mod=vendor each main package into build/NAME-COMMIT/bin.
build() {
	local name=$1 commit=$2; shift 2
	local out=$dir/build/$name-$commit
	if [ -f "$out/bin/.done" ]; then echo "upstream-build: $name $commit cached" >&2; return; fi
	rm -rf "$out"; mkdir -p "$out/src" "$out/bin"
	git --git-dir="$dir/git/$name.git" archive "$commit" | tar -x -C "$out/src"
	if [ ! -d "$out/src/vendor" ]; then
		echo "upstream-build: $name $commit has no vendor tree: go mod vendor" >&2
		(cd "$out/src" && GOFLAGS=-mod=mod GOTOOLCHAIN=local run go mod vendor)
	fi
	for pkg in "$@"; do
		echo "upstream-build: $name $commit: go build -mod=vendor $pkg" >&2
		(cd "$out/src" && CGO_ENABLED=0 GOFLAGS=-mod=vendor GOTOOLCHAIN=local \
			run go build -trimpath -o "$out/bin/" "$pkg")
	done
	rm -rf "$out/src"
	touch "$out/bin/.done"
}

ocm=$(resolve ocm "${OCM_GIT:-https://github.com/open-cluster-management-io/ocm.git}" "${OCM_REF:-HEAD}")
adm=$(resolve clusteradm "${CLUSTERADM_GIT:-https://github.com/open-cluster-management-io/clusteradm.git}" "${CLUSTERADM_REF:-HEAD}")
cpc=$(resolve config-policy-controller "${CPC_GIT:-https://github.com/open-cluster-management-io/config-policy-controller.git}" "${CPC_REF:-ecf24b4086f374d9a8788557b9c46b29cf1fdfd1}")
build ocm "$ocm" ./cmd/registration ./cmd/work ./cmd/placement
build clusteradm "$adm" ./cmd/clusteradm
build config-policy-controller "$cpc" .

rm -rf "$dir/bin.new"; mkdir -p "$dir/bin.new"
for b in registration work placement; do ln -s "../build/ocm-$ocm/bin/$b" "$dir/bin.new/$b"; done
ln -s "../build/clusteradm-$adm/bin/clusteradm" "$dir/bin.new/clusteradm"
ln -s "../build/config-policy-controller-$cpc/bin/config-policy-controller" "$dir/bin.new/config-policy-controller"
printf 'ocm %s\nclusteradm %s\nconfig-policy-controller %s\n' "$ocm" "$adm" "$cpc" > "$dir/bin.new/COMMITS"
rm -rf "$dir/bin"; mv "$dir/bin.new" "$dir/bin"
echo "$dir/bin"
