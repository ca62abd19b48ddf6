package node

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckSaysWhatIsMissing(t *testing.T) {
	all := func(string) bool { return true }
	none := func(string) bool { return false }
	ready := machine{euid: 0, hasProg: all, hasFile: all, kubelet: "/bin/kubelet", schedule: "/bin/kube-scheduler"}
	require.NoError(t, checkWith(ready))

	bare := machine{euid: 1000, hasProg: none, hasFile: none}
	err := checkWith(bare)
	require.Error(t, err)
	for _, want := range []string{"root", "containerd (package containerd)", "runc (package runc)", "iptables (package iptables)",
		"/usr/lib/cni/bridge (package containernetworking-plugins)", "kubelet v1.35.0", "kube-scheduler", "make controlplane", AptInstall} {
		assert.Contains(t, err.Error(), want)
	}

	noCNI := ready
	noCNI.hasFile = func(p string) bool { return p == "/sys/fs/cgroup" }
	err = checkWith(noCNI)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "host-local")
	assert.NotContains(t, err.Error(), "root (")
}
