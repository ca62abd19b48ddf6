package tainttoleration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
	st "flotilla.dev/flotilla/hub/placement/scheduling/schedtest"
)

var now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestFilter(t *testing.T) {
	secs := func(s int64) *int64 { return &s }
	exists := func(key string) clusterv1beta1.Toleration {
		return clusterv1beta1.Toleration{Key: key, Operator: clusterv1beta1.TolerationOpExists}
	}
	tests := []struct {
		name        string
		taint       clusterv1.Taint
		tolerations []clusterv1beta1.Toleration
		decided     bool
		want        bool
		requeue     time.Duration
	}{
		{"NoSelect untolerated", taint("k", "v", clusterv1.TaintEffectNoSelect, now), nil, false, false, 0},
		{"NoSelect untolerated even when decided", taint("k", "v", clusterv1.TaintEffectNoSelect, now), nil, true, false, 0},
		{"Exists on key", taint("k", "v", clusterv1.TaintEffectNoSelect, now), []clusterv1beta1.Toleration{exists("k")}, false, true, 0},
		{"Equal with value", taint("k", "v", clusterv1.TaintEffectNoSelect, now),
			[]clusterv1beta1.Toleration{{Key: "k", Value: "v"}}, false, true, 0},
		{"Equal with other value", taint("k", "v", clusterv1.TaintEffectNoSelect, now),
			[]clusterv1beta1.Toleration{{Key: "k", Value: "w"}}, false, false, 0},
		{"empty key Exists tolerates everything", taint("k", "v", clusterv1.TaintEffectNoSelect, now),
			[]clusterv1beta1.Toleration{{Operator: clusterv1beta1.TolerationOpExists}}, false, true, 0},
		{"empty key Equal tolerates nothing", taint("k", "", clusterv1.TaintEffectNoSelect, now),
			[]clusterv1beta1.Toleration{{}}, false, false, 0},
		{"effect must match", taint("k", "v", clusterv1.TaintEffectNoSelect, now),
			[]clusterv1beta1.Toleration{{Key: "k", Operator: clusterv1beta1.TolerationOpExists, Effect: clusterv1.TaintEffectNoSelectIfNew}}, false, false, 0},
		{"tolerationSeconds still running", taint("k", "", clusterv1.TaintEffectNoSelect, now.Add(-10*time.Second)),
			[]clusterv1beta1.Toleration{{Key: "k", Operator: clusterv1beta1.TolerationOpExists, TolerationSeconds: secs(60)}}, false, true, 50 * time.Second},
		{"tolerationSeconds expired", taint("k", "", clusterv1.TaintEffectNoSelect, now.Add(-61*time.Second)),
			[]clusterv1beta1.Toleration{{Key: "k", Operator: clusterv1beta1.TolerationOpExists, TolerationSeconds: secs(60)}}, false, false, 0},
		{"forever beats seconds", taint("k", "", clusterv1.TaintEffectNoSelect, now),
			[]clusterv1beta1.Toleration{{Key: "k", Operator: clusterv1beta1.TolerationOpExists, TolerationSeconds: secs(60)}, exists("k")}, false, true, 0},
		{"NoSelectIfNew new", taint("k", "", clusterv1.TaintEffectNoSelectIfNew, now), nil, false, false, 0},
		{"NoSelectIfNew decided", taint("k", "", clusterv1.TaintEffectNoSelectIfNew, now), nil, true, true, 0},
		{"PreferNoSelect is not filtered", taint("k", "", clusterv1.TaintEffectPreferNoSelect, now), nil, false, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := st.Cluster("c1").Obj()
			c.Spec.Taints = []clusterv1.Taint{tc.taint}
			p := st.Placement("p", "ns").Obj()
			p.Spec.Tolerations = tc.tolerations
			f, _ := New(&framework.Handle{Placement: p, Now: now, Decided: map[string]bool{"c1": tc.decided}})
			st := f.Filter(framework.NewClusterInfo(c, nil))
			assert.Equal(t, tc.want, st.IsSuccess(), "status %+v", st)
			var requeue time.Duration
			if st != nil {
				requeue = st.RequeueAfter
			}
			assert.Equal(t, tc.requeue, requeue)
		})
	}
}

func TestPrefer(t *testing.T) {
	c := st.Cluster("c").Taint("maint", "", clusterv1.TaintEffectPreferNoSelect, now).Obj()
	assert.False(t, Prefer(nil, c, now))
	assert.True(t, Prefer([]clusterv1beta1.Toleration{{Key: "maint", Operator: clusterv1beta1.TolerationOpExists}}, c, now))
	assert.True(t, Prefer(nil, st.Cluster("clean").Obj(), now))
}

func taint(k, v string, e clusterv1.TaintEffect, added time.Time) clusterv1.Taint {
	return st.Cluster("x").Taint(k, v, e, added).Obj().Spec.Taints[0]
}
