package spread

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
	st "flotilla.dev/flotilla/hub/placement/scheduling/schedtest"
)

// fleet: name -> zone label ("" = no label), in rank order.
func fleet(zones ...[2]string) []*framework.ClusterInfo {
	var out []*framework.ClusterInfo
	for _, z := range zones {
		b := st.Cluster(z[0])
		if z[1] != "" {
			b.Label("zone", z[1]).Claim("zone", z[1])
		}
		out = append(out, framework.NewClusterInfo(b.Obj(), nil))
	}
	return out
}

func picked(cs []*framework.ClusterInfo) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.Name())
	}
	return out
}

func TestSelect(t *testing.T) {
	ranked := fleet([2]string{"a1", "a"}, [2]string{"a2", "a"}, [2]string{"a3", "a"}, [2]string{"b1", "b"}, [2]string{"c1", "c"}, [2]string{"x", ""})
	tests := []struct {
		name      string
		placement *clusterv1beta1.Placement
		n         int
		want      []string
	}{
		{"ScheduleAnyway spreads evenly before rank", st.Placement("p", "ns").Spread("zone", false, 1, clusterv1beta1.ScheduleAnyway).Obj(), 3,
			[]string{"a1", "b1", "c1"}},
		{"ScheduleAnyway keeps going past the skew", st.Placement("p", "ns").Spread("zone", false, 1, clusterv1beta1.ScheduleAnyway).Obj(), -1,
			[]string{"a1", "b1", "c1", "a2", "a3", "x"}},
		{"maxSkew 2 lets rank win inside the skew", st.Placement("p", "ns").Spread("zone", false, 2, clusterv1beta1.ScheduleAnyway).Obj(), 3,
			[]string{"a1", "a2", "b1"}},
		{"DoNotSchedule stops at the skew", st.Placement("p", "ns").Spread("zone", false, 1, clusterv1beta1.DoNotSchedule).Obj(), -1,
			[]string{"a1", "b1", "c1", "a2"}},
		{"DoNotSchedule on a claim", st.Placement("p", "ns").Spread("zone", true, 1, clusterv1beta1.DoNotSchedule).Obj(), 2,
			[]string{"a1", "b1"}},
		{"default maxSkew is 1", st.Placement("p", "ns").Spread("zone", false, 0, clusterv1beta1.DoNotSchedule).Obj(), 5,
			[]string{"a1", "b1", "c1", "a2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(&framework.Handle{Placement: tc.placement})
			require.NoError(t, err)
			assert.Equal(t, tc.want, picked(p.Select(ranked, tc.n)))
		})
	}
}

func TestSecondConstraintBreaksTies(t *testing.T) {
	// zone first, then rack: with zones even, prefer an unused rack.
	var ranked []*framework.ClusterInfo
	for _, c := range [][3]string{{"a1", "a", "r1"}, {"a2", "a", "r2"}, {"b1", "b", "r1"}, {"b2", "b", "r2"}} {
		ranked = append(ranked, framework.NewClusterInfo(st.Cluster(c[0]).Label("zone", c[1]).Label("rack", c[2]).Obj(), nil))
	}
	p, err := New(&framework.Handle{Placement: st.Placement("p", "ns").
		Spread("zone", false, 1, clusterv1beta1.DoNotSchedule).Spread("rack", false, 1, clusterv1beta1.ScheduleAnyway).Obj()})
	require.NoError(t, err)
	assert.Equal(t, []string{"a1", "b2"}, picked(p.Select(ranked, 2)))
}

func TestNoConstraintsNoPlugin(t *testing.T) {
	p, err := New(&framework.Handle{Placement: st.Placement("p", "ns").Obj()})
	require.NoError(t, err)
	assert.Nil(t, p)
}

func TestInvalid(t *testing.T) {
	pl := st.Placement("p", "ns").Spread("zone", false, 1, "Sometimes").Obj()
	_, err := New(&framework.Handle{Placement: pl})
	assert.ErrorContains(t, err, "whenUnsatisfiable")
}
