package rollout

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// c builds a cluster: group index, state, and how long ago it entered the state.
func c(name string, group int32, state State, ago time.Duration) Cluster {
	return Cluster{Name: name, GroupIndex: group, State: state, Since: now.Add(-ago)}
}

func progressiveStrategy(maxConc string, cfg clusterv1alpha1.RolloutConfig, mandatory ...clusterv1alpha1.MandatoryDecisionGroup) clusterv1alpha1.RolloutStrategy {
	return clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{
		RolloutConfig: cfg, MaxConcurrency: intstr.Parse(maxConc),
		MandatoryDecisionGroups: clusterv1alpha1.MandatoryDecisionGroups{MandatoryDecisionGroups: mandatory}}}
}

func perGroupStrategy(cfg clusterv1alpha1.RolloutConfig, mandatory ...clusterv1alpha1.MandatoryDecisionGroup) clusterv1alpha1.RolloutStrategy {
	return clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.ProgressivePerGroup, ProgressivePerGroup: &clusterv1alpha1.RolloutProgressivePerGroup{
		RolloutConfig: cfg, MandatoryDecisionGroups: clusterv1alpha1.MandatoryDecisionGroups{MandatoryDecisionGroups: mandatory}}}
}

func applied(p Plan) []string {
	out := []string{}
	for n := range p.Apply {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func TestCompute(t *testing.T) {
	fresh := []Cluster{c("a", 0, ToApply, 0), c("b", 0, ToApply, 0), c("c", 1, ToApply, 0), c("d", 1, ToApply, 0)}
	// five clusters in one group: the default concurrency (largest group) is all five.
	five := []Cluster{c("a", 0, ToApply, 0), c("b", 0, ToApply, 0), c("c", 0, ToApply, 0), c("d", 0, ToApply, 0), c("e", 0, ToApply, 0)}
	twoFailed := []Cluster{c("a", 0, Failed, 0), c("b", 0, Failed, 0), c("c", 0, Succeeded, 0), c("d", 0, ToApply, 0), c("e", 0, ToApply, 0)}
	tests := []struct {
		name     string
		strategy clusterv1alpha1.RolloutStrategy
		clusters []Cluster
		apply    []string
		complete bool
		stopped  bool
		timedOut []string
		requeue  time.Duration
	}{
		{"All: everyone at once", clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}, fresh,
			[]string{"a", "b", "c", "d"}, false, false, nil, 0},
		{"empty type means All", clusterv1alpha1.RolloutStrategy{}, fresh,
			[]string{"a", "b", "c", "d"}, false, false, nil, 0},
		{"All complete", clusterv1alpha1.RolloutStrategy{}, []Cluster{c("a", 0, Succeeded, 0)},
			[]string{"a"}, true, false, nil, 0},
		{"Progressive maxConcurrency 1 starts one", progressiveStrategy("1", clusterv1alpha1.RolloutConfig{}), fresh,
			[]string{"a"}, false, false, nil, 0},
		{"Progressive waits while one is in flight",
			progressiveStrategy("1", clusterv1alpha1.RolloutConfig{}),
			[]Cluster{c("a", 0, Progressing, time.Minute), c("b", 0, ToApply, 0)},
			[]string{"a"}, false, false, nil, 0},
		{"Progressive moves on when one succeeds",
			progressiveStrategy("2", clusterv1alpha1.RolloutConfig{}),
			[]Cluster{c("a", 0, Succeeded, time.Minute), c("b", 0, Progressing, 0), c("c", 1, ToApply, 0), c("d", 1, ToApply, 0)},
			[]string{"a", "b", "c"}, false, false, nil, 0},
		{"Progressive percent concurrency", progressiveStrategy("50%", clusterv1alpha1.RolloutConfig{}), fresh,
			[]string{"a", "b"}, false, false, nil, 0},
		{"Progressive 10% of 5 is 1 at a time (rounds up, never unlimited)", progressiveStrategy("10%", clusterv1alpha1.RolloutConfig{}), five,
			[]string{"a"}, false, false, nil, 0},
		{"Progressive 1% of 5 is 1 at a time", progressiveStrategy("1%", clusterv1alpha1.RolloutConfig{}), five,
			[]string{"a"}, false, false, nil, 0},
		{"Progressive 50% of 5 is 3 at a time", progressiveStrategy("50%", clusterv1alpha1.RolloutConfig{}), five,
			[]string{"a", "b", "c"}, false, false, nil, 0},
		{"Progressive 100% of 5 is all", progressiveStrategy("100%", clusterv1alpha1.RolloutConfig{}), five,
			[]string{"a", "b", "c", "d", "e"}, false, false, nil, 0},
		{"Progressive 0% falls back to the largest group (as OCM)", progressiveStrategy("0%", clusterv1alpha1.RolloutConfig{}), fresh,
			[]string{"a", "b"}, false, false, nil, 0},
		{"Progressive maxFailures 10% of 5 tolerates 1", progressiveStrategy("1", clusterv1alpha1.RolloutConfig{MaxFailures: intstr.FromString("10%")}),
			[]Cluster{c("a", 0, Failed, 0), c("b", 0, Succeeded, 0), c("c", 0, ToApply, 0), c("d", 0, ToApply, 0), c("e", 0, ToApply, 0)},
			[]string{"a", "b", "c"}, false, false, nil, 0},
		{"Progressive maxFailures 30% of 5 tolerates 2 (1.5 rounds up)", progressiveStrategy("1", clusterv1alpha1.RolloutConfig{MaxFailures: intstr.FromString("30%")}),
			twoFailed, []string{"a", "b", "c", "d"}, false, false, nil, 0},
		{"Progressive maxFailures 20% of 5 stops at 2 failures", progressiveStrategy("1", clusterv1alpha1.RolloutConfig{MaxFailures: intstr.FromString("20%")}),
			twoFailed, []string{"a", "b", "c"}, false, true, nil, 0},
		{"PerGroup maxFailures 10% of a group of 5 tolerates 1",
			perGroupStrategy(clusterv1alpha1.RolloutConfig{MaxFailures: intstr.FromString("10%")}),
			[]Cluster{c("a", 0, Failed, 0), c("b", 0, Succeeded, 0), c("c", 0, Succeeded, 0), c("d", 0, Succeeded, 0), c("e", 0, Succeeded, 0), c("f", 1, ToApply, 0)},
			[]string{"a", "b", "c", "d", "e", "f"}, false, false, nil, 0},
		{"Progressive default concurrency is the largest group", progressiveStrategy("", clusterv1alpha1.RolloutConfig{}), fresh,
			[]string{"a", "b"}, false, false, nil, 0},
		{"Progressive stops on a failure by default",
			progressiveStrategy("1", clusterv1alpha1.RolloutConfig{}),
			[]Cluster{c("a", 0, Failed, 0), c("b", 0, ToApply, 0)},
			[]string{"a"}, false, true, nil, 0},
		{"Progressive tolerates maxFailures",
			progressiveStrategy("1", clusterv1alpha1.RolloutConfig{MaxFailures: intstr.FromInt32(1)}),
			[]Cluster{c("a", 0, Failed, 0), c("b", 0, ToApply, 0)},
			[]string{"a", "b"}, false, false, nil, 0},
		{"Progressive soaks for minSuccessTime",
			progressiveStrategy("1", clusterv1alpha1.RolloutConfig{MinSuccessTime: metav1.Duration{Duration: 5 * time.Minute}}),
			[]Cluster{c("a", 0, Succeeded, time.Minute), c("b", 0, ToApply, 0)},
			[]string{"a"}, false, false, nil, 4 * time.Minute},
		{"Progressive after the soak",
			progressiveStrategy("1", clusterv1alpha1.RolloutConfig{MinSuccessTime: metav1.Duration{Duration: 5 * time.Minute}}),
			[]Cluster{c("a", 0, Succeeded, 6*time.Minute), c("b", 0, ToApply, 0)},
			[]string{"a", "b"}, false, false, nil, 0},
		{"Progressive deadline pending asks to requeue",
			progressiveStrategy("1", clusterv1alpha1.RolloutConfig{ProgressDeadline: "10m"}),
			[]Cluster{c("a", 0, Progressing, 4*time.Minute), c("b", 0, ToApply, 0)},
			[]string{"a"}, false, false, nil, 6 * time.Minute},
		{"Progressive deadline passed counts as failure and stops",
			progressiveStrategy("1", clusterv1alpha1.RolloutConfig{ProgressDeadline: "10m"}),
			[]Cluster{c("a", 0, Progressing, 11*time.Minute), c("b", 0, ToApply, 0)},
			[]string{"a"}, false, true, []string{"a"}, 0},
		{"Progressive timeout within maxFailures frees the slot",
			progressiveStrategy("1", clusterv1alpha1.RolloutConfig{ProgressDeadline: "10m", MaxFailures: intstr.FromString("50%")}),
			[]Cluster{c("a", 0, Progressing, 11*time.Minute), c("b", 0, ToApply, 0)},
			[]string{"a", "b"}, false, false, []string{"a"}, 0},
		{"Progressive mandatory group goes first",
			progressiveStrategy("1", clusterv1alpha1.RolloutConfig{}, clusterv1alpha1.MandatoryDecisionGroup{GroupIndex: 1}), fresh,
			[]string{"c"}, false, false, nil, 0},
		{"Progressive non-mandatory waits for the mandatory group",
			progressiveStrategy("3", clusterv1alpha1.RolloutConfig{}, clusterv1alpha1.MandatoryDecisionGroup{GroupIndex: 1}),
			[]Cluster{c("a", 0, ToApply, 0), c("b", 0, ToApply, 0), c("c", 1, Succeeded, time.Minute), c("d", 1, Progressing, 0)},
			[]string{"c", "d"}, false, false, nil, 0},
		{"Progressive mandatory failure stops despite maxFailures",
			progressiveStrategy("1", clusterv1alpha1.RolloutConfig{MaxFailures: intstr.FromInt32(3)}, clusterv1alpha1.MandatoryDecisionGroup{GroupIndex: 1}),
			[]Cluster{c("a", 0, ToApply, 0), c("c", 1, Failed, 0)},
			[]string{"c"}, false, true, nil, 0},
		{"Progressive complete", progressiveStrategy("1", clusterv1alpha1.RolloutConfig{}),
			[]Cluster{c("a", 0, Succeeded, 0), c("b", 0, Succeeded, 0)},
			[]string{"a", "b"}, true, false, nil, 0},
		{"PerGroup starts the first group", perGroupStrategy(clusterv1alpha1.RolloutConfig{}), fresh,
			[]string{"a", "b"}, false, false, nil, 0},
		{"PerGroup waits for the whole group",
			perGroupStrategy(clusterv1alpha1.RolloutConfig{}),
			[]Cluster{c("a", 0, Succeeded, 0), c("b", 0, Progressing, 0), c("c", 1, ToApply, 0)},
			[]string{"a", "b"}, false, false, nil, 0},
		{"PerGroup next group when done",
			perGroupStrategy(clusterv1alpha1.RolloutConfig{}),
			[]Cluster{c("a", 0, Succeeded, 0), c("b", 0, Succeeded, 0), c("c", 1, ToApply, 0), c("d", 1, ToApply, 0)},
			[]string{"a", "b", "c", "d"}, false, false, nil, 0},
		{"PerGroup failure stops",
			perGroupStrategy(clusterv1alpha1.RolloutConfig{}),
			[]Cluster{c("a", 0, Succeeded, 0), c("b", 0, Failed, 0), c("c", 1, ToApply, 0)},
			[]string{"a", "b"}, false, true, nil, 0},
		{"PerGroup maxFailures is per group",
			perGroupStrategy(clusterv1alpha1.RolloutConfig{MaxFailures: intstr.FromString("50%")}),
			[]Cluster{c("a", 0, Succeeded, 0), c("b", 0, Failed, 0), c("c", 1, ToApply, 0)},
			[]string{"a", "b", "c"}, false, false, nil, 0},
		{"PerGroup mandatory group first",
			perGroupStrategy(clusterv1alpha1.RolloutConfig{}, clusterv1alpha1.MandatoryDecisionGroup{GroupName: "canary"}),
			[]Cluster{c("a", 0, ToApply, 0), {Name: "z", GroupIndex: 1, GroupName: "canary", State: ToApply}},
			[]string{"z"}, false, false, nil, 0},
		{"already-updated clusters keep the template even when stopped",
			progressiveStrategy("1", clusterv1alpha1.RolloutConfig{}),
			[]Cluster{c("a", 0, Failed, 0), c("b", 0, Succeeded, 0), c("c", 0, ToApply, 0)},
			[]string{"a", "b"}, false, true, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compute(tc.strategy, tc.clusters, now)
			require.NoError(t, err)
			assert.Equal(t, tc.apply, applied(p))
			assert.Equal(t, tc.complete, p.Complete, "complete")
			assert.Equal(t, tc.stopped, p.Stopped, "stopped: %s", p.Reason)
			assert.Equal(t, tc.timedOut, p.TimedOut)
			assert.Equal(t, tc.requeue, p.RequeueAfter)
			assert.NotEmpty(t, p.Reason)
		})
	}
}

func TestInvalidStrategies(t *testing.T) {
	for name, s := range map[string]clusterv1alpha1.RolloutStrategy{
		"type":           {Type: "Sometimes"},
		"deadline":       progressiveStrategy("1", clusterv1alpha1.RolloutConfig{ProgressDeadline: "soon"}),
		"maxFailures":    progressiveStrategy("1", clusterv1alpha1.RolloutConfig{MaxFailures: intstr.FromString("150%")}),
		"maxConcurrency": progressiveStrategy("lots", clusterv1alpha1.RolloutConfig{}),
	} {
		_, err := Compute(s, nil, now)
		assert.Error(t, err, name)
		assert.ErrorContains(t, Validate(s), "rolloutStrategy", name)
	}
}
