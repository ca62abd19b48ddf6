package placement_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	st "flotilla.dev/flotilla/hub/placement/scheduling/schedtest"
	"flotilla.dev/flotilla/internal/scheme"
)

// A cluster that moves from one PlacementDecision to another (here: it leaves the
// canary decision group) is listed on some page at every moment a watcher can
// observe: the page gaining it is written before the page losing it.
func TestDecisionRewriteNeverDropsAStayingCluster(t *testing.T) {
	s := newScope(t, "rewrite")
	s.cluster("rewrite-a", map[string]string{"canary": "true"})
	s.cluster("rewrite-b", map[string]string{"canary": "true"})
	s.cluster("rewrite-c", nil)
	s.placement(st.Placement("p", "").Group("canary", map[string]string{"canary": "true"}).Obj())
	pages := func(c *assert.CollectT, want ...string) {
		var list clusterv1beta1.PlacementDecisionList
		assert.NoError(c, hub.List(s.ctx, &list, client.InNamespace(s.ns)))
		assert.Equal(c, want, renderDecisions(list.Items))
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pages(c, "p-decision-1[0]: rewrite-a,rewrite-b", "p-decision-2[1]: rewrite-c")
	}, timeout, tick)

	// Replay every change a watcher sees from here on.
	var list clusterv1beta1.PlacementDecisionList
	require.NoError(t, hub.List(s.ctx, &list, client.InNamespace(s.ns)))
	wc, err := client.NewWithWatch(hubConfig, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	w, err := wc.Watch(ctx, &clusterv1beta1.PlacementDecisionList{}, client.InNamespace(s.ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	require.NoError(t, err)
	defer w.Stop()
	var mu sync.Mutex
	state := map[string]clusterv1beta1.PlacementDecision{}
	for _, d := range list.Items {
		state[d.Name] = d
	}
	var missing []string
	var seen []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			d, ok := ev.Object.(*clusterv1beta1.PlacementDecision)
			if !ok {
				continue
			}
			mu.Lock()
			if ev.Type == watch.Deleted {
				delete(state, d.Name)
			} else {
				state[d.Name] = *d
			}
			var items []clusterv1beta1.PlacementDecision
			for _, v := range state {
				items = append(items, v)
			}
			seen = append(seen, fmt.Sprint(renderDecisions(items)))
			listed := map[string]bool{}
			for _, v := range items {
				for _, cd := range v.Status.Decisions {
					listed[cd.ClusterName] = true
				}
			}
			for _, c := range []string{"rewrite-a", "rewrite-b", "rewrite-c"} {
				if !listed[c] {
					missing = append(missing, fmt.Sprintf("%s missing after %s %s", c, ev.Type, d.Name))
				}
			}
			mu.Unlock()
		}
	}()

	// rewrite-b leaves the canary group: it moves from p-decision-1 to p-decision-2.
	s.patchCluster("rewrite-b", func(c *clusterv1.ManagedCluster) { delete(c.Labels, "canary") }, false)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) > 0 && seen[len(seen)-1] == "[p-decision-1[0]: rewrite-a p-decision-2[1]: rewrite-b,rewrite-c]"
	}, timeout, tick, "the watcher sees the final pages")
	w.Stop()
	<-done
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, missing, "states seen: %v", seen)
}

// renderDecisions shows pages as "name[group]: clusters", sorted.
func renderDecisions(items []clusterv1beta1.PlacementDecision) []string {
	out := []string{}
	for _, d := range items {
		var names []string
		for _, cd := range d.Status.Decisions {
			names = append(names, cd.ClusterName)
		}
		sort.Strings(names)
		out = append(out, fmt.Sprintf("%s[%s]: %s", d.Name, d.Labels[clusterv1beta1.DecisionGroupIndexLabel], strings.Join(names, ",")))
	}
	sort.Strings(out)
	return out
}
