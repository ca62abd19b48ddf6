package work_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/klusterlet/work/apply"
)

func labelled(obj map[string]interface{}, labels map[string]interface{}) map[string]interface{} {
	obj["metadata"].(map[string]interface{})["labels"] = labels
	return obj
}

func setManifest(t *testing.T, cluster, work string, i int, obj interface{}) {
	t.Helper()
	w := getWork(t, cluster, work)
	w.Spec.Workload.Manifests[i] = manifest(t, obj)
	require.NoError(t, hub.Update(context.Background(), w))
}

// TestUpdateRemovesWhatLeftTheManifest: a key and a label dropped from the
// manifest disappear from the managed cluster; a label someone else added stays.
func TestUpdateRemovesWhatLeftTheManifest(t *testing.T) {
	ctx := context.Background()
	newWork(t, "cluster1", "shrink", namespace("shrink"),
		labelled(configMap("shrink", "c", map[string]interface{}{"a": "1", "b": "2"}), map[string]interface{}{"app": "web", "tier": "front"})).create(t)
	waitApplied(t, "cluster1", "shrink")
	cm, err := getCM(t, "shrink", "c")
	require.NoError(t, err)
	assert.NotEmpty(t, cm.Annotations[apply.HashAnnotation], "the applied object records the manifest's hash")
	cm.Labels["team"] = "theirs"
	_, err = spoke1.CoreV1().ConfigMaps("shrink").Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)

	setManifest(t, "cluster1", "shrink", 1,
		labelled(configMap("shrink", "c", map[string]interface{}{"a": "1"}), map[string]interface{}{"app": "web"}))
	eventuallyCM(t, "shrink", "c", func(cm *corev1.ConfigMap, err error) bool {
		return err == nil && assert.ObjectsAreEqual(map[string]string{"a": "1"}, cm.Data) &&
			assert.ObjectsAreEqual(map[string]string{"app": "web", "team": "theirs"}, cm.Labels)
	}, "key b and label tier should be gone, label team kept")
	waitApplied(t, "cluster1", "shrink")

	// Server-side apply removes what its field manager no longer sets, too.
	newWork(t, "cluster1", "shrink-ssa", configMap("shrink", "s", map[string]interface{}{"a": "1", "b": "2"})).
		config(strategy(cmID("shrink", "s"), workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply,
			ServerSideApply: &workv1.ServerSideApplyConfig{Force: true}})).create(t)
	waitApplied(t, "cluster1", "shrink-ssa")
	setManifest(t, "cluster1", "shrink-ssa", 0, configMap("shrink", "s", map[string]interface{}{"a": "1"}))
	eventuallyCM(t, "shrink", "s", func(cm *corev1.ConfigMap, err error) bool {
		return err == nil && assert.ObjectsAreEqual(map[string]string{"a": "1"}, cm.Data)
	}, "server-side apply: key b should be gone")
	deleteWork(t, "cluster1", "shrink-ssa")
	deleteWork(t, "cluster1", "shrink")
}

// TestUpdateRevertsKeysAddedOnTheSpoke: a key added to the data of an applied
// ConfigMap is drift and goes; a label added is someone else's and stays.
func TestUpdateRevertsKeysAddedOnTheSpoke(t *testing.T) {
	ctx := context.Background()
	newWork(t, "cluster1", "grow", namespace("grow"), configMap("grow", "c", map[string]interface{}{"a": "1"})).create(t)
	waitApplied(t, "cluster1", "grow")
	cm, err := getCM(t, "grow", "c")
	require.NoError(t, err)
	cm.Data["added"] = "x"
	cm.Labels = map[string]string{"team": "theirs"}
	_, err = spoke1.CoreV1().ConfigMaps("grow").Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventuallyCM(t, "grow", "c", func(cm *corev1.ConfigMap, err error) bool {
		return err == nil && assert.ObjectsAreEqual(map[string]string{"a": "1"}, cm.Data)
	}, "the added key should be removed")
	cm, err = getCM(t, "grow", "c")
	require.NoError(t, err)
	assert.Equal(t, "theirs", cm.Labels["team"], "a label added on the managed cluster is kept")
	deleteWork(t, "cluster1", "grow")
}

