#!/usr/bin/env bash
# The import rule of the module's rooms (docs/structure.md). Fails, naming each
# offending package and import, when:
#
#   - a klusterlet/ package imports hub/ (the agent runs on a managed cluster:
#     what it shares with the hub is wire, and wire lives in api/ or internal/);
#   - a hub/ package imports klusterlet/ (the other way round), or a hub library
#     (hub/<anything>) imports addons/ (addons are built on the hub, not under it);
#   - a policy/ package imports addons/ (the governance addon delivers policy,
#     policy does not know its delivery) or hub/, or a hub library imports
#     policy/ (the domains sit side by side; the hub process assembles them);
#   - a search/ package (fleet search: index, API, agent) imports addons/,
#     hub/, policy/ or klusterlet/, or one of those (but the hub process and
#     addons/) imports search/: a domain beside the others;
#   - an internal/ package imports an upper room: hub/, klusterlet/, addons/,
#     policy/, devenv/, cmd/, hack/ or test/ (internal/ is the ground floor).
#
# Exempt, non-test code:
#   - the package flotilla.dev/flotilla/hub itself (not its subpackages) may import
#     addons/: it is the hub process, the assembly that starts the hub libraries,
#     the policy controllers and the addon manager (addons.Setup) in one manager.
#     That is why its layer below (hubproc) sits above addons.
#
# _test files (.TestImports, .XTestImports) follow the same rule, except:
#   - hub/deploy tests may import policy/compliance/apigroup: they check
#     that the hub's ClusterRole holds every right the compliance API's
#     resources need;
#   - policy/propagator tests may import hub/placement: the propagator follows
#     the decisions the real placement controller writes;
#   - any test may import test/testenv: the shared test control plane (it imports
#     only internal/controlplane and manifests, nothing of the rooms);
#   - hub/registration/{accept,cluster} tests may import klusterlet/registration:
#     they run the real agent against the hub's registration controllers;
#   - klusterlet/registration tests may import hub/registration/csr: they have
#     the agent's CSRs approved and signed as the hub does.
# Every other test import is checked, so a new arrow of that kind fails.
#
# With --count, prints instead the number of import arrows (non-test: distinct
# package -> imported package pairs) that climb back up a layer, with layers
#
#   0 wire     api/..., manifests        (types and embedded manifests; import nothing here)
#   1 ground   internal/...
#   2 domains  hub/<sub>..., klusterlet/..., policy/..., search/...   (side by side)
#   3 addons   addons/...
#   4 hubproc  hub (the package itself: the hub process, see above)
#   5 devenv   devenv/...
#   6 apps     cmd/..., hack/..., test/...
#
# An arrow from layer a to layer b climbs when b > a. --count -v lists them.
# This is the order the tree shows: api imports nothing of the module and
# internal/scheme registers api's types, so api is below internal; the hub
# process imports addons, so it sits above them.
#
# With --pairs, prints the rooms that import each other both ways (non-test),
# one pair a line with an arrow each way as its witness: the domains on one
# floor are side by side, so a climbing count of 0 can still hide a two-way
# pair there. Rooms are the top folders, with the hub process (the package hub)
# apart from the hub libraries (hub/...).
#
# go list sees the default build: the files behind build tags (nodes, chaos,
# interop, compare) are all under test/, which the rule does not constrain.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

mod=$(go list -m)
count=false
pairs=false
verbose=false
for a in "$@"; do
	case "$a" in
	--count) count=true ;;
	--pairs) pairs=true ;;
	-v) verbose=true ;;
	*) echo "usage: $0 [--count [-v] | --pairs]" >&2; exit 2 ;;
	esac
done

# rel strips the module path: flotilla.dev/flotilla/hub/work -> hub/work.
rel() {
	local p=$1
	if [ "$p" = "$mod" ]; then echo "."; else echo "${p#"$mod"/}"; fi
}

