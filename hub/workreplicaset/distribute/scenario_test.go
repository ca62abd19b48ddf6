package distribute

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files of the division scenarios")

// scenario is testdata/division/<name>/scenario.yaml: a policy, a fleet, and
// steps; each step renders a Deployment of total replicas (asking for
// request) over the clusters listed, with the previous step's works.
type scenario struct {
	Policy   distv1alpha1.DistributionPolicySpec `json:"policy"`
	Request  corev1.ResourceList                 `json:"request,omitempty"`
	Clusters map[string]struct {
		Labels      map[string]string   `json:"labels,omitempty"`
		Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	} `json:"clusters"`
	Steps []struct {
		Name     string   `json:"name"`
		Total    int64    `json:"total"`
		Clusters []string `json:"clusters"`
	} `json:"steps"`
}

// TestDivisionScenarios runs every scenario and compares each step's shares,
// their sum and how many replicas moved with golden.txt (go test -run
// TestDivisionScenarios -update rewrites it). Every step's shares must add up
// to its total.
func TestDivisionScenarios(t *testing.T) {
	dirs, err := filepath.Glob("testdata/division/*")
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, "scenario.yaml"))
			require.NoError(t, err)
			var sc scenario
			require.NoError(t, yaml.UnmarshalStrict(raw, &sc))
			p, err := Compile(sc.Policy)
			require.NoError(t, err)
			var b strings.Builder
			previous := map[string]*workv1.ManifestWorkSpec{}
			last := map[string]int64{}
			for _, step := range sc.Steps {
				in := Input{Template: deploymentOf(step.Total, sc.Request), Previous: previous}
				for _, name := range step.Clusters {
					c := sc.Clusters[name]
					in.Clusters = append(in.Clusters, Cluster{Name: name, Labels: c.Labels, Allocatable: c.Allocatable})
				}
				out := p.Render(in)
				shares := map[string]int64{}
				var parts []string
				var total int64
				for _, name := range step.Clusters {
					w := out.Works[name]
					require.NoError(t, w.Err, "%s: %s", step.Name, name)
					n, _ := previousReplicas(&w.Spec, manifestID{Group: "apps", Kind: "Deployment", Namespace: "apps", Name: "web"})
					shares[name] = n
					total += n
					parts = append(parts, fmt.Sprintf("%s=%d", name, n))
					spec := w.Spec
					previous[name] = &spec
				}
				for name := range previous {
					if _, ok := shares[name]; !ok {
						delete(previous, name) // a cluster that left has no work any more
					}
				}
				assert.Equal(t, step.Total, total, "%s: the shares add up to the total", step.Name)
				fmt.Fprintf(&b, "%s: %s (sum %d, moved %d)\n", step.Name, strings.Join(parts, " "), total, moved(last, shares))
				last = shares
			}
			golden := filepath.Join(dir, "golden.txt")
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(b.String()), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run with -update to create %s", golden)
			assert.Equal(t, string(want), b.String())
		})
	}
}

// moved counts the replicas that changed cluster between two assignments
// (replicas added or removed overall count once).
func moved(before, after map[string]int64) int64 {
	var up, down int64
	names := map[string]bool{}
	for n := range before {
		names[n] = true
	}
	for n := range after {
		names[n] = true
	}
	keys := make([]string, 0, len(names))
	for n := range names {
		keys = append(keys, n)
	}
	sort.Strings(keys)
	for _, n := range keys {
		if d := after[n] - before[n]; d > 0 {
			up += d
		} else {
			down -= d
		}
	}
	return max(up, down)
}

func deploymentOf(replicas int64, request corev1.ResourceList) workv1.ManifestWorkSpec {
	res := ""
	if len(request) > 0 {
		var parts []string
		for name, q := range request {
			parts = append(parts, fmt.Sprintf("%q:%q", name, q.String()))
		}
		sort.Strings(parts)
		res = fmt.Sprintf(`,"resources":{"requests":{%s}}`, strings.Join(parts, ","))
	}
	return template(fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"apps"},
"spec":{"replicas":%d,"template":{"spec":{"containers":[{"name":"web","image":"nginx"%s}]}}}}`, replicas, res))
}
