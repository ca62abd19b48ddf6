package scheduling

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	st "flotilla.dev/flotilla/hub/placement/scheduling/schedtest"
)

func TestMayAffect(t *testing.T) {
	base := st.Cluster("c").Label("env", "prod").Label("zone", "a").Claim("region", "eu").Allocatable("4", "8Gi").Obj()
	with := func(f func(*clusterv1.ManagedCluster)) *clusterv1.ManagedCluster {
		c := base.DeepCopy()
		f(c)
		return c
	}
	relabel := with(func(c *clusterv1.ManagedCluster) { c.Labels["env"] = "dev" })
	otherLabel := with(func(c *clusterv1.ManagedCluster) { c.Labels["owner"] = "team-a" })
	zone := with(func(c *clusterv1.ManagedCluster) { c.Labels["zone"] = "b" })
	claim := with(func(c *clusterv1.ManagedCluster) { c.Status.ClusterClaims[0].Value = "us" })
	taint := with(func(c *clusterv1.ManagedCluster) {
		c.Spec.Taints = []clusterv1.Taint{{Key: "k", Effect: clusterv1.TaintEffectNoSelect, TimeAdded: metav1.NewTime(time.Now())}}
	})
	moved := with(func(c *clusterv1.ManagedCluster) { c.Labels["cluster.open-cluster-management.io/clusterset"] = "other" })
	alloc := with(func(c *clusterv1.ManagedCluster) { c.Status.Allocatable = nil })
	annotated := with(func(c *clusterv1.ManagedCluster) { c.Annotations = map[string]string{"a": "b"} })
	pending := with(func(c *clusterv1.ManagedCluster) { c.Spec.HubAcceptsClient, c.Status.Conditions = false, nil })
	denied := with(func(c *clusterv1.ManagedCluster) { c.Spec.HubAcceptsClient = false })

	byEnv := st.Placement("p", ns).Labels(map[string]string{"env": "prod"}).Obj()
	byClaim := st.Placement("p", ns).Claim("region", "eu").Obj()
	byCEL := st.Placement("p", ns).CEL(`true`).Obj()
	spread := st.Placement("p", ns).Spread("zone", false, 1, clusterv1beta1.ScheduleAnyway).Obj()
	grouped := st.Placement("p", ns).Group("canary", map[string]string{"zone": "b"}).Obj()
	byCPU := st.Placement("p", ns).Prioritizer("ResourceAllocatableCPU", 1).Number(1).Obj()
	plain := st.Placement("p", ns).Obj()

	tests := []struct {
		name    string
		p       *clusterv1beta1.Placement
		old     *clusterv1.ManagedCluster
		new     *clusterv1.ManagedCluster
		setKeys map[string]bool
		want    bool
	}{
		{"creation", plain, nil, base, nil, true},
		{"deletion", plain, base, nil, nil, true},
		{"nothing relevant (annotation)", byEnv, base, annotated, nil, false},
		{"selected label changed", byEnv, base, relabel, nil, true},
		{"unrelated label changed", byEnv, base, otherLabel, nil, false},
		{"label used by a label-selector set", plain, base, otherLabel, map[string]bool{"owner": true}, true},
		{"set label changed", plain, base, moved, nil, true},
		{"taints changed", plain, base, taint, nil, true},
		{"selected claim changed", byClaim, base, claim, nil, true},
		{"claim change, label placement", byEnv, base, claim, nil, false},
		{"CEL sees everything", byCEL, base, otherLabel, nil, true},
		{"spread topology key", spread, base, zone, nil, true},
		{"decision group key", grouped, base, zone, nil, true},
		{"allocatable with CPU prioritizer", byCPU, base, alloc, nil, true},
		{"allocatable without", byEnv, base, alloc, nil, false},
		{"accepted (the hub granted its rights)", byEnv, pending, base, nil, true},
		{"denied", byEnv, base, denied, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, MayAffect(tc.p, tc.old, tc.new, tc.setKeys))
		})
	}
}
