//go:build nodes

// Package nodes_test measures a real node of `flotilla dev up --nodes` from
// nothing: a control plane, the node's containerd and kubelet (TLS bootstrap)
// until the Node is Ready, then a Pod from the local image until Running. It
// needs what `make e2e-nodes` needs (root, Debian's containerd, runc,
// containernetworking-plugins, iptables).
//
//	go test -tags nodes -run '^$' -bench . -benchtime 3x ./test/bench/nodes/
package nodes_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"flotilla.dev/flotilla/devenv/host"
	"flotilla.dev/flotilla/devenv/node"
	"flotilla.dev/flotilla/internal/controlplane"
	"flotilla.dev/flotilla/internal/image"
	"flotilla.dev/flotilla/test/testenv"
)

const (
	ref   = "ghcr.io/flotilla-dev/flotilla:bench"
	pause = "flotilla.local/pause:1"
)

func BenchmarkNodeFromNothing(b *testing.B) {
	ctx := context.Background()
	bins, err := controlplane.FindBinaries("")
	require.NoError(b, err)
	require.NoError(b, node.Check(bins.Kubelet, bins.Scheduler))
	tmp, err := os.MkdirTemp("", "fb-")
	require.NoError(b, err)
	defer os.RemoveAll(tmp)
	bin, err := testenv.BuildFlotilla(tmp)
	require.NoError(b, err)
	img, err := image.Build(image.Options{Binary: bin})
	require.NoError(b, err)
	pauseImg, err := image.Build(image.Options{Binary: bin, Args: []string{"dev", "pause"}})
	require.NoError(b, err)
	archive := filepath.Join(tmp, "images.tar")
	require.NoError(b, image.WriteArchiveFile(archive, image.Named{Ref: ref, Image: img}, image.Named{Ref: pause, Image: pauseImg}))

	var cpReady, nodeReady, podRunning time.Duration
	for i := 0; i < b.N; i++ {
		dir := filepath.Join(tmp, "env", string(rune('a'+i)))
		plan := node.NewPlan(dir)
		j, err := host.Open(filepath.Join(dir, "host.json"))
		require.NoError(b, err)
		start := time.Now()
		require.NoError(b, j.EnsureBridge(plan.Bridge()))
		require.NoError(b, j.EnsureAddr(plan.Bridge(), plan.HostIP()+"/16"))
		cp, err := controlplane.Start(ctx, controlplane.Config{Name: "bench", Dir: filepath.Join(dir, "cp"), Binaries: bins,
			Address: plan.HostIP(), Nodes: true, FastEtcd: true})
		require.NoError(b, err)
		cpReady += time.Since(start)
		admin := kubernetes.NewForConfigOrDie(cp.Config)
		token, err := node.PrepareCluster(ctx, admin, time.Hour)
		require.NoError(b, err)
		cfg := node.Config{Index: 1, Name: "bench-node", Dir: filepath.Join(dir, "node"), Plan: plan, APIServer: cp.URL,
			CAPEM: cp.CAPEM, Token: token, Kubelet: bins.Kubelet, SandboxImage: pause, Archives: []string{archive}, Journal: j}
		require.NoError(b, node.Start(ctx, cfg))
		require.NoError(b, node.WaitReady(ctx, cfg, admin, 3*time.Minute))
		nodeReady += time.Since(start)

		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "first", Namespace: "default"}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: ref, ImagePullPolicy: corev1.PullIfNotPresent, Args: []string{"dev", "pause"},
				SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)}}}}}
		require.Eventually(b, func() bool {
			_, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
			return err == nil // the default ServiceAccount may not exist yet
		}, time.Minute, 100*time.Millisecond)
		require.NoError(b, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			p, err := admin.CoreV1().Pods("default").Get(ctx, "first", metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodRunning, nil
		}))
		podRunning += time.Since(start)

		_, err = node.Stop(ctx, cfg.Dir)
		require.NoError(b, err)
		require.NoError(b, cp.Stop())
		require.NoError(b, j.Undo())
	}
	n := float64(b.N)
	b.ReportMetric(cpReady.Seconds()/n, "s/controlplane-ready")
	b.ReportMetric(nodeReady.Seconds()/n, "s/node-ready")
	b.ReportMetric(podRunning.Seconds()/n, "s/first-pod-running")
}
