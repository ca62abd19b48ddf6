package install

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"flotilla.dev/flotilla/hub/workreplicaset/rollout"
)

// configs is a fake config store: name -> spec hash (missing: not found).
type configs map[string]string

func (c configs) resolve(cfg addonv1alpha1.AddOnConfig, cluster string) (addonv1alpha1.ConfigReference, *ConfigProblem) {
	r := ref(cfg.Name, c[cfg.Name])
	if _, ok := c[cfg.Name]; !ok {
		return r, &ConfigProblem{Reason: ReasonConfigNotFound, Message: "AddOnDeploymentConfig ns/" + cfg.Name + " does not exist"}
	}
	return r, nil
}

func use(name string) []addonv1alpha1.AddOnConfig {
	return []addonv1alpha1.AddOnConfig{{ConfigGroupResource: adc, ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "ns", Name: name}}}
}

func cmaWith(defaultConfig string, placements ...addonv1alpha1.PlacementStrategy) *addonv1alpha1.ClusterManagementAddOn {
	cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "cma-uid"}}
	cma.Spec.SupportedConfigs = []addonv1alpha1.ConfigMeta{{ConfigGroupResource: adc}}
	if defaultConfig != "" {
		cma.Spec.SupportedConfigs[0].DefaultConfig = &addonv1alpha1.ConfigReferent{Namespace: "ns", Name: defaultConfig}
	}
	cma.Spec.InstallStrategy.Type = addonv1alpha1.AddonInstallStrategyManual
	if len(placements) > 0 {
		cma.Spec.InstallStrategy = addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements, Placements: placements}
	}
	return cma
}

func placement(name string, configs []addonv1alpha1.AddOnConfig, s clusterv1alpha1.RolloutStrategy) addonv1alpha1.PlacementStrategy {
	return addonv1alpha1.PlacementStrategy{PlacementRef: addonv1alpha1.PlacementRef{Namespace: "ns", Name: name}, Configs: configs, RolloutStrategy: s}
}

func decided(ps addonv1alpha1.PlacementStrategy, clusters ...string) Placement {
	p := Placement{PlacementStrategy: ps}
	for _, c := range clusters {
		p.Clusters = append(p.Clusters, rollout.Cluster{Name: c})
	}
	return p
}

// rolledOut is an addon on cluster whose configs are applied and which is Available.
func rolledOut(cluster string, refs ...addonv1alpha1.ConfigReference) *addonv1alpha1.ManagedClusterAddOn {
	m := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: cluster}}
	for _, r := range refs {
		m.Status.ConfigReferences = append(m.Status.ConfigReferences, applied(r))
	}
	long := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for _, t := range []string{"Configured", "ManifestApplied", "Available"} {
		m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, LastTransitionTime: long})
	}
	return m
}

func desiredOf(st *addonv1alpha1.ManagedClusterAddOnStatus) string {
	if st == nil || len(st.ConfigReferences) == 0 {
		return ""
	}
	return st.ConfigReferences[0].DesiredConfig.Name + "@" + st.ConfigReferences[0].DesiredConfig.SpecHash
}

func configured(st *addonv1alpha1.ManagedClusterAddOnStatus) string {
	if st == nil {
		return ""
	}
	c := meta.FindStatusCondition(st.Conditions, "Configured")
	if c == nil {
		return ""
	}
	return string(c.Status) + "/" + c.Reason
}

var now = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func TestPlanConfigLayers(t *testing.T) {
	store := configs{"default": "hd", "team": "ht", "mine": "hm"}
	cma := cmaWith("default", placement("p", use("team"), clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}))
	own := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "c2"}, Spec: addonv1alpha1.ManagedClusterAddOnSpec{Configs: use("mine")}}
	manual := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "c9"}}
	d := Plan(Snapshot{CMA: cma, Placements: []Placement{decided(cma.Spec.InstallStrategy.Placements[0], "c1", "c2")},
		Addons: map[string]*addonv1alpha1.ManagedClusterAddOn{"c2": own, "c9": manual}, Resolve: store.resolve, Now: now})

	assert.Equal(t, []string{"c1"}, d.Create, "the placement's cluster without the addon gets it")
	assert.Equal(t, "team@ht", desiredOf(d.Statuses["c1"]), "the placement's config overrides the default")
	assert.Equal(t, "mine@hm", desiredOf(d.Statuses["c2"]), "the addon's own config overrides the placement's")
	assert.Equal(t, "default@hd", desiredOf(d.Statuses["c9"]), "an addon no placement decides takes the default")
	for _, c := range []string{"c1", "c2", "c9"} {
		assert.Equal(t, "True/ConfigurationsConfigured", configured(d.Statuses[c]), c)
	}
	assert.Empty(t, d.Delete, "c9 was not created by the strategy")
	require.Len(t, d.Status.DefaultConfigReferences, 1)
	assert.Equal(t, "hd", d.Status.DefaultConfigReferences[0].DesiredConfig.SpecHash)
	require.Len(t, d.Status.InstallProgressions, 1)
	prog := d.Status.InstallProgressions[0]
	require.Len(t, prog.ConfigReferences, 1)
	assert.Equal(t, "team", prog.ConfigReferences[0].DesiredConfig.Name)
	assert.Equal(t, "ht", prog.ConfigReferences[0].DesiredConfig.SpecHash)
	assert.Equal(t, "Progressing", meta.FindStatusCondition(prog.Conditions, "Progressing").Reason)
}

