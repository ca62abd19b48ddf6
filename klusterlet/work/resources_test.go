package work_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/klusterlet/work/applied"
)

func widgetCRD() map[string]interface{} {
	return map[string]interface{}{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]interface{}{"name": "widgets.example.com"},
		"spec": map[string]interface{}{
			"group": "example.com", "scope": "Namespaced",
			"names": map[string]interface{}{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []interface{}{map[string]interface{}{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]interface{}{"openAPIV3Schema": map[string]interface{}{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	}
}

func TestWorkWithCRDAndCustomResource(t *testing.T) {
	widget := map[string]interface{}{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]interface{}{"name": "w1", "namespace": "crd"}, "spec": map[string]interface{}{"size": 3}}
	// The custom resource comes first in the work; kind order applies the CRD first.
	newWork(t, "cluster1", "crd", widget, namespace("crd"), widgetCRD()).
		config(workv1.ManifestConfigOption{
			ResourceIdentifier: workv1.ResourceIdentifier{Group: "example.com", Resource: "widgets", Namespace: "crd", Name: "w1"},
			FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: "size", Path: ".spec.size"}}}},
		}).create(t)
	w := waitApplied(t, "cluster1", "crd")
	assert.Equal(t, "widgets", w.Status.ResourceStatus.Manifests[0].ResourceMeta.Resource)
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	got, err := dyn1.Resource(gvr).Namespace("crd").Get(context.Background(), "w1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.EqualValues(t, 3, got.Object["spec"].(map[string]interface{})["size"])
	w = eventuallyWork(t, "cluster1", "crd", func(w *workv1.ManifestWork) bool {
		return len(w.Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values) == 1
	}, "feedback from the custom resource")
	assert.Equal(t, int64(3), *w.Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values[0].Value.Integer)
	deleteWork(t, "cluster1", "crd")
}

func TestDeploymentFeedback(t *testing.T) {
	ctx := context.Background()
	deploy := map[string]interface{}{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]interface{}{"name": "web", "namespace": "feedback"},
		"spec": map[string]interface{}{
			"replicas": 2,
			"selector": map[string]interface{}{"matchLabels": map[string]interface{}{"app": "web"}},
			"template": map[string]interface{}{
				"metadata": map[string]interface{}{"labels": map[string]interface{}{"app": "web"}},
				"spec": map[string]interface{}{"containers": []interface{}{
					map[string]interface{}{"name": "web", "image": "registry.k8s.io/pause:3.9"}}},
			},
		},
	}
	newWork(t, "cluster1", "feedback", namespace("feedback"), deploy).config(workv1.ManifestConfigOption{
		ResourceIdentifier: workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Namespace: "feedback", Name: "web"},
		FeedbackRules: []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType},
			{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: "desired", Path: ".spec.replicas"}}}},
	}).create(t)
	waitApplied(t, "cluster1", "feedback")

	// Without nodes no pod gets ready: the controller-manager still creates the
	// ReplicaSet and reports status.replicas; readyReplicas stays unset. The
	// feedback must mirror exactly what the live Deployment says.
	require.Eventually(t, func() bool {
		live, err := spoke1.AppsV1().Deployments("feedback").Get(ctx, "web", metav1.GetOptions{})
		if err != nil || live.Status.ObservedGeneration == 0 {
			return false
		}
		w := getWork(t, "cluster1", "feedback")
		c := manifestCond(w, 1, "StatusFeedbackSynced")
		if c == nil || c.Status != "True" {
			return false
		}
		vals := map[string]int64{}
		for _, v := range w.Status.ResourceStatus.Manifests[1].StatusFeedbacks.Values {
			if v.Value.Integer != nil {
				vals[v.Name] = *v.Value.Integer
			}
		}
		if vals["desired"] != 2 || vals["Replicas"] != int64(live.Status.Replicas) {
			return false
		}
		_, hasReady := vals["ReadyReplicas"]
		return hasReady == (live.Status.ReadyReplicas != 0)
	}, wait, tick, "feedback should mirror the live Deployment")
	deleteWork(t, "cluster1", "feedback")
}

