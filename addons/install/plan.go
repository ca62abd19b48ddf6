package install

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"flotilla.dev/flotilla/addons/framework"
	"flotilla.dev/flotilla/hub/workreplicaset/rollout"
)

// Configured condition reasons: OCM's, and Flotilla's for a config that
// cannot be used.
const (
	ReasonConfigured        = "ConfigurationsConfigured"
	ReasonNotConfigured     = "ConfigurationsNotConfigured"
	ReasonConfigNotFound    = "ConfigurationNotFound"
	ReasonConfigUnsupported = addonv1alpha1.ProgressingReasonConfigurationUnsupported
)

// ConfigProblem says why a config cannot be used; Reason is the Configured
// condition's reason.
type ConfigProblem struct {
	Reason, Message string
}

func (p *ConfigProblem) Error() string { return p.Message }

// Resolver reads the config c names for a cluster (an empty namespace of a
// namespaced config is the cluster's namespace; cluster "" asks for the
// ClusterManagementAddOn-level view) and returns its reference with the
// desired spec hash, or what is wrong with it.
type Resolver func(c addonv1alpha1.AddOnConfig, cluster string) (addonv1alpha1.ConfigReference, *ConfigProblem)

// Placement is one placement of a Placements install strategy, with what was
// read about it.
type Placement struct {
	addonv1alpha1.PlacementStrategy
	// Clusters the placement decides, in decision order, with their groups.
	Clusters []rollout.Cluster
	// Problem: the placement cannot be used (it is missing, its rollout
	// strategy is invalid); nothing new reaches its clusters.
	Problem string
	// Waiting: its decisions cannot be read as its answer yet (why).
	Waiting string
	// KeepOthers: the decisions are being rewritten; remove nothing.
	KeepOthers bool
}

// Snapshot is what one reconcile of a ClusterManagementAddOn read.
type Snapshot struct {
	CMA *addonv1alpha1.ClusterManagementAddOn
	// Placements of the install strategy, in spec order (none for Manual).
	Placements []Placement
	// Addons are the addon's ManagedClusterAddOns, by cluster.
	Addons  map[string]*addonv1alpha1.ManagedClusterAddOn
	Resolve Resolver
	Now     time.Time
}

// Decision is what the reconcile should write.
type Decision struct {
	// Create: clusters that get a new ManagedClusterAddOn (owned by the
	// ClusterManagementAddOn); their status is in Statuses.
	Create []string
	// Statuses: ManagedClusterAddOn statuses to write, by cluster (only
	// configReferences and the Configured condition differ from what was read).
	Statuses map[string]*addonv1alpha1.ManagedClusterAddOnStatus
	// Delete: clusters whose ManagedClusterAddOn, created by the strategy, goes.
	Delete []string
	// Status of the ClusterManagementAddOn (defaultConfigReferences, installProgressions).
	Status addonv1alpha1.ClusterManagementAddOnStatus
	// RequeueAfter > 0: plan again then (a soak time or deadline ends).
	RequeueAfter time.Duration
}

// Plan decides, from a snapshot, which clusters get the addon and which get
// their desired configs now. Each cluster belongs to the last placement that
// decides it (OCM's rule); the addons of clusters no placement decides (Manual
// installs among them) form one more group rolled out with strategy All. A
// cluster's desired configs are framework.DesiredConfigs of the supported
// defaults, its placement's configs and its own spec.configs. Clusters whose
// turn has not come keep the configs they have (Configured False,
// ConfigurationsNotConfigured); a config that cannot be read is Configured
// False on the clusters it concerns and, when it is a placement's or a
// default, fails that placement's progression without touching the others.
func Plan(s Snapshot) Decision {
	d := Decision{Statuses: map[string]*addonv1alpha1.ManagedClusterAddOnStatus{}}
	cma := s.CMA
	placementsOn := cma.Spec.InstallStrategy.Type == addonv1alpha1.AddonInstallStrategyPlacements
	owner := map[string]int{}
	keepOthers := false
	if placementsOn {
		for i, p := range s.Placements {
			for _, c := range p.Clusters {
				owner[c.Name] = i
			}
			keepOthers = keepOthers || p.KeepOthers || p.Waiting != "" || p.Problem != ""
		}
	}

	// Defaults: the ClusterManagementAddOn-level view of the default configs.
	for _, sc := range cma.Spec.SupportedConfigs {
		if sc.DefaultConfig == nil {
			continue
		}
		ref, _ := s.Resolve(addonv1alpha1.AddOnConfig{ConfigGroupResource: sc.ConfigGroupResource, ConfigReferent: *sc.DefaultConfig}, "")
		d.Status.DefaultConfigReferences = append(d.Status.DefaultConfigReferences, addonv1alpha1.DefaultConfigReference{
			ConfigGroupResource: sc.ConfigGroupResource, DesiredConfig: ref.DesiredConfig})
	}

	if placementsOn {
		for i, p := range s.Placements {
			var clusters []rollout.Cluster
			for _, c := range p.Clusters {
				if owner[c.Name] == i {
					clusters = append(clusters, c)
				}
			}
			d.Status.InstallProgressions = append(d.Status.InstallProgressions, d.placement(s, p, clusters))
		}
	}
	// The rest: every addon no placement decides, all at once.
	var rest []rollout.Cluster
	for name, mca := range s.Addons {
		if _, placed := owner[name]; placed || mca.DeletionTimestamp != nil {
			continue
		}
		if placementsOn && metav1.IsControlledBy(mca, cma) {
			// Created for a placement that no longer decides it: removed, or,
			// while some placement cannot be read, left as it is.
			if !keepOthers {
				d.Delete = append(d.Delete, name)
			}
			continue
		}
		rest = append(rest, rollout.Cluster{Name: name})
	}
	sort.Strings(d.Delete)
	sort.Slice(rest, func(i, j int) bool { return rest[i].Name < rest[j].Name })
	d.rollOut(s, nil, nil, rest, clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All})
	return d
}

