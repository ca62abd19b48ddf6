# Flotilla. `make demo` runs the whole system on this machine; `make test` tests it.
# Everything builds from source with Go alone (see README.md).

GO            ?= go
BIN           := $(CURDIR)/bin
CONTROLPLANE  := $(BIN)/controlplane
FLOTILLA      := $(BIN)/flotilla
DATA_DIR      ?= .flotilla
CLUSTERS      ?= 2
# NODES=1: `make demo` gives each cluster a real node (root and Debian packages needed; see README).
NODES         ?=
VERSION       ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
TEST_TIMEOUT  ?= 45m
# Extra `go test` flags; CI passes -count=1 so no result comes from the test cache.
TEST_FLAGS    ?=
# Packages built and tested at once. More than the 2 cores: the end-to-end
# suites spend most of their time waiting on apiservers (a deny watched for
# minutes, leases to expire), and with -p at the core count those waits hold
# back the compiles and links of the other packages.
TEST_P        ?= 4
# Tests and `flotilla dev` find the control-plane binaries here.
export FLOTILLA_CONTROLPLANE_DIR := $(CONTROLPLANE)

.PHONY: all build image controlplane test e2e-nodes fuzz chaos demo demo-down bench lint manifests verify clean interop upstream bench-compare bench-compare-search

all: build

## build: the flotilla binary -> bin/flotilla, and the search agent's slim binary -> bin/flotilla-search-agent (static: the same binaries go into the image)
build:
	CGO_ENABLED=0 $(GO) build -ldflags "-X main.version=$(VERSION)" -o $(FLOTILLA) ./cmd/flotilla
	CGO_ENABLED=0 $(GO) build -o $(BIN)/flotilla-search-agent ./cmd/flotilla-search-agent

# The image's name resolves locally once imported (manifests use imagePullPolicy IfNotPresent).
IMAGE_REGISTRY ?= ghcr.io/flotilla-dev
IMAGE         ?= $(IMAGE_REGISTRY)/flotilla:$(VERSION)
IMAGE_ARCHIVE ?= $(BIN)/flotilla-image.tar

## image: OCI image of bin/flotilla and bin/flotilla-search-agent (FROM scratch, user 65532), no Docker, no registry -> bin/flotilla-image.tar
image: build
	$(GO) run ./hack/image --binary $(FLOTILLA) --ref $(IMAGE) --out $(IMAGE_ARCHIVE)

## controlplane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kubectl from source -> bin/controlplane (cached)
controlplane:
	@hack/build-controlplane.sh $(CONTROLPLANE)

## test: unit and integration tests on real apiservers (builds what it needs first)
test: controlplane build
	@hack/prereqs.sh test
	$(GO) test -p $(TEST_P) $(TEST_FLAGS) -timeout $(TEST_TIMEOUT) ./...

## e2e-nodes: Flotilla on real nodes (needs root and Debian's containerd runc containernetworking-plugins iptables; fails, never skips, without them)
e2e-nodes: controlplane build
	@hack/prereqs.sh nodes
	$(GO) test -tags nodes -count=1 -v -timeout 30m ./test/e2e/nodes/

## fuzz: every native Go fuzz target for FUZZTIME each (failures become testdata/fuzz regression cases)
FUZZTIME ?= 10s
fuzz:
	@hack/fuzz.sh $(FUZZTIME)

## chaos: soak with faults for CHAOS_DURATION (default 30m; CI runs 3m), then the report (docs/reliability.md).
## CHAOS_NODES=1: on real nodes, with hub<->cluster partitions among the faults (root and the nodes' Debian packages)
CHAOS_DURATION ?= 30m
CHAOS_TIMEOUT  ?= 90m
CHAOS_NODES    ?=
chaos: controlplane build
	$(if $(CHAOS_NODES),@hack/prereqs.sh nodes)
	FLOTILLA_CHAOS_NODES=$(CHAOS_NODES) FLOTILLA_CHAOS_DURATION=$(CHAOS_DURATION) $(GO) test -tags chaos -count=1 -v -run '^TestChaos$$' -timeout $(CHAOS_TIMEOUT) ./test/chaos/