func TestDriftRepair(t *testing.T) {
	ctx := context.Background()
	newWork(t, "cluster1", "drift", namespace("drift"), configMap("drift", "c", map[string]interface{}{"k": "v"})).create(t)
	waitApplied(t, "cluster1", "drift")

	cm, err := getCM(t, "drift", "c")
	require.NoError(t, err)
	cm.Data["k"] = "tampered"
	_, err = spoke1.CoreV1().ConfigMaps("drift").Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventuallyCM(t, "drift", "c", func(cm *corev1.ConfigMap, err error) bool { return err == nil && cm.Data["k"] == "v" }, "edit should be reverted")

	oldUID := cm.UID
	require.NoError(t, spoke1.CoreV1().ConfigMaps("drift").Delete(ctx, "c", metav1.DeleteOptions{}))
	eventuallyCM(t, "drift", "c", func(cm *corev1.ConfigMap, err error) bool { return err == nil && cm.UID != oldUID }, "deleted configmap should come back")
	cm, err = getCM(t, "drift", "c")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		amw, err := appliedWork(t, spoke1c, "drift")
		if err != nil {
			return false
		}
		for _, r := range amw.Status.AppliedResources {
			if r.Name == "c" {
				return r.UID == string(cm.UID)
			}
		}
		return false
	}, wait, tick, "the record should carry the new UID")
	deleteWork(t, "cluster1", "drift")
}

func TestBadManifestBesideGoodOnes(t *testing.T) {
	badService := map[string]interface{}{"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]interface{}{"name": "bad", "namespace": "bad"},
		"spec":     map[string]interface{}{"ports": []interface{}{map[string]interface{}{"port": 99999}}}}
	unknownKind := map[string]interface{}{"apiVersion": "nosuch.example.com/v1", "kind": "Gadget",
		"metadata": map[string]interface{}{"name": "g", "namespace": "bad"}}
	noNamespace := configMap("does-not-exist", "lost", nil)
	newWork(t, "cluster1", "bad", namespace("bad"), badService, configMap("bad", "good", map[string]interface{}{"k": "v"}), unknownKind, noNamespace).create(t)

	w := eventuallyWork(t, "cluster1", "bad", func(w *workv1.ManifestWork) bool {
		return condIs(w.Status.Conditions, "Applied", "False") && len(w.Status.ResourceStatus.Manifests) == 5 &&
			condIs(w.Status.ResourceStatus.Manifests[2].Conditions, "Applied", "True")
	}, "the good manifest applies, the work reports failure")
	c := manifestCond(w, 1, "Applied")
	assert.Equal(t, "AppliedManifestFailed", c.Reason)
	assert.Contains(t, c.Message, "spec.ports[0].port", "the apiserver's validation message")
	c = manifestCond(w, 3, "Applied")
	assert.Contains(t, c.Message, "no matches for kind \"Gadget\"")
	c = manifestCond(w, 4, "Applied")
	assert.Contains(t, c.Message, "namespaces \"does-not-exist\" not found")
	assert.Equal(t, metav1.ConditionTrue, manifestCond(w, 0, "Applied").Status)
	wc := condFind(w, "Applied")
	assert.Equal(t, "AppliedManifestWorkFailed", wc.Reason)
	assert.Contains(t, wc.Message, "3 of 5 manifests failed")
	assert.True(t, strings.Contains(wc.Message, "manifest 1 (Service bad/bad)"), wc.Message)

	_, err := getCM(t, "bad", "good")
	require.NoError(t, err)

	// The agent keeps serving other works.
	newWork(t, "cluster1", "after-bad", configMap("bad", "after", nil)).create(t)
	waitApplied(t, "cluster1", "after-bad")
	deleteWork(t, "cluster1", "after-bad")
	deleteWork(t, "cluster1", "bad")
	_, err = getCM(t, "bad", "good")
	assert.True(t, apierrors.IsNotFound(err))
}

func condFind(w *workv1.ManifestWork, typ string) *metav1.Condition {
	for i := range w.Status.Conditions {
		if w.Status.Conditions[i].Type == typ {
			return &w.Status.Conditions[i]
		}
	}
	return nil
}

