package install_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/addons/framework"
	"flotilla.dev/flotilla/addons/install"
)

var adcType = addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"}

func use(name string) []addonv1alpha1.AddOnConfig {
	return []addonv1alpha1.AddOnConfig{{ConfigGroupResource: adcType, ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "cfg", Name: name}}}
}

// setLevel creates or updates AddOnDeploymentConfig cfg/name with customized
// variable level, and returns its spec hash.
func setLevel(t *testing.T, name, level string) string {
	t.Helper()
	ctx := context.Background()
	adc := &addonv1alpha1.AddOnDeploymentConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "cfg", Name: name}}
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		err := hubCli.Get(ctx, client.ObjectKeyFromObject(adc), adc)
		adc.Spec.CustomizedVariables = []addonv1alpha1.CustomizedVariable{{Name: "level", Value: level}}
		if err != nil {
			return hubCli.Create(ctx, adc)
		}
		return hubCli.Update(ctx, adc)
	}))
	require.NoError(t, hubCli.Get(ctx, client.ObjectKeyFromObject(adc), adc))
	h, err := framework.SpecHash(adc)
	require.NoError(t, err)
	return h
}

// decide makes Placement ns cfg/name (scheduling disabled) decide clusters.
func decide(t *testing.T, name string, clusters ...string) {
	t.Helper()
	ctx := context.Background()
	p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "cfg", Name: name,
		Annotations: map[string]string{clusterv1beta1.PlacementDisableAnnotation: "true"}}}
	require.NoError(t, hubCli.Create(ctx, p))
	d := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "cfg", Name: name + "-decision-1",
		Labels: map[string]string{clusterv1beta1.PlacementLabel: name, clusterv1beta1.DecisionGroupIndexLabel: "0"}}}
	require.NoError(t, hubCli.Create(ctx, d))
	for _, c := range clusters {
		d.Status.Decisions = append(d.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: c})
	}
	require.NoError(t, hubCli.Status().Update(ctx, d))
}

func updateCMA(t *testing.T, name string, change func(*addonv1alpha1.ClusterManagementAddOn)) {
	t.Helper()
	ctx := context.Background()
	require.Eventually(t, func() bool {
		return hubCli.Get(ctx, client.ObjectKey{Name: name}, &addonv1alpha1.ClusterManagementAddOn{}) == nil
	}, timeout, tick, "the hub creates ClusterManagementAddOn %s", name)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cma addonv1alpha1.ClusterManagementAddOn
		if err := hubCli.Get(ctx, client.ObjectKey{Name: name}, &cma); err != nil {
			return err
		}
		change(&cma)
		return hubCli.Update(ctx, &cma)
	}))
}

func cma(t *testing.T, name string) *addonv1alpha1.ClusterManagementAddOn {
	var c addonv1alpha1.ClusterManagementAddOn
	require.NoError(t, hubCli.Get(context.Background(), client.ObjectKey{Name: name}, &c))
	return &c
}

func mca(cluster, addon string) *addonv1alpha1.ManagedClusterAddOn {
	var m addonv1alpha1.ManagedClusterAddOn
	if hubCli.Get(context.Background(), client.ObjectKey{Namespace: cluster, Name: addon}, &m) != nil {
		return nil
	}
	return &m
}

// hashes are the addon's desired and last applied spec hash on cluster (its first config).
func hashes(cluster, addon string) (desired, applied string) {
	m := mca(cluster, addon)
	if m == nil || len(m.Status.ConfigReferences) == 0 || m.Status.ConfigReferences[0].DesiredConfig == nil {
		return "", ""
	}
	ref := m.Status.ConfigReferences[0]
	if ref.LastAppliedConfig != nil {
		applied = ref.LastAppliedConfig.SpecHash
	}
	return ref.DesiredConfig.SpecHash, applied
}

func configured(cluster, addon string) metav1.Condition {
	if m := mca(cluster, addon); m != nil {
		if c := meta.FindStatusCondition(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionConfigured); c != nil {
			return *c
		}
	}
	return metav1.Condition{}
}

func progression(t *testing.T, addon string) (addonv1alpha1.InstallProgression, metav1.Condition) {
	c := cma(t, addon)
	if len(c.Status.InstallProgressions) == 0 {
		return addonv1alpha1.InstallProgression{}, metav1.Condition{}
	}
	p := c.Status.InstallProgressions[0]
	if cond := meta.FindStatusCondition(p.Conditions, "Progressing"); cond != nil {
		return p, *cond
	}
	return p, metav1.Condition{}
}