layer() {
	case "$1" in
	api | api/* | manifests | manifests/*) echo 0 ;;
	internal | internal/*) echo 1 ;;
	hub) echo 4 ;;
	hub/* | klusterlet | klusterlet/* | policy | policy/* | search | search/*) echo 2 ;;
	addons | addons/*) echo 3 ;;
	devenv | devenv/*) echo 5 ;;
	*) echo 6 ;;
	esac
}

# room: the top folder; the package hub itself is the room "hub (process)".
room() {
	case "$1" in
	hub) echo "hub(process)" ;;
	*) echo "${1%%/*}" ;;
	esac
}

# forbidden PKG IMPORT: prints the reason when the arrow breaks the rule.
forbidden() {
	local p=$1 i=$2
	case "$p" in
	klusterlet | klusterlet/*)
		case "$i" in
		hub | hub/*) echo "the klusterlet imports no hub package" ;;
		search | search/*) echo "the klusterlet imports no search package" ;;
		esac ;;
	hub | hub/*)
		case "$i" in
		klusterlet | klusterlet/*) echo "the hub imports no klusterlet package" ;;
		addons | addons/*) [ "$p" != hub ] && echo "hub libraries import no addons package" ;;
		policy | policy/*) [ "$p" != hub ] && echo "hub libraries import no policy package" ;;
		search | search/*) [ "$p" != hub ] && echo "hub libraries import no search package" ;;
		esac ;;
	policy | policy/*)
		case "$i" in
		addons | addons/*) echo "policy imports no addons package" ;;
		hub | hub/*) echo "policy imports no hub package" ;;
		search | search/*) echo "policy imports no search package" ;;
		esac ;;
	search | search/*)
		case "$i" in
		addons | addons/*) echo "search imports no addons package" ;;
		hub | hub/*) echo "search imports no hub package" ;;
		policy | policy/*) echo "search imports no policy package" ;;
		klusterlet | klusterlet/*) echo "search imports no klusterlet package" ;;
		esac ;;
	internal | internal/*)
		case "$i" in
		hub | hub/* | klusterlet | klusterlet/* | addons | addons/* | policy | policy/* | search | search/* | devenv | devenv/* | cmd | cmd/* | hack | hack/* | test | test/*)
			echo "internal/ imports no upper room" ;;
		esac ;;
	esac
	return 0
}

# exemptTest PKG IMPORT: true when a _test import may break the rule (see above).
exemptTest() {
	local p=$1 i=$2
	case "$i" in test/testenv) return 0 ;; esac
	case "$p:$i" in
	hub/registration/accept:klusterlet/registration | hub/registration/cluster:klusterlet/registration) return 0 ;;
	klusterlet/registration:hub/registration/csr) return 0 ;;
	hub/deploy:policy/compliance/apigroup) return 0 ;;
	policy/propagator:hub/placement) return 0 ;;
	esac
	return 1
}

# arrows prints "kind pkg import" for every in-module import (kind: src or test).
arrows() {
	go list -f '{{.ImportPath}} src {{join .Imports " "}}
{{.ImportPath}} test {{join .TestImports " "}} {{join .XTestImports " "}}' ./... |
		while read -r p kind imps; do
			for i in $imps; do
				case "$i" in "$mod" | "$mod"/*) ;; *) continue ;; esac
				[ "$i" = "$p" ] && continue # an external test package importing its own package
				echo "$kind $(rel "$p") $(rel "$i")"
			done
		done | sort -u
}

all=$(arrows)

if $count; then
	n=0
	while read -r kind p i; do
		[ "$kind" = src ] || continue
		lp=$(layer "$p") li=$(layer "$i")
		if [ "$li" -gt "$lp" ]; then
			n=$((n + 1))
			$verbose && echo "  $p ($lp) -> $i ($li)"
		fi
	done <<<"$all"
	echo "$n"
	exit 0
fi

if $pairs; then
	declare -A witness=()
	while read -r kind p i; do
		[ "$kind" = src ] || continue
		rp=$(room "$p") ri=$(room "$i")
		[ "$rp" = "$ri" ] && continue
		[ -n "${witness["$rp $ri"]:-}" ] || witness["$rp $ri"]="$p -> $i"
	done <<<"$all"
	for k in "${!witness[@]}"; do
		read -r a b <<<"$k"
		[[ "$a" < "$b" ]] || continue
		[ -n "${witness["$b $a"]:-}" ] || continue
		echo "$a <-> $b   (${witness["$a $b"]}; ${witness["$b $a"]})"
	done | sort
	exit 0
fi

bad=0
while read -r kind p i; do
	[ -n "$p" ] || continue
	why=$(forbidden "$p" "$i")
	[ -n "$why" ] || continue
	if [ "$kind" = test ] && exemptTest "$p" "$i"; then
		continue
	fi
	what=$p
	[ "$kind" = test ] && what="$p (tests)"
	echo "imports: $what imports $i: $why" >&2
	bad=1
done <<<"$all"
if [ "$bad" -ne 0 ]; then
	echo "imports: the rule is in hack/imports.sh and docs/structure.md" >&2
	exit 1
fi
echo "imports: every package keeps the rooms' import rule"
