package scheduling_test

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"flotilla.dev/flotilla/hub/placement/scheduling"
	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
	st "flotilla.dev/flotilla/hub/placement/scheduling/schedtest"
)

// Schedule is a pure function: a snapshot of the hub and a Placement in,
// the decisions and the PlacementSatisfied facts out.
func ExampleSchedule() {
	snap := &scheduling.Snapshot{
		Clusters: scheduling.NewClusterInfos([]*clusterv1.ManagedCluster{
			st.Cluster("east").Label("env", "prod").Obj(),
			st.Cluster("west").Label("env", "prod").Obj(),
			st.Cluster("lab").Label("env", "dev").Obj(),
			st.Cluster("joining").Label("env", "prod").Pending().Obj(), // never placed until accepted
		}, nil),
		ClusterSets: []*clusterv1beta2.ManagedClusterSet{st.Set("global", &metav1.LabelSelector{})},
		Bindings:    []*clusterv1beta2.ManagedClusterSetBinding{st.Binding("global", "apps")},
		Now:         time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC),
	}
	p := st.Placement("prod", "apps").Labels(map[string]string{"env": "prod"}).Obj()
	res := scheduling.Schedule(snap, p)
	for _, d := range res.Decisions {
		fmt.Println(d.ClusterName)
	}
	fmt.Println(res.Satisfied, res.Reason)
	// Output:
	// east
	// west
	// true AllDecisionsScheduled
}

// notFriday is a filter plugin of one's own: clusters labelled
// freeze=friday are left out on Fridays.
type notFriday struct{ now time.Time }

func (notFriday) Name() string { return "NotFriday" }

func (f notFriday) Filter(c *framework.ClusterInfo) *framework.Status {
	if f.now.Weekday() == time.Friday && c.Cluster.Labels["freeze"] == "friday" {
		return framework.NewStatus(framework.Unschedulable, "frozen on Fridays")
	}
	return nil
}

// A Registry is the set of plugins a pass may use: add a filter to the
// defaults and every Placement it schedules passes through it.
func ExampleRegistry() {
	reg := scheduling.DefaultRegistry()
	reg.Filters["NotFriday"] = func(h *framework.Handle) (framework.FilterPlugin, error) {
		return notFriday{now: h.Now}, nil
	}
	snap := &scheduling.Snapshot{
		Clusters: scheduling.NewClusterInfos([]*clusterv1.ManagedCluster{
			st.Cluster("east").Obj(),
			st.Cluster("west").Label("freeze", "friday").Obj(),
		}, nil),
		ClusterSets: []*clusterv1beta2.ManagedClusterSet{st.Set("global", &metav1.LabelSelector{})},
		Bindings:    []*clusterv1beta2.ManagedClusterSetBinding{st.Binding("global", "apps")},
		Now:         time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC), // a Friday
	}
	res := reg.Schedule(snap, st.Placement("all", "apps").Obj())
	for _, d := range res.Decisions {
		fmt.Println(d.ClusterName)
	}
	// Output:
	// east
}