// placement plans one placement and returns its install progression.
func (d *Decision) placement(s Snapshot, p Placement, clusters []rollout.Cluster) addonv1alpha1.InstallProgression {
	prog := addonv1alpha1.InstallProgression{PlacementRef: p.PlacementRef}
	var old *addonv1alpha1.InstallProgression
	for i := range s.CMA.Status.InstallProgressions {
		if s.CMA.Status.InstallProgressions[i].PlacementRef == p.PlacementRef {
			old = &s.CMA.Status.InstallProgressions[i]
			prog.Conditions = append([]metav1.Condition(nil), old.Conditions...)
		}
	}
	set := func(st metav1.ConditionStatus, reason, msg string) addonv1alpha1.InstallProgression {
		meta.SetStatusCondition(&prog.Conditions, metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnConditionProgressing,
			Status: st, Reason: reason, Message: msg})
		return prog
	}
	where := fmt.Sprintf("Placement %s/%s", p.Namespace, p.Name)

	// The placement-level configs (defaults overridden by the placement's).
	var problems []string
	for _, c := range framework.DesiredConfigs(s.CMA.Spec.SupportedConfigs, p.Configs, nil) {
		ref, problem := s.Resolve(c, "")
		if problem != nil {
			problems = append(problems, problem.Message)
		}
		icr := addonv1alpha1.InstallConfigReference{ConfigGroupResource: c.ConfigGroupResource, DesiredConfig: ref.DesiredConfig}
		if old != nil {
			for _, o := range old.ConfigReferences {
				if o.ConfigGroupResource == c.ConfigGroupResource {
					icr.LastAppliedConfig, icr.LastKnownGoodConfig = o.LastAppliedConfig, o.LastKnownGoodConfig
				}
			}
		}
		prog.ConfigReferences = append(prog.ConfigReferences, icr)
	}
	switch {
	case p.Problem != "":
		return set(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonFailed, p.Problem)
	case len(problems) > 0:
		msg := where + ": " + strings.Join(problems, "; ") + "; nothing new rolls out to its clusters until this is fixed"
		for _, c := range clusters {
			d.configProblem(s, c.Name, &ConfigProblem{Reason: ReasonConfigNotFound, Message: msg})
		}
		return set(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonFailed, msg)
	case p.Waiting != "":
		return set(metav1.ConditionTrue, addonv1alpha1.ProgressingReasonProgressing, where+" "+p.Waiting)
	}
	plan, err := d.rollOut(s, &p, p.Configs, clusters, p.RolloutStrategy)
	if err != nil {
		return set(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonFailed, fmt.Sprintf("%s: %v; nothing new rolls out until it is fixed", where, err))
	}
	counts := fmt.Sprintf("%d clusters selected: %d configured, %d rolled out, %d failed, %d timed out", len(clusters), plan.configured, plan.succeeded, plan.failed, len(plan.TimedOut))
	switch {
	case plan.Stopped:
		return set(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonFailed, plan.Reason+" ("+counts+")")
	case plan.Complete && len(clusters) > 0:
		for i := range prog.ConfigReferences {
			r := &prog.ConfigReferences[i]
			if r.DesiredConfig != nil && r.DesiredConfig.SpecHash != "" {
				r.LastAppliedConfig, r.LastKnownGoodConfig = r.DesiredConfig.DeepCopy(), r.DesiredConfig.DeepCopy()
			}
		}
		return set(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonCompleted, counts)
	case plan.Complete:
		return set(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonCompleted, where+" selects no cluster")
	}
	return set(metav1.ConditionTrue, addonv1alpha1.ProgressingReasonProgressing, counts)
}

type rolled struct {
	rollout.Plan
	configured, succeeded, failed int
}

