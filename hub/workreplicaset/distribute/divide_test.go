package distribute

import (
	"math"
	"math/rand"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func sum(m map[string]int64) int64 {
	var s int64
	for _, v := range m {
		s += v
	}
	return s
}

func TestDivide(t *testing.T) {
	w := func(pairs ...any) []Weight {
		var out []Weight
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, Weight{Cluster: pairs[i].(string), Weight: int64(pairs[i+1].(int))})
		}
		return out
	}
	tests := []struct {
		name    string
		total   int64
		weights []Weight
		want    map[string]int64
		err     string
	}{
		{"2:1 over three clusters (eu 2, us 1)", 30, w("eu-1", 2, "eu-2", 2, "us-1", 1), map[string]int64{"eu-1": 12, "eu-2": 12, "us-1": 6}, ""},
		{"one eu cluster gone", 30, w("eu-1", 2, "us-1", 1), map[string]int64{"eu-1": 20, "us-1": 10}, ""},
		{"remainders go to the largest, then by name", 10, w("a", 1, "b", 1, "c", 1), map[string]int64{"a": 4, "b": 3, "c": 3}, ""},
		{"larger weight wins a tied remainder", 1, w("a", 1, "b", 3), map[string]int64{"a": 0, "b": 1}, ""},
		{"weight 0 gets nothing", 7, w("a", 0, "b", 1), map[string]int64{"a": 0, "b": 7}, ""},
		{"zero total", 0, w("a", 1), map[string]int64{"a": 0}, ""},
		{"fewer replicas than clusters", 2, w("a", 1, "b", 1, "c", 1), map[string]int64{"a": 1, "b": 1, "c": 0}, ""},
		{"no positive weight", 5, w("a", 0, "b", 0), nil, "no cluster has a positive weight among 2"},
		{"negative weight", 5, w("a", -1), nil, "negative weight"},
		{"no clusters", 5, nil, nil, "no cluster has a positive weight among 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Divide(tc.total, tc.weights)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.total, sum(got))
		})
	}
}

func TestRebalance(t *testing.T) {
	tests := []struct {
		name             string
		total            int64
		clusters         []string
		target, previous map[string]int64
		want             map[string]int64
	}{
		{"same clusters, same total: previous stays although the target moved", 30, []string{"a", "b", "c"},
			map[string]int64{"a": 15, "b": 10, "c": 5}, map[string]int64{"a": 10, "b": 10, "c": 10}, map[string]int64{"a": 10, "b": 10, "c": 10}},
		{"a cluster left: its share goes to those furthest below their target", 30, []string{"a", "b"},
			map[string]int64{"a": 20, "b": 10}, map[string]int64{"a": 10, "b": 10, "c": 10}, map[string]int64{"a": 20, "b": 10}},
		{"a cluster returns: it gets its target, taken from those above theirs (only 6 replicas move)", 30, []string{"a", "b", "c"},
			map[string]int64{"a": 12, "b": 12, "c": 6}, map[string]int64{"a": 20, "b": 10}, map[string]int64{"a": 14, "b": 10, "c": 6}},
		{"total grows: added below target first", 33, []string{"a", "b", "c"},
			map[string]int64{"a": 11, "b": 11, "c": 11}, map[string]int64{"a": 10, "b": 10, "c": 10}, map[string]int64{"a": 11, "b": 11, "c": 11}},
		{"no previous: the target", 7, []string{"a", "b"}, map[string]int64{"a": 4, "b": 3}, nil, map[string]int64{"a": 4, "b": 3}},
		{"total shrinks to zero", 0, []string{"a", "b"}, map[string]int64{"a": 0, "b": 0}, map[string]int64{"a": 3, "b": 2}, map[string]int64{"a": 0, "b": 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Rebalance(tc.total, tc.clusters, tc.target, tc.previous)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.total, sum(got))
		})
	}
}

