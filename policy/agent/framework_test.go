package agent

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

func TestSooner(t *testing.T) {
	for _, tc := range []struct{ a, b, want time.Duration }{
		{0, 0, 0},
		{gatekeeperRetry, 0, gatekeeperRetry},
		{0, time.Second, time.Second},
		{gatekeeperRetry, time.Second, time.Second},
		{time.Second, gatekeeperRetry, time.Second},
	} {
		assert.Equal(t, tc.want, sooner(tc.a, tc.b), "sooner(%s, %s)", tc.a, tc.b)
	}
}

// The watches map what changed to the replica it concerns, in the cluster
// namespace.
func TestWatchesMapToTheReplica(t *testing.T) {
	y := &syncer{ns: "c1"}
	req := func(name string) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: "c1", Name: name}}}
	}
	ctx := context.Background()
	compliance := &corev1.Event{Reason: EventReason("c1", "cfg"), InvolvedObject: corev1.ObjectReference{Kind: "Policy", Name: "p.a"}}
	assert.Equal(t, req("p.a"), y.eventRecorded(ctx, compliance))
	other := compliance.DeepCopy()
	other.Reason = "Scheduled"
	assert.Empty(t, y.eventRecorded(ctx, other), "not a compliance event")
	pod := compliance.DeepCopy()
	pod.InvolvedObject.Kind = "Pod"
	assert.Empty(t, y.eventRecorded(ctx, pod), "not about a policy")
	tpl := &policyv1.ConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Labels: map[string]string{PolicyLabel: "p.a"}}}
	assert.Equal(t, req("p.a"), y.templateChanged(ctx, tpl))
}
