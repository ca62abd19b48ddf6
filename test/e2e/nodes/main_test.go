//go:build nodes

// Package nodes_test runs Flotilla as users deploy it, on real nodes of this
// machine: `flotilla dev up --nodes` gives each managed cluster a node
// (containerd, kubelet), the klusterlet runs as a Pod from the locally built
// image, and `dev down` must leave the host as it found it. It needs root and
// Debian's containerd, runc, containernetworking-plugins, iptables and
// postgresql (the compliance history's server); without them it fails (never
// skips) and says what is missing. Run it with
// `make e2e-nodes`.
package nodes_test

import (
	"fmt"
	"os"
	"testing"

	"flotilla.dev/flotilla/devenv/node"
	"flotilla.dev/flotilla/internal/controlplane"
	"flotilla.dev/flotilla/internal/pgtest"
	"flotilla.dev/flotilla/test/testenv"
)

var flotilla string

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	bins, err := controlplane.FindBinaries("")
	if err == nil {
		err = node.Check(bins.Kubelet, bins.Scheduler)
	}
	if err == nil {
		// TestComplianceHistoryFailover's throwaway PostgreSQL.
		_, err = pgtest.BinDir()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: make e2e-nodes cannot run here:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "flotilla-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// Static, like `make build`: these very binaries go into the nodes' image.
	if flotilla, err = testenv.BuildFlotilla(dir, "-ldflags", "-X main.version=e2e"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
