package node

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func TestContainerdConfigKeepsEverythingInTheNodeFolder(t *testing.T) {
	p := Paths{Dir: "/data/nodes/cluster1"}
	cfg := containerdConfig(p, "flotilla.local/pause:1")
	for _, want := range []string{
		`root = "/data/nodes/cluster1/containerd/root"`,
		`state = "/data/nodes/cluster1/containerd/state"`,
		`address = "/data/nodes/cluster1/containerd.sock"`,
		`sandbox_image = "flotilla.local/pause:1"`,
		`restrict_oom_score_adj = true`,
		`netns_mounts_under_state_dir = true`,
		`conf_dir = "/data/nodes/cluster1/cni/net.d"`,
		`Root = "/data/nodes/cluster1/containerd/runc"`,
	} {
		assert.Contains(t, cfg, want)
	}
	for _, line := range strings.Split(cfg, "\n") {
		if i := strings.Index(line, `"/`); i >= 0 && !strings.Contains(line, "bin_dir") {
			assert.Contains(t, line, `"/data/nodes/cluster1/`, "every path of containerd is the node's: %s", line)
		}
	}
}

func TestCNIConfig(t *testing.T) {
	p := Paths{Dir: "/data/nodes/cluster1"}
	data, err := cniConfig(p, "flotilla-abcd-1", "flabcd-p1", "10.150.2.0/24")
	require.NoError(t, err)
	var conf struct {
		Name    string           `json:"name"`
		Plugins []map[string]any `json:"plugins"`
	}
	require.NoError(t, json.Unmarshal(data, &conf))
	assert.Equal(t, "flotilla-abcd-1", conf.Name)
	bridge := conf.Plugins[0]
	assert.Equal(t, "bridge", bridge["type"])
	assert.Equal(t, "flabcd-p1", bridge["bridge"])
	assert.Equal(t, false, bridge["ipMasq"], "Pods never masquerade to the outside")
	ipam := bridge["ipam"].(map[string]any)
	assert.Equal(t, "/data/nodes/cluster1/cni/ipam", ipam["dataDir"], "leases kept in the node folder, not /var/lib/cni")
	assert.Contains(t, string(data), "10.150.2.0/24")
}

func TestKubeletConfig(t *testing.T) {
	p := Paths{Dir: "/data/nodes/cluster1"}
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(kubeletConfig(p, "10.150.0.11", "/flotilla-abcd-1")), &cfg))
	assert.Equal(t, "KubeletConfiguration", cfg["kind"])
	assert.Equal(t, "cgroupfs", cfg["cgroupDriver"])
	assert.Equal(t, false, cfg["failCgroupV1"])
	assert.Equal(t, "10.150.0.11", cfg["address"], "serves on the node IP only")
	assert.Equal(t, "/flotilla-abcd-1", cfg["cgroupRoot"])
	assert.Equal(t, "/data/nodes/cluster1/pod-logs", cfg["podLogsDir"])
	assert.Equal(t, false, cfg["makeIPTablesUtilChains"], "no machine-wide iptables chains")
	assert.Equal(t, float64(0), cfg["readOnlyPort"])
	auth := cfg["authentication"].(map[string]any)
	assert.Equal(t, false, auth["anonymous"].(map[string]any)["enabled"], "anonymous requests refused")
	assert.Equal(t, "Webhook", cfg["authorization"].(map[string]any)["mode"])
}

func TestSocketPathTooLong(t *testing.T) {
	assert.NoError(t, checkSocketPath(Paths{Dir: "/tmp/env/nodes/cluster1"}))
	err := checkSocketPath(Paths{Dir: "/" + strings.Repeat("deep/", 20) + "nodes/cluster1"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "shorter --data-dir")
}