// TestPlacementConfigOverridesDefault: the default config applies to an addon
// no placement decides, the placement's config to the clusters it decides, and
// an addon's own spec.configs to its cluster; the spec hashes show on the
// ManagedClusterAddOns and on the ClusterManagementAddOn.
func TestPlacementConfigOverridesDefault(t *testing.T) {
	ctx := context.Background()
	hDefault, hTeam, hOwn := setLevel(t, "tuned-default", "default"), setLevel(t, "tuned-team", "team"), setLevel(t, "tuned-own", "own")
	require.NoError(t, hubCli.Create(ctx, &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c2", Name: "tuned"},
		Spec: addonv1alpha1.ManagedClusterAddOnSpec{Configs: use("tuned-own")}}))
	require.NoError(t, hubCli.Create(ctx, &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c3", Name: "tuned"}}))
	decide(t, "tuned", "c1", "c2")
	updateCMA(t, "tuned", func(c *addonv1alpha1.ClusterManagementAddOn) {
		c.Spec.SupportedConfigs = []addonv1alpha1.ConfigMeta{{ConfigGroupResource: adcType, DefaultConfig: &addonv1alpha1.ConfigReferent{Namespace: "cfg", Name: "tuned-default"}}}
		c.Spec.InstallStrategy = addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements, Placements: []addonv1alpha1.PlacementStrategy{{
			PlacementRef: addonv1alpha1.PlacementRef{Namespace: "cfg", Name: "tuned"}, Configs: use("tuned-team"),
			RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}}}}
	})

	want := map[string][2]string{"c1": {"team", hTeam}, "c2": {"own", hOwn}, "c3": {"default", hDefault}}
	for c, w := range want {
		require.Eventually(t, func() bool {
			d, a := hashes(c, "tuned")
			return level(t, c, "tuned") == w[0] && d == w[1] && a == w[1]
		}, timeout, tick, "%s runs the %s config, applied with its hash", c, w[0])
		got := configured(c, "tuned")
		assert.Equal(t, "True/ConfigurationsConfigured", string(got.Status)+"/"+got.Reason, c)
	}
	require.Eventually(t, func() bool {
		p, cond := progression(t, "tuned")
		return cond.Reason == addonv1alpha1.ProgressingReasonCompleted && len(p.ConfigReferences) == 1 &&
			p.ConfigReferences[0].LastKnownGoodConfig != nil && p.ConfigReferences[0].LastKnownGoodConfig.SpecHash == hTeam
	}, timeout, tick, "the installProgression completes with the placement's config as last known good")
	p, _ := progression(t, "tuned")
	assert.Equal(t, "tuned-team", p.ConfigReferences[0].DesiredConfig.Name)
	assert.Equal(t, hTeam, p.ConfigReferences[0].LastAppliedConfig.SpecHash)
	defaults := cma(t, "tuned").Status.DefaultConfigReferences
	require.Len(t, defaults, 1)
	assert.Equal(t, "tuned-default", defaults[0].DesiredConfig.Name)
	assert.Equal(t, hDefault, defaults[0].DesiredConfig.SpecHash)
	assert.Nil(t, mca("c4", "tuned"), "no placement decides c4")
}

// TestConfigRolloutProgressive: a changed config reaches the four clusters of
// a Progressive placement (maxConcurrency 2) two at a time: the others keep
// their works and show Configured False until their turn, which comes when a
// cluster of the first wave has applied the change and is Available.
func TestConfigRolloutProgressive(t *testing.T) {
	v1 := setLevel(t, "waved-cfg", "1")
	decide(t, "waved", clusters...)
	updateCMA(t, "waved", func(c *addonv1alpha1.ClusterManagementAddOn) {
		c.Spec.SupportedConfigs = []addonv1alpha1.ConfigMeta{{ConfigGroupResource: adcType, DefaultConfig: &addonv1alpha1.ConfigReferent{Namespace: "cfg", Name: "waved-cfg"}}}
		c.Spec.InstallStrategy = addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements, Placements: []addonv1alpha1.PlacementStrategy{{
			PlacementRef: addonv1alpha1.PlacementRef{Namespace: "cfg", Name: "waved"},
			RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive,
				Progressive: &clusterv1alpha1.RolloutProgressive{MaxConcurrency: intstr.FromInt32(2)}}}}}
	})
	for _, c := range clusters {
		require.Eventually(t, func() bool { _, a := hashes(c, "waved"); return a == v1 && level(t, c, "waved") == "1" }, timeout, tick, "%s installed with v1", c)
	}

	// inFlight: clusters given the new config that have not applied it yet.
	count := func(hash string) (inFlight, done, waiting []string) {
		for _, c := range clusters {
			d, a := hashes(c, "waved")
			switch {
			case d == hash && a == hash:
				done = append(done, c)
			case d == hash:
				inFlight = append(inFlight, c)
			case configured(c, "waved").Reason == install.ReasonNotConfigured:
				waiting = append(waiting, c)
			}
		}
		return
	}
	agent.hold(true, clusters...)
	v2 := setLevel(t, "waved-cfg", "2")
	var first []string
	require.Eventually(t, func() bool {
		inFlight, _, waiting := count(v2)
		first = inFlight
		return len(inFlight) == 2 && len(waiting) == 2
	}, timeout, tick, "two clusters get the change, two wait")
	for _, c := range clusters {
		if c == first[0] || c == first[1] {
			require.Eventually(t, func() bool { return level(t, c, "waved") == "2" }, timeout, tick, "%s's works carry the change", c)
		} else {
			assert.Equal(t, "1", level(t, c, "waved"), "%s keeps its works until its turn", c)
			cond := configured(c, "waved")
			assert.Equal(t, metav1.ConditionFalse, cond.Status, c)
		}
	}
	_, cond := progression(t, "waved")
	assert.Equal(t, "True/Progressing", string(cond.Status)+"/"+cond.Reason)

	// One cluster of the first wave applies: exactly one more starts.
	agent.hold(false, first[0])
	require.Eventually(t, func() bool {
		inFlight, done, waiting := count(v2)
		require.LessOrEqual(t, len(inFlight), 2, "at most maxConcurrency clusters are being updated: %v", inFlight)
		return len(done) == 1 && len(inFlight) == 2 && len(waiting) == 1
	}, timeout, tick, "the next cluster gets its turn")

	agent.hold(false, clusters...)
	require.Eventually(t, func() bool {
		inFlight, done, _ := count(v2)
		require.LessOrEqual(t, len(inFlight), 2, "at most maxConcurrency clusters are being updated: %v", inFlight)
		return len(done) == 4
	}, timeout, tick, "every cluster applies the change")
	for _, c := range clusters {
		assert.Equal(t, "2", level(t, c, "waved"))
	}
	require.Eventually(t, func() bool {
		p, cond := progression(t, "waved")
		return cond.Reason == addonv1alpha1.ProgressingReasonCompleted && p.ConfigReferences[0].LastKnownGoodConfig != nil &&
			p.ConfigReferences[0].LastKnownGoodConfig.SpecHash == v2
	}, timeout, tick, "the progression completes with v2")
}

