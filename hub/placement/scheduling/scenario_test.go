package scheduling

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files of the scheduling scenarios")

// scenario is a multi-step scheduling story: one Placement, the fleet at each step.
// The decisions of one step are the current decisions of the next, as in the
// controller. The default set is bound in the placement's namespace.
type scenario struct {
	Placement clusterv1beta1.Placement `json:"placement"`
	Steps     []struct {
		Note     string                     `json:"note"`
		Clusters []clusterv1.ManagedCluster `json:"clusters"`
		// Counts are other placements' decisions per cluster (Balance).
		Counts map[string]int `json:"counts"`
		// Pending are the clusters of the step the hub has not accepted (a
		// join nobody accepted yet, or a deny); every other one is accepted.
		Pending []string `json:"pending"`
	} `json:"steps"`
}

// TestScenarios runs testdata/scenarios/<case>/scenario.yaml and compares the
// result of every step with golden.txt (go test -run TestScenarios -update rewrites it).
func TestScenarios(t *testing.T) {
	dirs, err := filepath.Glob("testdata/scenarios/*")
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, "scenario.yaml"))
			require.NoError(t, err)
			var sc scenario
			require.NoError(t, yaml.UnmarshalStrict(raw, &sc))
			if sc.Placement.Namespace == "" {
				sc.Placement.Namespace = ns
			}
			var out strings.Builder
			var decided []string
			for i, step := range sc.Steps {
				var fleet []*clusterv1.ManagedCluster
				for j := range step.Clusters {
					c := &step.Clusters[j]
					if c.Labels == nil {
						c.Labels = map[string]string{}
					}
					if _, ok := c.Labels["cluster.open-cluster-management.io/clusterset"]; !ok {
						c.Labels["cluster.open-cluster-management.io/clusterset"] = "default"
					}
					if !slices.Contains(step.Pending, c.Name) {
						c.Spec.HubAcceptsClient = true
						c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{
							Type: clusterv1.ManagedClusterConditionHubAccepted, Status: metav1.ConditionTrue, Reason: "HubClusterAdminAccepted"})
					}
					for k := range c.Spec.Taints {
						if c.Spec.Taints[k].TimeAdded.IsZero() {
							c.Spec.Taints[k].TimeAdded.Time = now
						}
					}
					fleet = append(fleet, c)
				}
				w := world{clusters: fleet, decided: decided, counts: step.Counts}
				res := Schedule(w.snapshot(), &sc.Placement)
				fmt.Fprintf(&out, "step %d: %s\n", i+1, step.Note)
				if res.Misconfigured != nil {
					fmt.Fprintf(&out, "  misconfigured: %v\n", res.Misconfigured)
					continue
				}
				fmt.Fprintf(&out, "  %s (satisfied=%v): %s\n", res.Reason, res.Satisfied, res.Message)
				for _, g := range res.Groups {
					fmt.Fprintf(&out, "  group %d %q: %s\n", g.Index, g.Name, strings.Join(names(g.Clusters), " "))
				}
				decided = names(res.Decisions)
			}
			golden := filepath.Join(dir, "golden.txt")
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(out.String()), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run with -update to create %s", golden)
			assert.Equal(t, string(want), out.String())
		})
	}
}
