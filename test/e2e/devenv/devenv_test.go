// Package devenv_test drives `flotilla dev up|status|down` through the real
// binary, as a person would.
package devenv_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"

	"flotilla.dev/flotilla/devenv"
)

var flotilla string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "flotilla-bin-")
	if err != nil {
		panic(err)
	}
	flotilla = filepath.Join(dir, "flotilla")
	build := exec.Command("go", "build", "-o", flotilla, "flotilla.dev/flotilla/cmd/flotilla")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		panic("build flotilla: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(flotilla, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func status(t *testing.T, dataDir string) *devenv.Status {
	t.Helper()
	out, err := run(t, "dev", "status", "--data-dir", dataDir, "-o", "json")
	require.NoError(t, err, out)
	st := &devenv.Status{}
	require.NoError(t, json.Unmarshal([]byte(out), st), out)
	return st
}

func TestDevUpStatusDown(t *testing.T) {
	ctx := context.Background()
	dataDir := filepath.Join(t.TempDir(), "env")
	t.Cleanup(func() { _, _ = run(t, "dev", "down", "--data-dir", dataDir) })

	out, err := run(t, "dev", "status", "--data-dir", dataDir)
	require.Error(t, err)
	assert.Contains(t, out, "no Flotilla environment in")

	loBefore := loAddrs(t)
	out, err = run(t, "dev", "up", "--clusters", "1", "--data-dir", dataDir)
	require.NoError(t, err, out)
	assert.Contains(t, out, "==> hub: ready at https://127.0.0.1:")
	assert.Contains(t, out, "==> cluster1: ready at")
	assert.Contains(t, out, "get managedclusters")

	st := status(t, dataDir)
	require.True(t, st.AllRunning(), "%+v", st)
	pids := pidsOf(st)
	// Admin kubeconfigs, keys and logs are the owner's alone.
	for _, d := range []string{"clusters", "controlplanes", "logs"} {
		fi, err := os.Stat(filepath.Join(dataDir, d))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), d)
	}
	logs, err := filepath.Glob(filepath.Join(dataDir, "logs", "*.log"))
	require.NoError(t, err)
	require.NotEmpty(t, logs)
	for _, l := range logs {
		fi, err := os.Stat(l)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), l)
	}
	assert.GreaterOrEqual(t, len(pids), 6)

	// The kubeconfigs work, and the hub serves the OCM API.
	hub := client(t, filepath.Join(dataDir, "hub.kubeconfig"))
	_, err = hub.Discovery().ServerResourcesForGroupVersion("cluster.open-cluster-management.io/v1")
	require.NoError(t, err)
	spoke := client(t, filepath.Join(dataDir, "clusters", "cluster1.kubeconfig"))
	_, err = spoke.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	// The hub's aggregated API: the history read through the hub apiserver
	// with the kubeconfig alone, at an address dev up added (as root).
	require.Eventually(t, func() bool {
		out, err := run(t, "compliance", "history", "--kubeconfig", filepath.Join(dataDir, "hub.kubeconfig"))
		return err == nil && strings.Contains(out, "changes")
	}, time.Minute, 500*time.Millisecond, "compliance history through the hub's APIService")
	added := newAddrs(loBefore, loAddrs(t))
	if os.Geteuid() == 0 {
		require.Len(t, added, 1, "dev up adds one address to lo for the hub's aggregated API")
		assert.Regexp(t, `^198\.1[89]\.`, added[0])
	}
	_, err = hub.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "survives-restart"}, Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	out, err = run(t, "dev", "up", "--data-dir", dataDir)
	require.NoError(t, err, out)
	assert.Contains(t, out, "already running")
	assert.ElementsMatch(t, pids, pidsOf(status(t, dataDir)), "a second up starts nothing")

	out, err = run(t, "dev", "up", "--clusters", "0", "--data-dir", dataDir)
	require.NoError(t, err, out, "--clusters 0 means: what the environment has")

	// An admin denies cluster1; restarting a stopped component with dev up
	// leaves the deny alone, and dev status shows it.
	assert.Equal(t, devenv.AcceptanceAccepted, componentOf(st, "cluster1").Hub)
	hubClusters := clusters(t, filepath.Join(dataDir, "hub.kubeconfig"))
	_, err = hubClusters.ClusterV1().ManagedClusters().Patch(ctx, "cluster1", types.MergePatchType,
		[]byte(`{"spec":{"hubAcceptsClient":false}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return componentOf(status(t, dataDir), "cluster1").Hub == devenv.AcceptanceDenied
	}, time.Minute, 200*time.Millisecond, "dev status shows the deny")
	out, err = run(t, "dev", "status", "--data-dir", dataDir)
	require.NoError(t, err, out)
	assert.Regexp(t, `cluster1\s+control-plane\s+running\s+denied`, out)
	klusterletPID := componentOf(status(t, dataDir), "klusterlet-cluster1").PIDs["flotilla"]
	require.NotZero(t, klusterletPID)
	require.NoError(t, syscall.Kill(klusterletPID, syscall.SIGTERM))
	require.Eventually(t, func() bool {
		return componentOf(status(t, dataDir), "klusterlet-cluster1").State == devenv.StateStopped
	}, time.Minute, 200*time.Millisecond)
	out, err = run(t, "dev", "up", "--data-dir", dataDir)
	require.NoError(t, err, out)
	assert.Contains(t, out, "cluster1: denied on the hub (spec.hubAcceptsClient=false); dev up leaves it denied")
	mc, err := hubClusters.ClusterV1().ManagedClusters().Get(ctx, "cluster1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.False(t, mc.Spec.HubAcceptsClient, "dev up did not undo the deny")
	assert.Equal(t, devenv.AcceptanceDenied, componentOf(status(t, dataDir), "cluster1").Hub)
	pids = pidsOf(status(t, dataDir))

	out, err = run(t, "dev", "down", "--data-dir", dataDir)
	require.NoError(t, err, out)
	assert.Contains(t, out, "stopped hub control plane")
	for _, pid := range pids {
		_, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err == nil {
			cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
			assert.NotContains(t, string(cmdline), dataDir, "process %d still running after down", pid)
		}
	}
	for _, c := range status(t, dataDir).Components {
		assert.Equal(t, devenv.StateStopped, c.State, c.Name)
	}
	assert.Empty(t, newAddrs(loBefore, loAddrs(t)), "dev down removes the address it added")
	out, err = run(t, "dev", "down", "--data-dir", dataDir)
	require.NoError(t, err, out)
	assert.Contains(t, out, "nothing was running")

	// up after down resumes on the same data.
	out, err = run(t, "dev", "up", "--data-dir", dataDir)
	require.NoError(t, err, out)
	hub = client(t, filepath.Join(dataDir, "hub.kubeconfig"))
	cm, err := hub.CoreV1().ConfigMaps("default").Get(ctx, "survives-restart", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "v", cm.Data["k"])
}

func TestDevUpErrors(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "env")

	out, err := run(t, "dev", "up", "--data-dir", dataDir, "--controlplane-dir", t.TempDir())
	require.Error(t, err)
	assert.Contains(t, out, "make controlplane", "a missing binary names the fix")

	out, err = run(t, "dev", "status", "--data-dir", dataDir, "-o", "xml")
	require.Error(t, err)
	assert.Contains(t, out, `unknown output format "xml"`)
}

func componentOf(st *devenv.Status, name string) devenv.Component {
	for _, c := range st.Components {
		if c.Name == name {
			return c
		}
	}
	return devenv.Component{}
}

func clusters(t *testing.T, kubeconfig string) clusterclient.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	return clusterclient.NewForConfigOrDie(cfg)
}

func pidsOf(st *devenv.Status) []int {
	var out []int
	for _, c := range st.Components {
		for _, pid := range c.PIDs {
			out = append(out, pid)
		}
	}
	return out
}

func client(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	return kubernetes.NewForConfigOrDie(cfg)
}

// loAddrs lists the IPv4 addresses on lo.
func loAddrs(t *testing.T) []string {
	t.Helper()
	ifc, err := net.InterfaceByName("lo")
	require.NoError(t, err)
	addrs, err := ifc.Addrs()
	require.NoError(t, err)
	var out []string
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			out = append(out, n.IP.String())
		}
	}
	return out
}

// newAddrs are the addresses of now that were not there before.
func newAddrs(before, now []string) []string {
	var out []string
	for _, a := range now {
		if !slices.Contains(before, a) {
			out = append(out, a)
		}
	}
	return out
}
