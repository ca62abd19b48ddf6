package controlplane

import (
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestRestartKeepsData starts a control plane, writes an object, stops it,
// starts it again on the same folder and finds the object there; when stopped,
// none of its processes is left.
func TestRestartKeepsData(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	cp, err := Start(ctx, Config{Name: "restart", Dir: dir, FastEtcd: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cp.Stop() })
	client, err := kubernetes.NewForConfig(cp.Config)
	require.NoError(t, err)
	_, err = client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "survivor"}, Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	// A second start on a running folder is refused, not a second copy.
	_, err = Start(ctx, Config{Name: "restart", Dir: dir})
	assert.ErrorContains(t, err, "already running")

	pids := cp.PIDs()
	require.NoError(t, cp.Stop())
	for comp, pid := range pids {
		assert.False(t, pidAlive(pid, ""), "%s (pid %d) still running after Stop", comp, pid)
	}

	again, err := Start(ctx, Config{Name: "restart", Dir: dir, FastEtcd: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = again.Stop() })
	assert.Equal(t, cp.Ports, again.Ports, "a restart reuses the ports, so kubeconfigs stay valid")
	client, err = kubernetes.NewForConfig(again.Config)
	require.NoError(t, err)
	got, err := client.CoreV1().ConfigMaps("default").Get(ctx, "survivor", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "v", got.Data["k"])

	// cluster-info is readable without credentials and names this server.
	info, err := client.CoreV1().ConfigMaps("kube-public").Get(ctx, "cluster-info", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, info.Data["kubeconfig"], again.URL)
}

func TestPortClashIsAClearError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port

	_, err = Start(context.Background(), Config{Name: "clash", Dir: t.TempDir(), Ports: Ports{EtcdClient: port}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "127.0.0.1:"+strconv.Itoa(port))
	assert.Contains(t, err.Error(), "another process is using")
}

func TestMissingBinariesSayHowToBuild(t *testing.T) {
	_, err := FindBinaries(t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "make controlplane")
}