func TestPlanProgressiveConfigChange(t *testing.T) {
	old := ref("team", "v1")
	store := configs{"team": "v2"}
	cma := cmaWith("", placement("p", use("team"), clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive,
		Progressive: &clusterv1alpha1.RolloutProgressive{MaxConcurrency: intstr.FromInt32(2)}}))
	addons := map[string]*addonv1alpha1.ManagedClusterAddOn{}
	for _, c := range []string{"c1", "c2", "c3", "c4"} {
		addons[c] = rolledOut(c, old)
	}
	snap := Snapshot{CMA: cma, Placements: []Placement{decided(cma.Spec.InstallStrategy.Placements[0], "c1", "c2", "c3", "c4")},
		Addons: addons, Resolve: store.resolve, Now: now}
	d := Plan(snap)
	assert.Empty(t, d.Create)
	assert.Equal(t, "team@v2", desiredOf(d.Statuses["c1"]))
	assert.Equal(t, "team@v2", desiredOf(d.Statuses["c2"]))
	assert.Equal(t, "v1", d.Statuses["c1"].ConfigReferences[0].LastAppliedConfig.SpecHash, "lastAppliedConfig stays until applied")
	for _, c := range []string{"c3", "c4"} {
		assert.Equal(t, "team@v1", desiredOf(d.Statuses[c]), "%s keeps its configs", c)
		assert.Equal(t, "False/ConfigurationsNotConfigured", configured(d.Statuses[c]), c)
	}
	prog := meta.FindStatusCondition(d.Status.InstallProgressions[0].Conditions, "Progressing")
	assert.Equal(t, "True/Progressing", string(prog.Status)+"/"+prog.Reason)

	// The next round, with c1 and c2 configured but not yet applied: nobody else starts.
	for _, c := range []string{"c1", "c2"} {
		addons[c] = addons[c].DeepCopy()
		addons[c].Status = *d.Statuses[c]
	}
	d = Plan(snap)
	for _, c := range []string{"c3", "c4"} {
		assert.NotEqual(t, "team@v2", desiredOf(d.Statuses[c]), "%s waits", c)
	}
	assert.NotContains(t, d.Statuses, "c1")

	// c1 applied: c3 gets its turn.
	addons["c1"] = rolledOut("c1", ref("team", "v2"))
	d = Plan(snap)
	assert.Equal(t, "team@v2", desiredOf(d.Statuses["c3"]))
	assert.NotEqual(t, "team@v2", desiredOf(d.Statuses["c4"]), "c4 still waits")

	// All applied: Completed, and the progression records the applied config.
	for _, c := range []string{"c1", "c2", "c3", "c4"} {
		addons[c] = rolledOut(c, ref("team", "v2"))
	}
	d = Plan(snap)
	prog = meta.FindStatusCondition(d.Status.InstallProgressions[0].Conditions, "Progressing")
	assert.Equal(t, "False/Completed", string(prog.Status)+"/"+prog.Reason)
	icr := d.Status.InstallProgressions[0].ConfigReferences[0]
	assert.Equal(t, "v2", icr.LastAppliedConfig.SpecHash)
	assert.Equal(t, "v2", icr.LastKnownGoodConfig.SpecHash)
}

func TestPlanBrokenConfig(t *testing.T) {
	store := configs{"good": "h"}
	cma := cmaWith("good", placement("p", use("missing"), clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}))
	addons := map[string]*addonv1alpha1.ManagedClusterAddOn{
		"c1": rolledOut("c1", ref("good", "h")),
		"c9": {ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "c9"}},
	}
	d := Plan(Snapshot{CMA: cma, Placements: []Placement{decided(cma.Spec.InstallStrategy.Placements[0], "c1", "c2")},
		Addons: addons, Resolve: store.resolve, Now: now})
	assert.Empty(t, d.Create, "nothing new is installed under a broken placement config")
	c1 := meta.FindStatusCondition(d.Statuses["c1"].Conditions, "Configured")
	assert.Equal(t, "False/ConfigurationNotFound", string(c1.Status)+"/"+c1.Reason)
	assert.Contains(t, c1.Message, "AddOnDeploymentConfig ns/missing does not exist")
	assert.Contains(t, c1.Message, "Placement ns/p")
	assert.Equal(t, "good@h", desiredOf(d.Statuses["c1"]), "the configs it runs stay")
	prog := meta.FindStatusCondition(d.Status.InstallProgressions[0].Conditions, "Progressing")
	assert.Equal(t, "False/Failed", string(prog.Status)+"/"+prog.Reason)
	assert.Contains(t, prog.Message, "ns/missing")
	assert.Equal(t, "True/ConfigurationsConfigured", configured(d.Statuses["c9"]), "another cluster is unaffected")

	// An addon's own missing config: that addon only.
	addons["c9"].Spec.Configs = use("gone")
	d = Plan(Snapshot{CMA: cmaWith("good"), Addons: addons, Resolve: store.resolve, Now: now})
	assert.Equal(t, "False/ConfigurationNotFound", configured(d.Statuses["c9"]))
	assert.NotContains(t, d.Statuses, "c1", "c1 already runs the default: nothing to write")
}