func TestOrphanedAppliedWorkIsEvicted(t *testing.T) {
	ctx := context.Background()
	// A record of a work that no longer exists on the hub, with a resource.
	_, err := spoke1.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "evict"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cm, err := spoke1.CoreV1().ConfigMaps("evict").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "leftover"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	amw := &workv1.AppliedManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: hubHash + "-gone", Finalizers: []string{workv1.AppliedManifestWorkFinalizer}},
		Spec:       workv1.AppliedManifestWorkSpec{HubHash: hubHash, AgentID: "cluster1", ManifestWorkName: "gone"},
	}
	require.NoError(t, spoke1c.Create(ctx, amw))
	recordResources(t, amw.Name, workv1.AppliedManifestResourceMeta{
		ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "evict", Name: "leftover"},
		Version:            "v1", UID: string(cm.UID)})
	// A record this agent's earlier name made for this hub (the agent was
	// renamed): this agent's now, evicted like its own.
	renamedCM, err := spoke1.CoreV1().ConfigMaps("evict").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "renamed-leftover"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	renamed := &workv1.AppliedManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: hubHash + "-renamed-gone", Finalizers: []string{workv1.AppliedManifestWorkFinalizer},
			Labels: map[string]string{applied.ClusterLabel: "cluster1"}},
		Spec: workv1.AppliedManifestWorkSpec{HubHash: hubHash, AgentID: "cluster1-before-rename", ManifestWorkName: "renamed-gone"},
	}
	require.NoError(t, spoke1c.Create(ctx, renamed))
	recordResources(t, renamed.Name, workv1.AppliedManifestResourceMeta{
		ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "evict", Name: "renamed-leftover"},
		Version:            "v1", UID: string(renamedCM.UID)})
	// A record of this hub that another cluster's agent wrote (simulated
	// clusters sharing one apiserver) is that agent's.
	otherCluster := &workv1.AppliedManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: hubHash + "-other-cluster", Labels: map[string]string{applied.ClusterLabel: "cluster2"}},
		Spec:       workv1.AppliedManifestWorkSpec{HubHash: hubHash, AgentID: "cluster2", ManifestWorkName: "other-cluster"},
	}
	require.NoError(t, spoke1c.Create(ctx, otherCluster))
	// Another agent's record for another hub is none of this agent's business.
	foreign := &workv1.AppliedManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: "0therhub-foreign"},
		Spec:       workv1.AppliedManifestWorkSpec{HubHash: "0therhub", AgentID: "someone-else", ManifestWorkName: "foreign"},
	}
	require.NoError(t, spoke1c.Create(ctx, foreign))
	// A record this agent made for another hub (the cluster moved hubs).
	oldHub := &workv1.AppliedManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: "0ldhub-web", Finalizers: []string{workv1.AppliedManifestWorkFinalizer}},
		Spec:       workv1.AppliedManifestWorkSpec{HubHash: "0ldhub", AgentID: "cluster1", ManifestWorkName: "web"},
	}
	require.NoError(t, spoke1c.Create(ctx, oldHub))

	require.Eventually(t, func() bool {
		a, err := appliedWork(t, spoke1c, "gone")
		return err == nil && a.Status.EvictionStartTime != nil
	}, wait, tick, "eviction should start")
	eventuallyCM(t, "evict", "leftover", func(_ *corev1.ConfigMap, err error) bool { return apierrors.IsNotFound(err) }, "evicted after the grace period")
	require.Eventually(t, func() bool { _, err := appliedWork(t, spoke1c, "gone"); return apierrors.IsNotFound(err) }, wait, tick)
	require.Eventually(t, func() bool {
		err := spoke1c.Get(ctx, client.ObjectKey{Name: "0ldhub-web"}, &workv1.AppliedManifestWork{})
		return apierrors.IsNotFound(err)
	}, wait, tick, "a record from another hub is evicted too")
	eventuallyCM(t, "evict", "renamed-leftover", func(_ *corev1.ConfigMap, err error) bool { return apierrors.IsNotFound(err) },
		"a renamed agent's leftover is evicted")
	require.Eventually(t, func() bool { _, err := appliedWork(t, spoke1c, "renamed-gone"); return apierrors.IsNotFound(err) }, wait, tick,
		"a renamed agent's record is evicted")
	a := &workv1.AppliedManifestWork{}
	require.NoError(t, spoke1c.Get(ctx, client.ObjectKey{Name: "0therhub-foreign"}, a))
	assert.Nil(t, a.Status.EvictionStartTime)
	require.NoError(t, spoke1c.Delete(ctx, a))
	a = &workv1.AppliedManifestWork{}
	require.NoError(t, spoke1c.Get(ctx, client.ObjectKey{Name: hubHash + "-other-cluster"}, a))
	assert.Nil(t, a.Status.EvictionStartTime, "another cluster's record is left alone")
	assert.Equal(t, "cluster2", a.Spec.AgentID)
	require.NoError(t, spoke1c.Delete(ctx, a))
}