// rollOut plans clusters under strategy and records what each gets. p is the
// placement (nil: the addons no placement decides, which are never created here).
func (d *Decision) rollOut(s Snapshot, p *Placement, placementConfigs []addonv1alpha1.AddOnConfig, clusters []rollout.Cluster,
	strategy clusterv1alpha1.RolloutStrategy) (rolled, error) {
	var out rolled
	desired := map[string][]addonv1alpha1.ConfigReference{}
	var planned []rollout.Cluster
	for _, c := range clusters {
		mca := s.Addons[c.Name]
		if mca != nil && mca.DeletionTimestamp != nil {
			continue
		}
		var own []addonv1alpha1.AddOnConfig
		if mca != nil {
			own = mca.Spec.Configs
		}
		refs, problem := resolveAll(s, framework.DesiredConfigs(s.CMA.Spec.SupportedConfigs, placementConfigs, own), c.Name)
		if problem != nil {
			// This cluster's own config is broken: it waits, the others go on.
			d.configProblem(s, c.Name, problem)
			continue
		}
		desired[c.Name] = refs
		c.State, c.Since = State(mca, refs)
		planned = append(planned, c)
	}
	plan, err := rollout.Compute(strategy, planned, s.Now)
	if err != nil {
		return out, err
	}
	out.Plan = plan
	if plan.RequeueAfter > 0 && (d.RequeueAfter == 0 || plan.RequeueAfter < d.RequeueAfter) {
		d.RequeueAfter = plan.RequeueAfter
	}
	for _, c := range planned {
		mca := s.Addons[c.Name]
		switch {
		case c.State == rollout.ToApply && plan.Apply[c.Name]:
			if mca == nil {
				if p == nil {
					continue
				}
				d.Create = append(d.Create, c.Name)
				mca = &addonv1alpha1.ManagedClusterAddOn{}
			}
			st := mca.Status.DeepCopy()
			configure(st, desired[c.Name], s.Now)
			d.Statuses[c.Name] = st
			out.configured++
		case c.State == rollout.ToApply:
			if mca != nil {
				d.condition(mca, metav1.ConditionFalse, ReasonNotConfigured,
					"The addon's configs changed; this cluster gets them when the rollout strategy gives it its turn")
			}
		default:
			out.configured++
			if c.State == rollout.Succeeded {
				out.succeeded++
			}
			if c.State == rollout.Failed {
				out.failed++
			}
		}
	}
	return out, nil
}

// resolveAll resolves configs for cluster; the first problem is returned.
func resolveAll(s Snapshot, configs []addonv1alpha1.AddOnConfig, cluster string) ([]addonv1alpha1.ConfigReference, *ConfigProblem) {
	out := make([]addonv1alpha1.ConfigReference, 0, len(configs))
	for _, c := range configs {
		ref, problem := s.Resolve(c, cluster)
		if problem != nil {
			return nil, problem
		}
		out = append(out, ref)
	}
	return out, nil
}

// configure sets desired as st's configs (keeping each lastAppliedConfig) and
// marks it Configured, with the transition time now: the configs changed.
func configure(st *addonv1alpha1.ManagedClusterAddOnStatus, desired []addonv1alpha1.ConfigReference, now time.Time) {
	refs := make([]addonv1alpha1.ConfigReference, 0, len(desired))
	for _, want := range desired {
		ref := *want.DeepCopy()
		for _, old := range st.ConfigReferences {
			if old.ConfigGroupResource == want.ConfigGroupResource && old.ConfigReferent == want.ConfigReferent {
				ref.LastAppliedConfig = old.LastAppliedConfig.DeepCopy()
			}
		}
		refs = append(refs, ref)
	}
	st.ConfigReferences = refs
	meta.RemoveStatusCondition(&st.Conditions, addonv1alpha1.ManagedClusterAddOnConditionConfigured)
	st.Conditions = append(st.Conditions, metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnConditionConfigured, Status: metav1.ConditionTrue,
		Reason: ReasonConfigured, Message: describe(desired), LastTransitionTime: metav1.NewTime(now)})
}

func describe(refs []addonv1alpha1.ConfigReference) string {
	if len(refs) == 0 {
		return "The addon takes no configs on this cluster"
	}
	var names []string
	for _, r := range refs {
		n := r.Name
		if r.Namespace != "" {
			n = r.Namespace + "/" + n
		}
		names = append(names, r.Resource+" "+n)
	}
	return "The desired configs are set: " + strings.Join(names, ", ")
}

// configProblem marks cluster's addon (when it exists) Configured False.
func (d *Decision) configProblem(s Snapshot, cluster string, p *ConfigProblem) {
	if mca := s.Addons[cluster]; mca != nil && mca.DeletionTimestamp == nil {
		d.condition(mca, metav1.ConditionFalse, p.Reason, p.Message+"; the addon keeps what it runs until this is fixed")
	}
}

// condition sets mca's Configured condition, recording the status when it changes.
func (d *Decision) condition(mca *addonv1alpha1.ManagedClusterAddOn, status metav1.ConditionStatus, reason, msg string) {
	st := d.Statuses[mca.Namespace]
	if st == nil {
		st = mca.Status.DeepCopy()
	}
	c := metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnConditionConfigured, Status: status, Reason: reason, Message: msg}
	if cur := meta.FindStatusCondition(st.Conditions, c.Type); cur != nil && cur.Status == c.Status && cur.Reason == c.Reason && cur.Message == c.Message {
		return
	}
	meta.SetStatusCondition(&st.Conditions, c)
	d.Statuses[mca.Namespace] = st
}