// TestBrokenConfig: a placement naming a missing config fails its
// installProgression and marks its clusters' addons Configured False naming
// it, while their works stay and the addon elsewhere is untouched; an
// addon's own config of an unsupported type is refused on that addon only.
func TestBrokenConfig(t *testing.T) {
	ctx := context.Background()
	setLevel(t, "fragile-default", "default")
	setLevel(t, "fragile-team", "team")
	require.NoError(t, hubCli.Create(ctx, &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c4", Name: "fragile"}}))
	decide(t, "fragile", "c1")
	strategy := func(config string) func(c *addonv1alpha1.ClusterManagementAddOn) {
		return func(c *addonv1alpha1.ClusterManagementAddOn) {
			c.Spec.SupportedConfigs = []addonv1alpha1.ConfigMeta{{ConfigGroupResource: adcType, DefaultConfig: &addonv1alpha1.ConfigReferent{Namespace: "cfg", Name: "fragile-default"}}}
			c.Spec.InstallStrategy = addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements, Placements: []addonv1alpha1.PlacementStrategy{{
				PlacementRef: addonv1alpha1.PlacementRef{Namespace: "cfg", Name: "fragile"}, Configs: use(config)}}}
		}
	}
	updateCMA(t, "fragile", strategy("fragile-team"))
	require.Eventually(t, func() bool { return level(t, "c1", "fragile") == "team" }, timeout, tick)

	updateCMA(t, "fragile", strategy("fragile-missing"))
	var got metav1.Condition
	require.Eventually(t, func() bool {
		got = configured("c1", "fragile")
		return got.Reason == install.ReasonConfigNotFound
	}, timeout, tick, "c1's addon says its config is missing")
	assert.Equal(t, metav1.ConditionFalse, got.Status)
	assert.Contains(t, got.Message, "AddOnDeploymentConfig cfg/fragile-missing does not exist")
	assert.Contains(t, got.Message, "Placement cfg/fragile")
	require.Eventually(t, func() bool {
		_, cond := progression(t, "fragile")
		return cond.Reason == addonv1alpha1.ProgressingReasonFailed
	}, timeout, tick)
	_, cond := progression(t, "fragile")
	assert.Contains(t, cond.Message, "cfg/fragile-missing")
	assert.Equal(t, "team", level(t, "c1", "fragile"), "the works delivered so far stay")
	c4 := configured("c4", "fragile")
	assert.Equal(t, "True/ConfigurationsConfigured", string(c4.Status)+"/"+c4.Reason, "the addon on another cluster is unaffected")
	assert.Equal(t, "default", level(t, "c4", "fragile"))

	// Once the config exists, c1 takes it.
	setLevel(t, "fragile-missing", "found")
	require.Eventually(t, func() bool {
		return level(t, "c1", "fragile") == "found" && configured("c1", "fragile").Status == metav1.ConditionTrue
	}, timeout, tick, "the placement recovers")

	// A config of a type the addon does not support, on c4's addon only.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m := mca("c4", "fragile")
		m.Spec.Configs = []addonv1alpha1.AddOnConfig{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "example.com", Resource: "things"},
			ConfigReferent: addonv1alpha1.ConfigReferent{Name: "x"}}}
		return hubCli.Update(ctx, m)
	}))
	require.Eventually(t, func() bool { return configured("c4", "fragile").Reason == install.ReasonConfigUnsupported }, timeout, tick)
	assert.Contains(t, configured("c4", "fragile").Message, "does not support")
	assert.Equal(t, metav1.ConditionTrue, configured("c1", "fragile").Status, "c1 is unaffected")
}
