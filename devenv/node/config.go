package node

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// CNIBinDir is where Debian's containernetworking-plugins puts the plugins.
const CNIBinDir = "/usr/lib/cni"

// Paths of one node's files, all below its folder.
type Paths struct{ Dir string }

func (p Paths) Containerd() string       { return filepath.Join(p.Dir, "containerd") }
func (p Paths) ContainerdConfig() string { return filepath.Join(p.Dir, "containerd", "config.toml") }
func (p Paths) Socket() string           { return filepath.Join(p.Dir, "containerd.sock") }
func (p Paths) CNIConfDir() string       { return filepath.Join(p.Dir, "cni", "net.d") }
func (p Paths) IPAMDir() string          { return filepath.Join(p.Dir, "cni", "ipam") }
func (p Paths) Kubelet() string          { return filepath.Join(p.Dir, "kubelet") }
func (p Paths) KubeletConfig() string    { return filepath.Join(p.Dir, "kubelet-config.yaml") }
func (p Paths) Kubeconfig() string       { return filepath.Join(p.Dir, "kubelet.kubeconfig") }
func (p Paths) Bootstrap() string        { return filepath.Join(p.Dir, "bootstrap.kubeconfig") }
func (p Paths) CertDir() string          { return filepath.Join(p.Dir, "pki") }
func (p Paths) PodLogs() string          { return filepath.Join(p.Dir, "pod-logs") }
func (p Paths) ResolvConf() string       { return filepath.Join(p.Dir, "resolv.conf") }
func (p Paths) ClientCA() string         { return filepath.Join(p.Dir, "ca.crt") }
func (p Paths) Logs() string             { return filepath.Join(p.Dir, "logs") }

// maxSocketPath is the longest unix socket path Linux accepts.
const maxSocketPath = 107

// containerdConfig renders containerd's configuration: its own root, state and
// socket; the CRI plugin with the local pause image, CNI from Debian's plugins
// and this node's config folder, oom_score_adj restricted (no CAP_SYS_RESOURCE
// in a sandbox), network namespaces kept under the state folder, runc's state
// under it too.
func containerdConfig(p Paths, sandboxImage string) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	c := p.Containerd()
	return strings.Join([]string{
		`version = 2`,
		`root = ` + q(filepath.Join(c, "root")),
		`state = ` + q(filepath.Join(c, "state")),
		`disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]`,
		``,
		`[grpc]`,
		`  address = ` + q(p.Socket()),
		`[ttrpc]`,
		`  address = ` + q(p.Socket()+".ttrpc"),
		`[debug]`,
		`  address = ""`,
		`[metrics]`,
		`  address = ""`,
		``,
		`[plugins."io.containerd.internal.v1.opt"]`,
		`  path = ` + q(filepath.Join(c, "opt")),
		`[plugins."io.containerd.grpc.v1.cri"]`,
		`  sandbox_image = ` + q(sandboxImage),
		`  restrict_oom_score_adj = true`,
		`  netns_mounts_under_state_dir = true`,
		`  stream_server_address = "127.0.0.1"`,
		`  enable_unprivileged_ports = false`,
		`[plugins."io.containerd.grpc.v1.cri".cni]`,
		`  bin_dir = ` + q(CNIBinDir),
		`  conf_dir = ` + q(p.CNIConfDir()),
		`  max_conf_num = 1`,
		`[plugins."io.containerd.grpc.v1.cri".containerd]`,
		`  snapshotter = "overlayfs"`,
		`  default_runtime_name = "runc"`,
		`[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]`,
		`  runtime_type = "io.containerd.runc.v2"`,
		`[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]`,
		`  Root = ` + q(filepath.Join(c, "runc")),
		`  SystemdCgroup = false`,
		``,
	}, "\n")
}

// cniConfig is the node's Pod network: a bridge with host-local addresses from
// the node's Pod range, the bridge as gateway, no masquerading (Pods talk only
// to this machine: their apiserver through the DNAT rule, the hub directly).
func cniConfig(p Paths, network, bridge, podCIDR string) ([]byte, error) {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       network,
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      bridge,
				"isGateway":   true,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"dataDir": p.IPAMDir(),
					"ranges":  [][]map[string]string{{{"subnet": podCIDR}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// kubeletConfig is the node's KubeletConfiguration: cgroupfs on cgroup v1, a
// cgroup root of its own, its own Pod log folder, serving on the node IP only,
// webhook authentication and authorization against its apiserver, eviction
// thresholds low enough for a shared disk.
func kubeletConfig(p Paths, nodeIP, cgroupRoot string) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	return strings.Join([]string{
		`apiVersion: kubelet.config.k8s.io/v1beta1`,
		`kind: KubeletConfiguration`,
		`address: ` + q(nodeIP),
		`port: 10250`,
		`readOnlyPort: 0`,
		`healthzPort: 0`,
		`authentication:`,
		`  anonymous: {enabled: false}`,
		`  webhook: {enabled: true}`,
		`  x509: {clientCAFile: ` + q(p.ClientCA()) + `}`,
		`authorization: {mode: Webhook}`,
		`cgroupDriver: cgroupfs`,
		`cgroupRoot: ` + q(cgroupRoot),
		`cgroupsPerQOS: true`,
		`failCgroupV1: false`,
		`failSwapOn: false`,
		// The kubelet would add global KUBE-FIREWALL and canary chains, shared by
		// every kubelet of the machine; nothing here needs them.
		`makeIPTablesUtilChains: false`,
		`containerRuntimeEndpoint: ` + q("unix://"+p.Socket()),
		`podLogsDir: ` + q(p.PodLogs()),
		`resolvConf: ` + q(p.ResolvConf()),
		`clusterDomain: cluster.local`,
		`rotateCertificates: true`,
		`serializeImagePulls: false`,
		`registerNode: true`,
		`imageGCHighThresholdPercent: 100`,
		`imageGCLowThresholdPercent: 99`,
		`evictionHard: {memory.available: "50Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%"}`,
		`nodeStatusReportFrequency: 10s`,
		`kubeAPIQPS: 50`,
		`kubeAPIBurst: 100`,
		``,
	}, "\n")
}

func checkSocketPath(p Paths) error {
	if n := len(p.Socket() + ".ttrpc"); n > maxSocketPath {
		return fmt.Errorf("the node folder %s is too deep for a unix socket (%d characters, at most %d): use a shorter --data-dir", p.Dir, n, maxSocketPath)
	}
	return nil
}