## upstream: checks that upstream OCM's registration, work, placement, clusteradm and config-policy-controller, built from their public source outside this tree, are in .upstream/bin (docs/interop.md: which commits)
UPSTREAM_BINARIES := registration work placement clusteradm config-policy-controller
upstream:
	@for b in $(UPSTREAM_BINARIES); do \
		test -x .upstream/bin/$$b || { echo "upstream: .upstream/bin/$$b is missing: build upstream OCM's $(UPSTREAM_BINARIES) from their public source (the commits in docs/interop.md) and put them in .upstream/bin (git-ignored; this repository keeps no recipe for it)" >&2; exit 1; }; \
	done; echo "upstream: $(CURDIR)/.upstream/bin"; cat .upstream/bin/COMMITS 2>/dev/null || true

## interop: upstream OCM binaries against Flotilla, before a release (fetches; not in CI). INTEROP_AVAILABLE_FOR=5m (docs/interop.md)
INTEROP_AVAILABLE_FOR ?= 5m
interop: SHELL := /bin/bash
interop: controlplane upstream
	set -o pipefail; $(GO) test -tags interop -count=1 -v -timeout 60m ./test/interop/ -args -interop.available-for=$(INTEROP_AVAILABLE_FOR) 2>&1 | tee .upstream/interop.log | grep -v '^[IEW][0-9]\{4\} ' 

## bench-compare: the same workloads on Flotilla and on upstream OCM built from source, one run, with ratios (fetches; not in CI). BENCH_COMPARE=placement,work,registration,policy (or placement10k), BENCH_COMPARE_QPS=50: both sides' clients at the same limits (docs/benchmarks.md)
BENCH_COMPARE ?=
BENCH_COMPARE_QPS ?=
bench-compare: controlplane build upstream
	FLOTILLA=$(FLOTILLA) FLOTILLA_UPSTREAM_BIN=$(CURDIR)/.upstream/bin FLOTILLA_COMPARE=$(BENCH_COMPARE) FLOTILLA_COMPARE_QPS=$(BENCH_COMPARE_QPS) \
		$(GO) test -tags compare -count=1 -run '^$$' -bench . -benchtime 1x -timeout 90m ./test/bench/compare/

## bench-compare-search: fleet search side by side with Clusterpedia on 10 clusters (not in CI). FLOTILLA_CLUSTERPEDIA_BIN: a folder with Clusterpedia's apiserver and clustersynchro-manager built from its source (default .clusterpedia/bin), FLOTILLA_CLUSTERPEDIA_CRDS: its deploy/ folder (docs/benchmarks.md)
FLOTILLA_CLUSTERPEDIA_BIN ?= $(CURDIR)/.clusterpedia/bin
bench-compare-search: controlplane build
	FLOTILLA=$(FLOTILLA) FLOTILLA_COMPARE=search FLOTILLA_CLUSTERPEDIA_BIN=$(FLOTILLA_CLUSTERPEDIA_BIN) FLOTILLA_CLUSTERPEDIA_CRDS=$(FLOTILLA_CLUSTERPEDIA_CRDS) \
		$(GO) test -tags compare -count=1 -run '^$$' -bench . -benchtime 1x -timeout 60m ./test/bench/compare/

## demo: build, start the local default, run the scripted demo; leaves it running
demo: controlplane build
	@FLOTILLA=$(FLOTILLA) DATA_DIR=$(DATA_DIR) CLUSTERS=$(CLUSTERS) NODES=$(NODES) hack/demo.sh

## demo-down: stop what `make demo` started
demo-down:
	@$(FLOTILLA) dev down --data-dir $(DATA_DIR)

## bench: benchmarks (results and how to reproduce them: docs/benchmarks.md)
bench: controlplane build
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./test/bench/...

## lint: gofmt and go vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags nodes ./test/e2e/nodes/ ./test/bench/nodes/
	$(GO) vet -tags chaos ./test/chaos/
	$(GO) vet -tags interop ./test/interop/
	$(GO) vet -tags compare ./test/bench/compare/

## manifests: copy the OCM CRDs from the pinned api module into manifests/crds
manifests:
	@hack/manifests.sh
	@hack/generate-policy-crds.sh

## verify: fail when go.mod/go.sum are not tidy, manifests/crds drift from the api module version in go.mod, or a package breaks the rooms' import rule (hack/imports.sh, docs/structure.md)
verify:
	@hack/gomod-tidy.sh --verify
	@hack/imports.sh
	@hack/manifests.sh --verify
	@hack/generate-policy-crds.sh --verify

clean:
	rm -rf $(FLOTILLA)
