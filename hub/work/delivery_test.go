package work

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

func TestHoldFor(t *testing.T) {
	wasAccepted := []metav1.Condition{{Type: clusterv1.ManagedClusterConditionHubAccepted, Status: metav1.ConditionTrue}}
	mk := func(accepts, deleting bool, conds []metav1.Condition) *clusterv1.ManagedCluster {
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: accepts},
			Status: clusterv1.ManagedClusterStatus{Conditions: conds}}
		if deleting {
			now := metav1.Now()
			mc.DeletionTimestamp = &now
		}
		return mc
	}
	tests := []struct {
		name, reason, message string
		mc                    *clusterv1.ManagedCluster
	}{
		{name: "no cluster", mc: nil},
		{name: "accepted", mc: mk(true, false, wasAccepted)},
		{name: "denied, before the hub saw it", mc: mk(false, false, wasAccepted), reason: ReasonClusterDenied, message: "is denied by the hub"},
		{name: "never accepted", mc: mk(false, false, nil), reason: ReasonClusterDenied, message: "is not accepted"},
		{name: "being deleted", mc: mk(true, true, wasAccepted), reason: ReasonClusterDeleting, message: "can only be deleted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := HoldFor(tt.mc)
			assert.Equal(t, tt.reason, h.Reason)
			if tt.message == "" {
				assert.Empty(t, h.Message)
				return
			}
			assert.Contains(t, h.Message, tt.message)
			assert.Contains(t, h.Message, "c1")
		})
	}
}

func TestHeldConditions(t *testing.T) {
	cond := func(typ string, st metav1.ConditionStatus, reason string, gen int64) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: reason, ObservedGeneration: gen}
	}
	work := func(gen int64, conds ...metav1.Condition) *workv1.ManifestWork {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "web", Generation: gen}}
		w.Status.Conditions = conds
		return w
	}
	appliedManifestAt := func(w *workv1.ManifestWork, gen int64) *workv1.ManifestWork {
		w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{Conditions: []metav1.Condition{
			cond(workv1.ManifestApplied, metav1.ConditionTrue, "AppliedManifestComplete", gen)}}}
		return w
	}
	denied := Hold{Reason: ReasonClusterDenied, Message: "cluster c1 is denied"}
	appliedAt2 := cond(workv1.WorkApplied, metav1.ConditionTrue, "AppliedManifestWorkComplete", 2)
	heldAt2 := func() *workv1.ManifestWork {
		w := appliedManifestAt(work(3, appliedAt2), 2)
		w.Status.Conditions = heldConditions(w, denied)
		return w
	}
	tests := []struct {
		name        string
		work        *workv1.ManifestWork
		hold        Hold
		wantReason  string // "" = no change
		wantMessage string
	}{
		{name: "delivering, never held: the agent's conditions stay", work: work(3, appliedAt2), hold: Hold{}},
		{name: "denied after applying generation 2 of 3", work: appliedManifestAt(work(3, appliedAt2), 2), hold: denied,
			wantReason: ReasonClusterDenied, wantMessage: "the last generation it applied is 2"},
		{name: "denied before any report", work: work(1), hold: denied,
			wantReason: ReasonClusterDenied, wantMessage: "it has applied no generation"},
		{name: "already shown", work: heldAt2(), hold: denied},
		{name: "accepted again: waiting for the agent", work: work(4, cond(workv1.WorkApplied, metav1.ConditionUnknown, ReasonClusterDenied, 4)), hold: Hold{},
			wantReason: ReasonAwaitingAgent, wantMessage: "apply generation 4"},
		{name: "the agent has reported since", work: work(4, cond(workv1.WorkApplied, metav1.ConditionTrue, "AppliedManifestWorkComplete", 4)), hold: Hold{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := heldConditions(tt.work, tt.hold)
			if tt.wantReason == "" {
				assert.Nil(t, got)
				return
			}
			for _, typ := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
				c := meta.FindStatusCondition(got, typ)
				require.NotNil(t, c, typ)
				assert.Equal(t, metav1.ConditionUnknown, c.Status)
				assert.Equal(t, tt.wantReason, c.Reason)
				assert.Contains(t, c.Message, tt.wantMessage)
				assert.Equal(t, tt.work.Generation, c.ObservedGeneration)
			}
		})
	}
}