// recordResources writes resources into a record's status. The running agent
// may be writing the same status (it starts the eviction clock the moment it
// sees an orphan), so the write is read-modify-write, retried on conflict, and
// keeps whatever the agent set.
func recordResources(t *testing.T, name string, resources ...workv1.AppliedManifestResourceMeta) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		amw := &workv1.AppliedManifestWork{}
		if err := spoke1c.Get(ctx, client.ObjectKey{Name: name}, amw); err != nil {
			return err
		}
		amw.Status.AppliedResources = resources
		return spoke1c.Status().Update(ctx, amw)
	}), "recording resources in AppliedManifestWork %s", name)
}

func TestStatusWrittenOnlyWhenChanged(t *testing.T) {
	ctx := context.Background()
	newWork(t, "cluster1", "quiet", namespace("quiet"), configMap("quiet", "c", map[string]interface{}{"k": "v"})).create(t)
	eventuallyWork(t, "cluster1", "quiet", func(w *workv1.ManifestWork) bool {
		return applied_(w) && condIs(w.Status.Conditions, "Available", "True")
	}, "quiet applied and available")
	rv := getWork(t, "cluster1", "quiet").ResourceVersion

	// A clock: another work reads a configmap (read-only, so only the periodic
	// re-check sees changes). Each change showing up in its feedback proves
	// the agent has made another periodic pass.
	_, err := spoke1.CoreV1().ConfigMaps("quiet").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "tick", Namespace: "quiet"}, Data: map[string]string{"n": "0"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	ro := workv1.ManifestConfigOption{
		ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "quiet", Name: "tick"},
		UpdateStrategy:     &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly},
		FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: "n", Path: ".data.n"}}}},
	}
	newWork(t, "cluster1", "clock", configMap("quiet", "tick", nil)).config(ro).create(t)
	for i := 1; i <= 3; i++ {
		n := fmt.Sprint(i)
		cm, err := getCM(t, "quiet", "tick")
		require.NoError(t, err)
		cm.Data["n"] = n
		_, err = spoke1.CoreV1().ConfigMaps("quiet").Update(ctx, cm, metav1.UpdateOptions{})
		require.NoError(t, err)
		eventuallyWork(t, "cluster1", "clock", func(w *workv1.ManifestWork) bool {
			v := w.Status.ResourceStatus.Manifests
			return len(v) == 1 && len(v[0].StatusFeedbacks.Values) == 1 && *v[0].StatusFeedbacks.Values[0].Value.String == n
		}, "clock tick "+n)
	}
	assert.Equal(t, rv, getWork(t, "cluster1", "quiet").ResourceVersion, "nothing changed, so nothing was written")
	deleteWork(t, "cluster1", "clock")
	deleteWork(t, "cluster1", "quiet")
}

// TestRenamedAgentsRecordIsTakenOver: a record of a work that still exists,
// written under the agent's earlier name, becomes this agent's; nothing is
// evicted.
func TestRenamedAgentsRecordIsTakenOver(t *testing.T) {
	ctx := context.Background()
	newWork(t, "cluster1", "renamed", namespace("renamed"), configMap("renamed", "c", map[string]interface{}{"k": "v"})).create(t)
	waitApplied(t, "cluster1", "renamed")
	amw := recordedWork(t, spoke1c, "renamed", 2)
	amw.Spec.AgentID = "cluster1-before-rename"
	delete(amw.Labels, applied.ClusterLabel)
	require.NoError(t, spoke1c.Update(ctx, amw))
	require.Eventually(t, func() bool {
		a, err := appliedWork(t, spoke1c, "renamed")
		return err == nil && a.Spec.AgentID == "cluster1" && a.Labels[applied.ClusterLabel] == "cluster1"
	}, wait, tick, "the record should be taken over")
	a, err := appliedWork(t, spoke1c, "renamed")
	require.NoError(t, err)
	assert.Nil(t, a.Status.EvictionStartTime)
	cm, err := getCM(t, "renamed", "c")
	require.NoError(t, err)
	assert.Equal(t, "v", cm.Data["k"])
	deleteWork(t, "cluster1", "renamed")
}
