// Package undecodable_test checks, on real apiservers with the whole hub
// (hub.Run), that objects no Go client can decode (an int32 field holding
// 2^31, which the CRDs' `type: integer` lets through) harm only themselves:
// every other Placement is still scheduled, and the hub names each bad object
// once in its log and in an Event on it.
package undecodable_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/hub"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/internal/tolerant"
	"flotilla.dev/flotilla/test/testenv"
)

const (
	timeout = 60 * time.Second
	tick    = 200 * time.Millisecond
)

// logBuffer collects the hub's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(&l.buf, prefix, args)
}

// count returns how many lines contain every one of parts.
func (l *logBuffer) count(parts ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range strings.Split(l.buf.String(), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

func obj(apiVersion, kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// allowUndecodable removes the bindings of Flotilla's admission policies (which
// refuse such objects, when they are installed) and waits until a bad object
// can be stored: this test is about the objects that got in anyway.
func allowUndecodable(t *testing.T, ctx context.Context, admin client.Client, probe *unstructured.Unstructured) {
	t.Helper()
	var bindings admissionregistrationv1.ValidatingAdmissionPolicyBindingList
	require.NoError(t, admin.List(ctx, &bindings))
	for _, b := range bindings.Items {
		if strings.HasPrefix(b.Name, "flotilla-") {
			require.NoError(t, client.IgnoreNotFound(admin.Delete(ctx, &b)))
		}
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NoError(c, admin.Create(ctx, probe.DeepCopy()))
	}, timeout, tick, "a bad %s is still refused", probe.GetKind())
}

func TestUndecodableObjectsHarmOnlyThemselves(t *testing.T) {
	logs := &logBuffer{}
	ctrl.SetLogger(funcr.New(logs.add, funcr.Options{}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := testenv.Start(t, testenv.Options{})
	admin, err := client.New(env.Hub.Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	for _, ns := range []string{"tenant-bad", "tenant-good", "cluster-bad"} {
		require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}

	// Before the hub starts: a Placement, a ManifestWorkReplicaSet, a
	// ManagedCluster and a ManifestWork
	// that cannot be decoded, so the hub's first lists hold them.
	allowUndecodable(t, ctx, admin, obj("cluster.open-cluster-management.io/v1beta1", "Placement", "tenant-bad", "bad-placement",
		map[string]any{"numberOfClusters": int64(2147483648)}))
	// While the hub runs, its webhook refuses a replica set it cannot decode.
	require.NoError(t, admin.Create(ctx, obj("work.open-cluster-management.io/v1alpha1", "ManifestWorkReplicaSet", "tenant-bad", "bad-replicaset",
		map[string]any{"placementRefs": []any{map[string]any{"name": "bad-placement",
			"rolloutStrategy": map[string]any{"type": "Progressive", "progressive": map[string]any{"maxConcurrency": int64(2147483648)}}}},
			"manifestWorkTemplate": map[string]any{"workload": map[string]any{"manifests": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "rs", "namespace": "default"}}}}}})))
	require.NoError(t, admin.Create(ctx, obj("cluster.open-cluster-management.io/v1", "ManagedCluster", "", "bad-cluster",
		map[string]any{"hubAcceptsClient": false, "leaseDurationSeconds": int64(2147483648)})))
	work := obj("work.open-cluster-management.io/v1", "ManifestWork", "cluster-bad", "bad-work", map[string]any{
		"workload": map[string]any{"manifests": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "cm", "namespace": "default"}}}}})
	require.NoError(t, admin.Create(ctx, work))
	require.NoError(t, admin.Status().Patch(ctx, work, client.RawPatch(types.MergePatchType,
		[]byte(`{"status":{"resourceStatus":{"manifests":[{"resourceMeta":{"ordinal":2147483648},"conditions":[]}]}}}`))))

	ready := make(chan struct{})
	hubDone := make(chan error, 1)
	go func() { hubDone <- hub.Run(ctx, hub.Options{Config: env.Hub.Config, Ready: func() { close(ready) }}) }()
	select {
	case <-ready:
	case err := <-hubDone:
		t.Fatalf("hub: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("hub did not become ready")
	}
	defer func() { cancel(); <-hubDone }()

	// A tenant with a good cluster and a good Placement is scheduled.
	require.NoError(t, admin.Create(ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "good"}}))
	require.NoError(t, admin.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "good", Namespace: "tenant-good"}, Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "good"}}))
	require.NoError(t, admin.Create(ctx, &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "good-cluster", Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "good"}},
		Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}))
	// The cluster has no agent: tolerate its unreachable/unavailable taints.
	tolerate := []clusterv1beta1.Toleration{
		{Key: clusterv1.ManagedClusterTaintUnreachable, Operator: clusterv1beta1.TolerationOpExists},
		{Key: clusterv1.ManagedClusterTaintUnavailable, Operator: clusterv1beta1.TolerationOpExists},
	}
	placement := func(name string) {
		require.NoError(t, admin.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant-good"},
			Spec: clusterv1beta1.PlacementSpec{Tolerations: tolerate}}))
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			var list clusterv1beta1.PlacementDecisionList
			require.NoError(c, admin.List(ctx, &list, client.InNamespace("tenant-good"), client.MatchingLabels{clusterv1beta1.PlacementLabel: name}))
			var got []string
			for _, d := range list.Items {
				for _, cd := range d.Status.Decisions {
					got = append(got, cd.ClusterName)
				}
			}
			assert.Equal(c, []string{"good-cluster"}, got)
		}, timeout, tick, "Placement tenant-good/%s is not scheduled while bad objects exist", name)
	}
	placement("first")

	// A Placement that turns undecodable while the hub runs (through the watch)
	// does not stop the next one either.
	late := obj("cluster.open-cluster-management.io/v1beta1", "Placement", "tenant-bad", "late-bad-placement", map[string]any{})
	require.NoError(t, admin.Create(ctx, late))
	require.NoError(t, admin.Status().Patch(ctx, late, client.RawPatch(types.MergePatchType,
		[]byte(`{"status":{"numberOfSelectedClusters":2147483648}}`))))
	placement("second")

	// Each bad object is named once in the hub's log, and in an Event on it.
	for _, bad := range []struct{ kind, ns, name string }{
		{"Placement", "tenant-bad", "bad-placement"},
		{"ManagedCluster", "", "bad-cluster"},
		{"ManifestWork", "cluster-bad", "bad-work"},
		{"ManifestWorkReplicaSet", "tenant-bad", "bad-replicaset"},
		{"Placement", "tenant-bad", "late-bad-placement"},
	} {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.Equal(c, 1, logs.count("cannot be decoded", `"kind"="`+bad.kind+`"`, `"name"="`+bad.name+`"`, "2147483648"),
				"log lines naming %s %s", bad.kind, bad.name)
		}, timeout, tick)
		if bad.ns == "" {
			continue // an Event on a cluster-scoped object lives in "default"
		}
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			var events eventsv1.EventList
			require.NoError(c, admin.List(ctx, &events, client.InNamespace(bad.ns)))
			found := false
			for _, e := range events.Items {
				found = found || (e.Reason == tolerant.ReasonUndecodable && e.Regarding.Name == bad.name && e.Regarding.Kind == bad.kind)
			}
			assert.True(c, found, "no %s Event on %s %s/%s", tolerant.ReasonUndecodable, bad.kind, bad.ns, bad.name)
		}, timeout, tick)
	}
	// However often informers relist, still once.
	placement("third")
	assert.Equal(t, 1, logs.count("cannot be decoded", `"name"="bad-placement"`))
}
