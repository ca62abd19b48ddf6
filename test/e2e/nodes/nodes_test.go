//go:build nodes

package nodes_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	hubpkg "flotilla.dev/flotilla/hub"
	"flotilla.dev/flotilla/hub/deploy"
	"flotilla.dev/flotilla/klusterlet/registration"
)

const (
	timeout = 3 * time.Minute
	tick    = 250 * time.Millisecond
	image   = "ghcr.io/flotilla-dev/flotilla:e2e"
)

func flotillaRun(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(flotilla, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func config(t *testing.T, path string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(t, err)
	return cfg
}

// TestNodes is the whole life of an environment with nodes, in order: up,
// Ready nodes, a Pod from the local image, the klusterlet as a Pod with its
// logs, a ManifestWork applied and deleted, a Deployment delivered by a
// ManifestWork reporting readyReplicas back, then down leaving the host as it
// was.
func TestNodes(t *testing.T) {
	ctx := context.Background()
	env := startEnv(t, "fn-", 2)
	dataDir := env.dataDir

	hub := config(t, filepath.Join(dataDir, "hub.kubeconfig"))
	spokes := map[string]*rest.Config{}
	for _, c := range []string{"cluster1", "cluster2"} {
		spokes[c] = config(t, filepath.Join(dataDir, "clusters", c+".kubeconfig"))
	}

	t.Run("no addon agent runs as a process next to the klusterlets", func(t *testing.T) {
		procs, err := os.ReadFile(filepath.Join(dataDir, "processes.json"))
		if err == nil {
			assert.NotContains(t, string(procs), "addon-agent", "with nodes the addon agents run as the Pods their works deliver")
		} else {
			assert.ErrorIs(t, err, os.ErrNotExist)
		}
	})

	t.Run("nodes are Ready", func(t *testing.T) {
		for name, cfg := range spokes {
			nodes, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			require.Len(t, nodes.Items, 1, name)
			assert.Equal(t, name+"-node", nodes.Items[0].Name)
			assert.True(t, nodeReady(&nodes.Items[0]), "%s Ready", nodes.Items[0].Name)
		}
	})

	t.Run("a Pod from the local image runs", func(t *testing.T) {
		cs := kubernetes.NewForConfigOrDie(spokes["cluster2"])
		start := time.Now()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{pauseContainer()}}}
		_, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			p, err := cs.CoreV1().Pods("default").Get(ctx, "hello", metav1.GetOptions{})
			require.NoError(c, err)
			assert.Equal(c, corev1.PodRunning, p.Status.Phase)
		}, timeout, tick)
		t.Logf("Pod Running %s after create", time.Since(start).Round(100*time.Millisecond))
	})

	t.Run("the klusterlet runs as a Pod and its logs are readable", func(t *testing.T) {
		for name, cfg := range spokes {
			cs := kubernetes.NewForConfigOrDie(cfg)
			dep, err := cs.AppsV1().Deployments(registration.DefaultAgentNamespace).Get(ctx, "klusterlet", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, image, dep.Spec.Template.Spec.Containers[0].Image)
			assert.Equal(t, corev1.PullIfNotPresent, dep.Spec.Template.Spec.Containers[0].ImagePullPolicy)
			pods, err := cs.CoreV1().Pods(registration.DefaultAgentNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=klusterlet"})
			require.NoError(t, err)
			require.Len(t, pods.Items, 1)
			pod := pods.Items[0]
			assert.Equal(t, corev1.PodRunning, pod.Status.Phase)
			assert.Equal(t, name+"-node", pod.Spec.NodeName)
			// Through the apiserver and the kubelet, as `kubectl logs` reads them.
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				logs, err := cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
				require.NoError(c, err)
				assert.Contains(c, string(logs), `cluster="`+name+`"`)
			}, timeout, tick)
		}
		clusters := clusterclient.NewForConfigOrDie(hub)
		for name := range spokes {
			mc, err := clusters.ClusterV1().ManagedClusters().Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			assert.True(t, meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined), name)
			assert.True(t, meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable), name)
		}
	})

	t.Run("the hub runs as Pods, its webhooks behind a Service, one leader", func(t *testing.T) {
		cs := kubernetes.NewForConfigOrDie(hub)
		dep, err := cs.AppsV1().Deployments(deploy.Namespace).Get(ctx, deploy.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, int32(2), dep.Status.ReadyReplicas)
		vwc, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, hubpkg.WebhookConfigurationName, metav1.GetOptions{})
		require.NoError(t, err)
		for _, h := range vwc.Webhooks {
			require.NotNil(t, h.ClientConfig.Service, "webhook %s is called through the Service", h.Name)
			assert.Nil(t, h.ClientConfig.URL)
			assert.Equal(t, deploy.Name, h.ClientConfig.Service.Name)
		}
		// The addon CRDs convert v1alpha1 <-> v1beta1 through the same Service.
		crd, err := apiextensionsclient.NewForConfigOrDie(hub).ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "managedclusteraddons.addon.open-cluster-management.io", metav1.GetOptions{})
		require.NoError(t, err)
		require.NotNil(t, crd.Spec.Conversion.Webhook)
		require.NotNil(t, crd.Spec.Conversion.Webhook.ClientConfig.Service)
		assert.Equal(t, deploy.Name, crd.Spec.Conversion.Webhook.ClientConfig.Service.Name)
		_, err = addonclient.NewForConfigOrDie(hub).AddonV1beta1().ManagedClusterAddOns("").List(ctx, metav1.ListOptions{})
		assert.NoError(t, err, "v1beta1 list converted by the hub Pods")
		works := workclient.NewForConfigOrDie(hub).WorkV1().ManifestWorks("cluster1")
		refused := func(c *assert.CollectT) {
			cm := raw(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "twice", "namespace": "default"}})
			_, err := works.Create(ctx, &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "twice"},
				Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: cm}, {RawExtension: cm}}}}},
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if assert.Error(c, err) {
				assert.Contains(c, err.Error(), "duplicates manifest 0", "refused by the hub's webhook")
			}
		}
		require.EventuallyWithT(t, refused, timeout, tick)

		leader := func() string {
			l, err := cs.CoordinationV1().Leases(deploy.Namespace).Get(ctx, "flotilla-hub", metav1.GetOptions{})
			if err != nil || l.Spec.HolderIdentity == nil {
				return ""
			}
			pod, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
			return pod
		}
		first := leader()
		require.NotEmpty(t, first, "a replica holds the leader lease")
		require.NoError(t, cs.CoreV1().Pods(deploy.Namespace).Delete(ctx, first, metav1.DeleteOptions{}))
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			now := leader()
			assert.NotEmpty(c, now)
			assert.NotEqual(c, first, now, "another replica took over")
		}, timeout, tick)
		require.EventuallyWithT(t, refused, timeout, tick, "the webhooks still answer after the leader left")
	})

	works := workclient.NewForConfigOrDie(hub).WorkV1().ManifestWorks("cluster1")
	spoke := kubernetes.NewForConfigOrDie(spokes["cluster1"])

	t.Run("a ManifestWork is applied, then deleted", func(t *testing.T) {
		cm := raw(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "from-hub", "namespace": "default"}, "data": map[string]any{"k": "v"}})
		_, err := works.Create(ctx, &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "config"},
			Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: cm}}}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			got, err := spoke.CoreV1().ConfigMaps("default").Get(ctx, "from-hub", metav1.GetOptions{})
			require.NoError(c, err)
			assert.Equal(c, "v", got.Data["k"])
			w, err := works.Get(ctx, "config", metav1.GetOptions{})
			require.NoError(c, err)
			assert.True(c, meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkApplied))
		}, timeout, tick)
		require.NoError(t, works.Delete(ctx, "config", metav1.DeleteOptions{}))
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			_, err := spoke.CoreV1().ConfigMaps("default").Get(ctx, "from-hub", metav1.GetOptions{})
			assert.True(c, apierrors.IsNotFound(err), "ConfigMap removed with its work: %v", err)
			_, err = works.Get(ctx, "config", metav1.GetOptions{})
			assert.True(c, apierrors.IsNotFound(err), "work gone: %v", err)
		}, timeout, tick)
	})

	t.Run("a Deployment delivered by a ManifestWork reports readyReplicas", func(t *testing.T) {
		dep := &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{pauseContainer()}},
				},
			},
		}
		_, err := works.Create(ctx, &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: workv1.ManifestWorkSpec{
				Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: raw(t, dep)}}},
				ManifestConfigs: []workv1.ManifestConfigOption{{
					ResourceIdentifier: workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Namespace: "default", Name: "web"},
					FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}},
				}},
			}}, metav1.CreateOptions{})
		require.NoError(t, err)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			w, err := works.Get(ctx, "web", metav1.GetOptions{})
			require.NoError(c, err)
			assert.Equal(c, int64(1), feedback(w, "ReadyReplicas"), "ReadyReplicas fed back to the hub")
		}, timeout, tick)
		require.NoError(t, works.Delete(ctx, "web", metav1.DeleteOptions{}))
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			_, err := spoke.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
			assert.True(c, apierrors.IsNotFound(err), "Deployment removed with its work: %v", err)
		}, timeout, tick)
	})

	t.Run("the example addon's agent runs as the Pod its work delivers", func(t *testing.T) {
		testExampleAddonPod(t, dataDir, hub, spokes["cluster1"])
	})

	t.Run("the governance agents run as Pods: a hub policy is evaluated on the cluster", func(t *testing.T) {
		testGovernancePods(t, dataDir, hub, spokes["cluster1"])
	})

	t.Run("the search agent runs as its Pod: the hub finds the cluster's objects", func(t *testing.T) {
		testSearchAddonPod(t, dataDir, hub, spokes["cluster1"])
	})

	t.Run("unjoin removes the klusterlet and its Pod", func(t *testing.T) {
		kubeconfig := filepath.Join(dataDir, "clusters", "cluster2.kubeconfig")
		out, err := flotillaRun(t, "unjoin", "--cluster-name", "cluster2", "--kubeconfig", kubeconfig,
			"--cleanup-hub", "--hub-kubeconfig", filepath.Join(dataDir, "hub.kubeconfig"))
		require.NoError(t, err, out)
		cs := kubernetes.NewForConfigOrDie(spokes["cluster2"])
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			_, err := cs.CoreV1().Namespaces().Get(ctx, registration.DefaultAgentNamespace, metav1.GetOptions{})
			assert.True(c, apierrors.IsNotFound(err), "agent namespace gone: %v", err)
			pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: "app=klusterlet"})
			require.NoError(c, err)
			assert.Empty(c, pods.Items)
			for _, crb := range []string{"open-cluster-management:klusterlet-registration", "open-cluster-management:klusterlet-work"} {
				_, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, crb, metav1.GetOptions{})
				assert.True(c, apierrors.IsNotFound(err), "%s gone: %v", crb, err)
			}
		}, timeout, tick)
	})

	t.Run("dev down leaves the host as it was", func(t *testing.T) {
		assert.Contains(t, env.down(t), "cluster1-node kubelet")
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// pauseContainer runs the local image and holds still, as least privileged as a Pod gets.
func pauseContainer() corev1.Container {
	return corev1.Container{
		Name: "main", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
		Args: []string{"dev", "pause"},
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
}

func raw(t *testing.T, obj any) runtime.RawExtension {
	t.Helper()
	b, err := json.Marshal(obj)
	require.NoError(t, err)
	return runtime.RawExtension{Raw: b}
}

// feedback is the integer status feedback value name of the work's first
// manifest (-1 when absent).
func feedback(w *workv1.ManifestWork, name string) int64 {
	for _, m := range w.Status.ResourceStatus.Manifests {
		for _, v := range m.StatusFeedbacks.Values {
			if strings.EqualFold(v.Name, name) && v.Value.Integer != nil {
				return *v.Value.Integer
			}
		}
	}
	return -1
}
