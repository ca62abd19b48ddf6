package node

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// AptInstall is the command that installs what nodes need on Debian or Ubuntu.
const AptInstall = "apt-get update && apt-get install -y containerd runc containernetworking-plugins iptables"

// Check says what this machine lacks to run nodes: root, the Debian packages'
// programs, the kubelet and kube-scheduler built from source. nil when nothing.
func Check(kubelet, scheduler string) error {
	return checkWith(machine{
		euid:     os.Geteuid(),
		hasProg:  func(p string) bool { _, err := exec.LookPath(p); return err == nil },
		hasFile:  func(p string) bool { _, err := os.Stat(p); return err == nil },
		kubelet:  kubelet,
		schedule: scheduler,
	})
}

// machine is what Check looks at.
type machine struct {
	euid     int
	hasProg  func(string) bool
	hasFile  func(string) bool
	kubelet  string
	schedule string
}

func checkWith(m machine) error {
	var missing []string
	if m.euid != 0 {
		missing = append(missing, "root (nodes change the host's network, mounts and cgroups: run as root)")
	}
	for _, t := range []struct{ prog, pkg string }{
		{"containerd", "containerd"}, {"containerd-shim-runc-v2", "containerd"}, {"ctr", "containerd"},
		{"runc", "runc"}, {"iptables", "iptables"}, {"ip", "iproute2"},
	} {
		if !m.hasProg(t.prog) {
			missing = append(missing, fmt.Sprintf("%s (package %s)", t.prog, t.pkg))
		}
	}
	for _, plugin := range []string{"bridge", "host-local", "loopback", "portmap"} {
		if !m.hasFile(filepath.Join(CNIBinDir, plugin)) {
			missing = append(missing, fmt.Sprintf("CNI plugin %s/%s (package containernetworking-plugins)", CNIBinDir, plugin))
		}
	}
	for _, b := range []struct{ path, name string }{{m.kubelet, "kubelet"}, {m.schedule, "kube-scheduler"}} {
		if b.path == "" {
			missing = append(missing, b.name+" v1.35.0 beside the control plane (run `make controlplane`: it builds it from source)")
		}
	}
	if !m.hasFile("/sys/fs/cgroup") {
		missing = append(missing, "cgroups mounted at /sys/fs/cgroup")
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("`flotilla dev up --nodes` cannot run on this machine; missing:\n  - %s\nInstall the packages with:\n  %s\n(the default, without --nodes, needs none of this)",
		strings.Join(missing, "\n  - "), AptInstall)
}