func TestFit(t *testing.T) {
	rl := func(cpu, mem string) corev1.ResourceList {
		out := corev1.ResourceList{}
		if cpu != "" {
			out[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			out[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return out
	}
	tests := []struct {
		name        string
		req, alloc  corev1.ResourceList
		want        int64
		wantBounded bool
	}{
		{"cpu bound", rl("500m", "128Mi"), rl("4", "16Gi"), 8, true},
		{"memory bound", rl("100m", "1Gi"), rl("4", "3Gi"), 3, true},
		{"resource the cluster does not list", rl("100m", "1Gi"), rl("4", ""), 0, true},
		{"no requests: unbounded", rl("", ""), rl("4", "16Gi"), 0, false},
		{"does not fit", rl("8", ""), rl("4", ""), 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, ok := Fit(tc.req, tc.alloc)
			assert.Equal(t, tc.wantBounded, ok)
			assert.Equal(t, tc.want, n)
		})
	}
}

// TestDivideHugeTotals: the shares add up to total at any size (a float
// product once lost replicas there, and Divide then indexed past its
// remainders and panicked).
func TestDivideHugeTotals(t *testing.T) {
	ws := []Weight{{"a", 3}, {"b", 7}, {"c", 9999}, {"d", 1}, {"e", 1 << 30}}
	for _, total := range []int64{math.MaxInt64, math.MaxInt64 - 12345, 1 << 62, 3<<61 + 17, math.MaxInt32} {
		got, err := Divide(total, ws)
		require.NoError(t, err, "total %d", total)
		assert.Equal(t, total, sum(got), "total %d", total)
	}
}

// rebalanceOneByOne is Rebalance's documented rule taken literally: one
// replica at a time. TestRebalanceAgreesWithOneByOne checks the leveled
// Rebalance against it.
func rebalanceOneByOne(total int64, clusters []string, target, previous map[string]int64) map[string]int64 {
	out := map[string]int64{}
	var s int64
	for _, c := range clusters {
		if p, ok := previous[c]; ok && p >= 0 && p <= total {
			out[c] = p
		} else {
			out[c] = target[c]
		}
		s += out[c]
	}
	sorted := append([]string(nil), clusters...)
	sort.Strings(sorted)
	for s != total {
		best, bestGap := "", int64(math.MinInt64)
		for _, c := range sorted {
			gap := target[c] - out[c]
			if s > total {
				if out[c] == 0 {
					continue
				}
				gap = -gap
			}
			if gap > bestGap {
				best, bestGap = c, gap
			}
		}
		if s < total {
			out[best]++
			s++
		} else {
			out[best]--
			s--
		}
	}
	return out
}

func TestRebalanceAgreesWithOneByOne(t *testing.T) {
	r := rand.New(rand.NewSource(31))
	names := []string{"a", "b", "c", "d", "e", "f"}
	for i := 0; i < 2000; i++ {
		n := 1 + r.Intn(len(names))
		clusters := names[:n]
		total := int64(r.Intn(200))
		ws := make([]Weight, 0, n)
		for _, c := range clusters {
			ws = append(ws, Weight{c, int64(1 + r.Intn(5))})
		}
		target, err := Divide(total, ws)
		require.NoError(t, err)
		previous := map[string]int64{}
		for _, c := range names {
			if r.Intn(3) > 0 {
				previous[c] = int64(r.Intn(150))
			}
		}
		if r.Intn(2) == 0 && len(previous) == n {
			continue
		}
		want := rebalanceOneByOne(total, clusters, target, previous)
		got := Rebalance(total, clusters, target, previous)
		require.Equal(t, want, got, "total %d clusters %v target %v previous %v", total, clusters, target, previous)
	}
}

// TestRebalanceLargeTotal: a total of 2^31-1 replicas (the largest a
// workload can ask for) after a previous division of 3 ends, with the shares
// adding up (a replica at a time it once took billions of steps per
// cluster, holding the hub's reconcile).
func TestRebalanceLargeTotal(t *testing.T) {
	clusters := []string{"a", "b", "c"}
	target, err := Divide(math.MaxInt32, []Weight{{"a", 1}, {"b", 1}, {"c", 1}})
	require.NoError(t, err)
	got := Rebalance(math.MaxInt32, clusters, target, map[string]int64{"a": 1, "b": 1, "c": 1, "gone": 5})
	assert.Equal(t, target, got)
	got = Rebalance(3, clusters, map[string]int64{"a": 1, "b": 1, "c": 1}, got)
	assert.Equal(t, map[string]int64{"a": 1, "b": 1, "c": 1}, got)
}
