#!/usr/bin/env bash
# Builds the control-plane binaries Flotilla's local default and tests run on:
# kube-apiserver, kube-controller-manager and kube-scheduler (k8s.io/kubernetes
# v1.35.0), the kubelet of the nodes of `flotilla dev up --nodes`, kubectl (the
# demo uses it where the machine has none), and etcd
# (v3.6.5), compiled from source through the Go module proxy. Nothing prebuilt is
# downloaded. A binary is rebuilt only when missing or built for another version;
# the Go build cache makes later builds on the same machine fast.
#
# Usage: hack/build-controlplane.sh [OUT_DIR]   (default bin/controlplane)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/bin/controlplane}
mkdir -p "$out"
out=$(cd "$out" && pwd)

KUBE_VERSION=v1.35.0
ETCD_VERSION=v3.6.5

# stamp NAME VERSION: true when OUT/NAME exists and was built for VERSION.
fresh() { [ -x "$out/$1" ] && [ "$(cat "$out/.$1.version" 2>/dev/null)" = "$2" ]; }
stamp() { echo "$2" > "$out/.$1.version"; }

build() { # build NAME VERSION MODULE_DIR PACKAGE LDFLAGS
	local name=$1 version=$2 dir=$3 pkg=$4 ldflags=$5 start
	if fresh "$name" "$version"; then
		echo "controlplane: $name $version already built ($out/$name)"
		return
	fi
	echo "controlplane: building $name $version from source (first build takes several minutes)..."
	start=$(date +%s)
	(cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/$name" "$pkg")
	stamp "$name" "$version"
	echo "controlplane: built $name in $(( $(date +%s) - start ))s"
}

kv="k8s.io/component-base/version"
cv="k8s.io/client-go/pkg/version"
minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
kube_ldflags="-s -w"
for p in $kv $cv; do
	kube_ldflags+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done

build etcd "$ETCD_VERSION" "$root/hack/controlplane/etcd" go.etcd.io/etcd/server/v3 "-s -w"
build kube-apiserver "$KUBE_VERSION" "$root/hack/controlplane/kube" k8s.io/kubernetes/cmd/kube-apiserver "$kube_ldflags"
build kube-controller-manager "$KUBE_VERSION" "$root/hack/controlplane/kube" k8s.io/kubernetes/cmd/kube-controller-manager "$kube_ldflags"
build kube-scheduler "$KUBE_VERSION" "$root/hack/controlplane/kube" k8s.io/kubernetes/cmd/kube-scheduler "$kube_ldflags"
build kubelet "$KUBE_VERSION" "$root/hack/controlplane/kube" k8s.io/kubernetes/cmd/kubelet "$kube_ldflags"
build kubectl "$KUBE_VERSION" "$root/hack/controlplane/kube" k8s.io/kubernetes/cmd/kubectl "$kube_ldflags"
echo "controlplane: ready in $out"
