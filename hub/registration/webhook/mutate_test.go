package webhook

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	jsonpatchv5 "github.com/evanphx/json-patch/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"flotilla.dev/flotilla/internal/scheme"
)

var now = time.Date(2026, 11, 27, 9, 0, 0, 500, time.UTC)

func request(t *testing.T, op admissionv1.Operation, c *clusterv1.ManagedCluster) admission.Request {
	t.Helper()
	raw, err := json.Marshal(c)
	require.NoError(t, err)
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op, Object: runtime.RawExtension{Raw: raw}}}
}

// apply applies the response's JSON patch to c, as the apiserver does.
func apply(t *testing.T, c *clusterv1.ManagedCluster, patches any) *clusterv1.ManagedCluster {
	t.Helper()
	raw, err := json.Marshal(c)
	require.NoError(t, err)
	ops, err := json.Marshal(patches)
	require.NoError(t, err)
	p, err := jsonpatchv5.DecodePatch(ops)
	require.NoError(t, err)
	raw, err = p.Apply(raw)
	require.NoError(t, err)
	got := &clusterv1.ManagedCluster{}
	require.NoError(t, json.Unmarshal(raw, got))
	return got
}

func TestDefaulter(t *testing.T) {
	d := &Defaulter{Now: func() time.Time { return now }}
	unreachable := clusterv1.Taint{Key: clusterv1.ManagedClusterTaintUnreachable, Effect: clusterv1.TaintEffectNoSelect, TimeAdded: metav1.NewTime(now.Truncate(time.Second))}
	gpu := clusterv1.Taint{Key: "gpu", Value: "a100", Effect: clusterv1.TaintEffectPreferNoSelect, TimeAdded: metav1.NewTime(now.Add(-time.Hour).Truncate(time.Second))}
	earlier := unreachable
	earlier.TimeAdded = metav1.NewTime(now.Add(-time.Minute).Truncate(time.Second))
	cleanup := []string{clusterv1.ManagedClusterFinalizer}
	tests := []struct {
		name       string
		op         admissionv1.Operation
		taints     []clusterv1.Taint
		finalizers []string
		accept     bool
		want       []clusterv1.Taint // nil: no patch
		wantFin    []string
	}{
		{name: "a pending join is stored tainted unreachable", op: admissionv1.Create, want: []clusterv1.Taint{unreachable}},
		{name: "a cluster an admin creates accepted too: it has no Available condition either", op: admissionv1.Create, accept: true,
			want: []clusterv1.Taint{unreachable}},
		{name: "its own taints stay", op: admissionv1.Create, taints: []clusterv1.Taint{gpu}, want: []clusterv1.Taint{gpu, unreachable}},
		{name: "already tainted and finalized (a reinvocation): unchanged", op: admissionv1.Create, taints: []clusterv1.Taint{earlier}, finalizers: cleanup},
		{name: "tainted, not finalized: the finalizer is added, the taint kept", op: admissionv1.Create, taints: []clusterv1.Taint{earlier},
			want: []clusterv1.Taint{earlier}, wantFin: cleanup},
		{name: "finalized, not tainted: the taint is added, the finalizer kept", op: admissionv1.Create, finalizers: cleanup,
			want: []clusterv1.Taint{unreachable}, wantFin: cleanup},
		{name: "its own finalizers stay", op: admissionv1.Create, finalizers: []string{"example.com/keep"},
			want: []clusterv1.Taint{unreachable}, wantFin: []string{"example.com/keep", clusterv1.ManagedClusterFinalizer}},
		{name: "unavailable is replaced: a new cluster's availability is unknown", op: admissionv1.Create,
			taints: []clusterv1.Taint{{Key: clusterv1.ManagedClusterTaintUnavailable, Effect: clusterv1.TaintEffectNoSelect}}, want: []clusterv1.Taint{unreachable}},
		{name: "updates are the health controller's", op: admissionv1.Update},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &clusterv1.ManagedCluster{TypeMeta: metav1.TypeMeta{APIVersion: "cluster.open-cluster-management.io/v1", Kind: "ManagedCluster"},
				ObjectMeta: metav1.ObjectMeta{Name: "c1", Finalizers: tc.finalizers}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: tc.accept, Taints: tc.taints}}
			resp := d.Handle(context.Background(), request(t, tc.op, c))
			require.True(t, resp.Allowed, resp.Result)
			if tc.want == nil {
				assert.Empty(t, resp.Patches)
				return
			}
			got := apply(t, c, resp.Patches)
			for i := range got.Spec.Taints {
				got.Spec.Taints[i].TimeAdded = metav1.NewTime(got.Spec.Taints[i].TimeAdded.UTC())
			}
			assert.Equal(t, tc.want, got.Spec.Taints)
			assert.True(t, HasNewClusterTaint(got.Spec.Taints))
			if tc.wantFin == nil {
				tc.wantFin = cleanup
			}
			assert.Equal(t, tc.wantFin, got.Finalizers)
			assert.Equal(t, tc.accept, got.Spec.HubAcceptsClient, "nothing else changes")
		})
	}
}

// TestDefaulterLeavesTheRestToValidation: a field the Go types cannot read (a
// caBundle that is not base64) is the schema's to refuse, in its own words,
// after the mutating webhooks: the taint is added and nothing else is touched,
// numbers included.
func TestDefaulterLeavesTheRestToValidation(t *testing.T) {
	d := &Defaulter{Now: func() time.Time { return now }}
	raw := []byte(`{"apiVersion":"cluster.open-cluster-management.io/v1","kind":"ManagedCluster","metadata":{"name":"c1"},` +
		`"spec":{"leaseDurationSeconds":9007199254740993,"managedClusterClientConfigs":[{"url":"https://c1","caBundle":"not base64!"}]}}`)
	resp := d.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}}})
	require.True(t, resp.Allowed, resp.Result)
	var paths []string
	for _, p := range resp.Patches {
		paths = append(paths, p.Path)
	}
	assert.ElementsMatch(t, []string{"/spec/taints", "/metadata/finalizers"}, paths, "two patches: the taints and the finalizer")

	// Taints it cannot read: let through unchanged (the validating webhook refuses it untainted).
	raw = []byte(`{"metadata":{"name":"c1"},"spec":{"taints":[{"key":"k","effect":"NoSelect","timeAdded":"yesterday"}]}}`)
	resp = d.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}}})
	assert.True(t, resp.Allowed)
	assert.Empty(t, resp.Patches)
}

func TestValidatorRefusesAnUntaintedNewCluster(t *testing.T) {
	v := &Validator{Decoder: admission.NewDecoder(scheme.New())}
	c := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	resp := v.Handle(context.Background(), request(t, admissionv1.Create, c))
	assert.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "must be created with taint cluster.open-cluster-management.io/unreachable")

	taints, _ := NewClusterTaints(nil, now)
	c.Spec.Taints = taints
	resp = v.Handle(context.Background(), request(t, admissionv1.Create, c))
	assert.True(t, resp.Allowed, resp.Result)
}