// TestDeploymentIsNotRewritten: a Deployment, which the apiserver fills with
// defaults and the controller-manager annotates and gives status, is written
// once and then left alone sync after sync (so are a Namespace, a Job and a
// Service beside it); an env var added on the managed
// cluster is drift and is reverted.
func TestDeploymentIsNotRewritten(t *testing.T) {
	ctx := context.Background()
	deploy := map[string]interface{}{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]interface{}{"name": "web", "namespace": "churn"},
		"spec": map[string]interface{}{
			"replicas": 0,
			"selector": map[string]interface{}{"matchLabels": map[string]interface{}{"app": "web"}},
			"template": map[string]interface{}{
				"metadata": map[string]interface{}{"labels": map[string]interface{}{"app": "web"}},
				"spec": map[string]interface{}{"containers": []interface{}{
					map[string]interface{}{"name": "web", "image": "registry.k8s.io/pause:3.9",
						"resources": map[string]interface{}{"limits": map[string]interface{}{"cpu": "1000m"}}}}},
			},
		},
	}
	// A Job's selector and template labels are set by the apiserver and
	// immutable: even a dry-run update of the manifest is refused, and the Job
	// must still count as applied, without writes.
	job := map[string]interface{}{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]interface{}{"name": "once", "namespace": "churn"},
		"spec": map[string]interface{}{"template": map[string]interface{}{"spec": map[string]interface{}{
			"restartPolicy": "Never",
			"containers":    []interface{}{map[string]interface{}{"name": "c", "image": "registry.k8s.io/pause:3.9"}}}}},
	}
	// A Service gets its clusterIP allocated, which the manifest does not set.
	svc := map[string]interface{}{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]interface{}{"name": "web", "namespace": "churn"},
		"spec": map[string]interface{}{"selector": map[string]interface{}{"app": "web"},
			"ports": []interface{}{map[string]interface{}{"port": 80}}},
	}
	newWork(t, "cluster1", "churn", namespace("churn"), deploy, job, svc).create(t)
	waitApplied(t, "cluster1", "churn")
	deployments := spoke1.AppsV1().Deployments("churn")
	// The controller-manager has done its part (revision annotation, status).
	var live *appsv1.Deployment
	require.Eventually(t, func() bool {
		d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
		if err != nil || d.Status.ObservedGeneration != d.Generation {
			return false
		}
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentProgressing && c.Reason == "NewReplicaSetAvailable" {
				live = d
				return true
			}
		}
		return false
	}, wait, tick, "the deployment controller should finish")
	path := "/apis/apps/v1/namespaces/churn/deployments/web"
	others := []string{"/api/v1/namespaces/churn", "/apis/batch/v1/namespaces/churn/jobs/once", "/api/v1/namespaces/churn/services/web"}
	writes := agentWrites.count(path)
	otherWrites := map[string]int{}
	for _, p := range others {
		otherWrites[p] = agentWrites.count(p)
	}

	require.Never(t, func() bool {
		d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
		return err != nil || d.ResourceVersion != live.ResourceVersion || agentWrites.count(path) != writes
	}, 4*syncInterval, tick, "the agent should not rewrite an unchanged Deployment")
	waitResyncs(t, "cluster1", "churn", 2) // and it did look at it again meanwhile
	d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, live.ResourceVersion, d.ResourceVersion)
	assert.Equal(t, writes, agentWrites.count(path), "no writes to the Deployment")
	for _, p := range others {
		assert.Equal(t, otherWrites[p], agentWrites.count(p), "no writes to %s", p)
	}
	w := waitApplied(t, "cluster1", "churn")
	for i := range w.Spec.Workload.Manifests {
		assert.Equal(t, metav1.ConditionTrue, manifestCond(w, i, "Applied").Status, "manifest %d applied", i)
	}

	d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "ADDED", Value: "on the spoke"}}
	_, err = deployments.Update(ctx, d, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
		return err == nil && len(d.Spec.Template.Spec.Containers[0].Env) == 0
	}, wait, tick, "the env var added on the managed cluster should be reverted")
	deleteWork(t, "cluster1", "churn")
}