func TestPlanRemovesWhatItCreated(t *testing.T) {
	cma := cmaWith("", placement("p", nil, clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}))
	mine := rolledOut("c2")
	mine.OwnerReferences = []metav1.OwnerReference{{APIVersion: "addon.open-cluster-management.io/v1alpha1", Kind: "ClusterManagementAddOn",
		Name: "a", UID: cma.UID, Controller: ptrTrue()}}
	manual := rolledOut("c3")
	addons := map[string]*addonv1alpha1.ManagedClusterAddOn{"c1": rolledOut("c1"), "c2": mine, "c3": manual}
	p := decided(cma.Spec.InstallStrategy.Placements[0], "c1")
	d := Plan(Snapshot{CMA: cma, Placements: []Placement{p}, Addons: addons, Resolve: configs{}.resolve, Now: now})
	assert.Equal(t, []string{"c2"}, d.Delete, "only what the strategy created goes")

	p.KeepOthers = true
	d = Plan(Snapshot{CMA: cma, Placements: []Placement{p}, Addons: addons, Resolve: configs{}.resolve, Now: now})
	assert.Empty(t, d.Delete, "decisions being rewritten remove nothing")

	// The placement is gone: what it created is neither removed nor reconfigured.
	cma.Spec.SupportedConfigs[0].DefaultConfig = &addonv1alpha1.ConfigReferent{Namespace: "ns", Name: "default"}
	gone := Placement{PlacementStrategy: cma.Spec.InstallStrategy.Placements[0], Problem: "Placement ns/p does not exist"}
	d = Plan(Snapshot{CMA: cma, Placements: []Placement{gone}, Addons: addons, Resolve: configs{"default": "h"}.resolve, Now: now})
	assert.Empty(t, d.Delete)
	assert.NotContains(t, d.Statuses, "c2", "left as it is")
	assert.Equal(t, "default@h", desiredOf(d.Statuses["c3"]), "a Manual addon takes the default")
	prog := meta.FindStatusCondition(d.Status.InstallProgressions[0].Conditions, "Progressing")
	assert.Equal(t, "False/Failed", string(prog.Status)+"/"+prog.Reason)
}

func ptrTrue() *bool { b := true; return &b }

func TestPlanPerGroupAndDeadline(t *testing.T) {
	store := configs{"team": "v2"}
	perGroup := cmaWith("", placement("p", use("team"), clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.ProgressivePerGroup}))
	p := decided(perGroup.Spec.InstallStrategy.Placements[0])
	for i, c := range []string{"a1", "a2", "b1"} {
		p.Clusters = append(p.Clusters, rollout.Cluster{Name: c, GroupIndex: int32(i / 2)})
	}
	addons := map[string]*addonv1alpha1.ManagedClusterAddOn{}
	for _, c := range []string{"a1", "a2", "b1"} {
		addons[c] = rolledOut(c, ref("team", "v1"))
	}
	d := Plan(Snapshot{CMA: perGroup, Placements: []Placement{p}, Addons: addons, Resolve: store.resolve, Now: now})
	assert.Equal(t, "team@v2", desiredOf(d.Statuses["a1"]))
	assert.Equal(t, "team@v2", desiredOf(d.Statuses["a2"]))
	assert.Equal(t, "False/ConfigurationsNotConfigured", configured(d.Statuses["b1"]), "the second group waits for the first")

	// progressDeadline: a cluster configured 2 minutes ago that has not applied
	// the change counts as failed; with no failure tolerated the rollout stops.
	progressive := cmaWith("", placement("p", use("team"), clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive,
		Progressive: &clusterv1alpha1.RolloutProgressive{MaxConcurrency: intstr.FromInt32(1),
			RolloutConfig: clusterv1alpha1.RolloutConfig{ProgressDeadline: "1m"}}}))
	stuck := rolledOut("a1", ref("team", "v2"))
	stuck.Status.ConfigReferences[0].LastAppliedConfig = nil
	meta.FindStatusCondition(stuck.Status.Conditions, "Configured").LastTransitionTime = metav1.NewTime(now.Add(-2 * time.Minute))
	addons["a1"] = stuck
	p.PlacementStrategy = progressive.Spec.InstallStrategy.Placements[0]
	d = Plan(Snapshot{CMA: progressive, Placements: []Placement{p}, Addons: addons, Resolve: store.resolve, Now: now})
	prog := meta.FindStatusCondition(d.Status.InstallProgressions[0].Conditions, "Progressing")
	assert.Equal(t, "False/Failed", string(prog.Status)+"/"+prog.Reason)
	assert.Contains(t, prog.Message, "1 timed out")
	assert.NotEqual(t, "team@v2", desiredOf(d.Statuses["a2"]), "nobody else starts")
}
