package work

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
)

func TestExpiryFor(t *testing.T) {
	done := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	work := func(ttl *int64, complete metav1.ConditionStatus, labels map[string]string) *workv1.ManifestWork {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
		if ttl != nil {
			w.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeForeground, TTLSecondsAfterFinished: ttl}
		}
		if complete != "" {
			w.Status.Conditions = []metav1.Condition{{Type: "Complete", Status: complete, LastTransitionTime: metav1.NewTime(done)}}
		}
		return w
	}
	deleting := work(ptr.To[int64](0), "True", nil)
	deleting.DeletionTimestamp = &metav1.Time{Time: done}
	for _, tc := range []struct {
		name string
		w    *workv1.ManifestWork
		now  time.Time
		want Expiry
	}{
		{"no ttl", work(nil, "True", nil), done.Add(time.Hour), Expiry{}},
		{"not complete", work(ptr.To[int64](10), "False", nil), done.Add(time.Hour), Expiry{}},
		{"no Complete condition", work(ptr.To[int64](10), "", nil), done.Add(time.Hour), Expiry{}},
		{"zero: at once", work(ptr.To[int64](0), "True", nil), done, Expiry{Now: true}},
		{"waits for the ttl", work(ptr.To[int64](60), "True", nil), done.Add(20 * time.Second), Expiry{After: 40 * time.Second}},
		{"ttl passed", work(ptr.To[int64](60), "True", nil), done.Add(61 * time.Second), Expiry{Now: true}},
		{"replica set works are the replica set's", work(ptr.To[int64](0), "True", map[string]string{"work.open-cluster-management.io/manifestworkreplicaset": "ns.rs"}), done, Expiry{}},
		{"being deleted", deleting, done, Expiry{}},
		{"negative (refused at admission) never deletes", work(ptr.To[int64](-1), "True", nil), done.Add(time.Hour), Expiry{}},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, ExpiryFor(tc.w, tc.now)) })
	}
}
