package scheduling

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
)

// plan is the plugins built for one Placement.
type plan struct {
	predicates [][]framework.FilterPlugin // ORed; each inner slice ANDed
	filters    []framework.FilterPlugin
	scorers    []weighted
	selector   framework.SelectPlugin
	groups     []groupSelector
	perGroup   func(total int) int
}

type weighted struct {
	plugin framework.ScorePlugin
	weight int64
}

type groupSelector struct {
	name   string
	labels labels.Selector
	claims labels.Selector
}

func (r *Registry) build(h *framework.Handle) (*plan, error) {
	p := h.Placement
	pl := &plan{}
	for i, pred := range p.Spec.Predicates {
		var and []framework.FilterPlugin
		for _, name := range sortedKeys(r.Selectors) {
			f, err := r.Selectors[name](pred.RequiredClusterSelector)
			if err != nil {
				return nil, fmt.Errorf("spec.predicates[%d].requiredClusterSelector.%w", i, err)
			}
			and = append(and, f)
		}
		pl.predicates = append(pl.predicates, and)
	}
	for _, name := range sortedKeys(r.Filters) {
		f, err := r.Filters[name](h)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		pl.filters = append(pl.filters, f)
	}
	w, err := weights(p)
	if err != nil {
		return nil, err
	}
	if needsScores(p) {
		for _, key := range sortedKeys(w) {
			if w[key] == 0 {
				continue
			}
			coord := coordinateOf(key)
			var factory framework.ScoreFactory
			if coord.Type == clusterv1beta1.ScoreCoordinateTypeAddOn {
				factory = r.AddOn
			} else if factory = r.BuiltIns[coord.BuiltIn]; factory == nil {
				return nil, fmt.Errorf("spec.prioritizerPolicy: unknown built-in prioritizer %q (known: %s)",
					coord.BuiltIn, strings.Join(sortedKeys(r.BuiltIns), ", "))
			}
			s, err := factory(h, coord)
			if err != nil {
				return nil, fmt.Errorf("spec.prioritizerPolicy: %w", err)
			}
			pl.scorers = append(pl.scorers, weighted{plugin: s, weight: int64(w[key])})
		}
	}
	if r.Select != nil {
		if pl.selector, err = r.Select(h); err != nil {
			return nil, err
		}
	}
	gs := p.Spec.DecisionStrategy.GroupStrategy
	for i, g := range gs.DecisionGroups {
		ls, err := metav1.LabelSelectorAsSelector(&g.ClusterSelector.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("spec.decisionStrategy.groupStrategy.decisionGroups[%d].groupClusterSelector.labelSelector: %w", i, err)
		}
		cs, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: g.ClusterSelector.ClaimSelector.MatchExpressions})
		if err != nil {
			return nil, fmt.Errorf("spec.decisionStrategy.groupStrategy.decisionGroups[%d].groupClusterSelector.claimSelector: %w", i, err)
		}
		pl.groups = append(pl.groups, groupSelector{name: g.GroupName, labels: ls, claims: cs})
	}
	if pl.perGroup, err = perGroup(gs.ClustersPerDecisionGroup.String()); err != nil {
		return nil, err
	}
	return pl, nil
}

// weights resolves the prioritizer policy into weight per coordinate key.
func weights(p *clusterv1beta1.Placement) (map[string]int32, error) {
	w := map[string]int32{}
	mode := p.Spec.PrioritizerPolicy.Mode
	switch mode {
	case clusterv1beta1.PrioritizerPolicyModeAdditive, "":
		for name, weight := range defaultWeights {
			w[builtInKey(name)] = weight
		}
	case clusterv1beta1.PrioritizerPolicyModeExact:
	default:
		return nil, fmt.Errorf("spec.prioritizerPolicy.mode %q is not Additive or Exact", mode)
	}
	for i, c := range p.Spec.PrioritizerPolicy.Configurations {
		if c.ScoreCoordinate == nil {
			return nil, fmt.Errorf("spec.prioritizerPolicy.configurations[%d].scoreCoordinate is missing", i)
		}
		if c.Weight < -10 || c.Weight > 10 {
			return nil, fmt.Errorf("spec.prioritizerPolicy.configurations[%d].weight %d is outside -10..10", i, c.Weight)
		}
		switch c.ScoreCoordinate.Type {
		case clusterv1beta1.ScoreCoordinateTypeBuiltIn, "":
			if c.ScoreCoordinate.BuiltIn == "" {
				return nil, fmt.Errorf("spec.prioritizerPolicy.configurations[%d].scoreCoordinate.builtIn is empty", i)
			}
			w[builtInKey(c.ScoreCoordinate.BuiltIn)] = c.Weight
		case clusterv1beta1.ScoreCoordinateTypeAddOn:
			a := c.ScoreCoordinate.AddOn
			if a == nil || a.ResourceName == "" || a.ScoreName == "" {
				return nil, fmt.Errorf("spec.prioritizerPolicy.configurations[%d].scoreCoordinate.addOn needs resourceName and scoreName", i)
			}
			w["AddOn/"+a.ResourceName+"/"+a.ScoreName] = c.Weight
		default:
			return nil, fmt.Errorf("spec.prioritizerPolicy.configurations[%d].scoreCoordinate.type %q is not BuiltIn or AddOn", i, c.ScoreCoordinate.Type)
		}
	}
	return w, nil
}

func builtInKey(name string) string { return "BuiltIn/" + name }

func coordinateOf(key string) clusterv1beta1.ScoreCoordinate {
	parts := strings.SplitN(key, "/", 3)
	if parts[0] == "AddOn" {
		return clusterv1beta1.ScoreCoordinate{Type: clusterv1beta1.ScoreCoordinateTypeAddOn,
			AddOn: &clusterv1beta1.AddOnScore{ResourceName: parts[1], ScoreName: parts[2]}}
	}
	return clusterv1beta1.ScoreCoordinate{Type: clusterv1beta1.ScoreCoordinateTypeBuiltIn, BuiltIn: parts[1]}
}

// perGroup parses clustersPerDecisionGroup ("" = 100%).
func perGroup(v string) (func(int) int, error) {
	const field = "spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup"
	if v == "" || v == "0" {
		return func(total int) int { return max(total, 1) }, nil
	}
	if pct, ok := strings.CutSuffix(v, "%"); ok {
		n, err := strconv.Atoi(pct)
		if err != nil || n < 1 || n > 100 {
			return nil, fmt.Errorf("%s %q must be a percentage from 1%% to 100%%", field, v)
		}
		return func(total int) int { return max(int(math.Ceil(float64(total)*float64(n)/100)), 1) }, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return nil, fmt.Errorf("%s %q must be a positive number or a percentage", field, v)
	}
	return func(int) int { return n }, nil
}

func (pl *plan) filter(c *framework.ClusterInfo) *framework.Status {
	if len(pl.predicates) > 0 {
		var last *framework.Status
		matched := false
		for _, and := range pl.predicates {
			if last = all(and, c); last.IsSuccess() {
				matched = true
				break
			}
		}
		if !matched {
			return last
		}
	}
	return all(pl.filters, c)
}

// all runs filters in order; it returns the first failure, or success carrying the
// shortest requeue any filter asked for.
func all(fs []framework.FilterPlugin, c *framework.ClusterInfo) *framework.Status {
	var ok *framework.Status
	for _, f := range fs {
		st := f.Filter(c)
		if !st.IsSuccess() {
			return st
		}
		if st != nil && st.RequeueAfter > 0 && (ok == nil || st.RequeueAfter < ok.RequeueAfter) {
			ok = st
		}
	}
	return ok
}

// score returns the final score of each cluster (out[i] is cs[i]'s): the sum of
// weight x normalised score.
func (pl *plan) score(cs []*framework.ClusterInfo, res *Result) []int64 {
	total := make([]int64, len(cs))
	if len(pl.scorers) == 0 {
		return total
	}
	raw := make([]int64, len(cs))
	for _, w := range pl.scorers {
		for i, c := range cs {
			v, st := w.plugin.Score(c)
			if st != nil {
				res.requeue(st.RequeueAfter)
			}
			raw[i] = v
		}
		w.plugin.NormalizeScore(raw)
		for i, v := range raw {
			total[i] += w.weight * v
		}
	}
	return total
}

// group divides the ordered decisions: first the predefined groups (in order, each
// taking matching clusters not yet grouped), then the rest; each chunked by
// clustersPerDecisionGroup. Group indexes count from 0. There is always a group.
func (pl *plan) group(ds []Decision, infos map[string]*framework.ClusterInfo) []Group {
	size := pl.perGroup(len(ds))
	var out []Group
	add := func(name string, members []Decision) {
		for start := 0; start < len(members); start += size {
			end := min(start+size, len(members))
			out = append(out, Group{Index: int32(len(out)), Name: name, Clusters: members[start:end:end]})
		}
	}
	taken := make([]bool, len(ds))
	for _, g := range pl.groups {
		var members []Decision
		for i, d := range ds {
			c := infos[d.ClusterName]
			if !taken[i] && g.labels.Matches(labelsOf(c)) && g.claims.Matches(labels.Set(c.Claims)) {
				taken[i] = true
				members = append(members, d)
			}
		}
		add(g.name, members)
	}
	var rest []Decision
	for i, d := range ds {
		if !taken[i] {
			rest = append(rest, d)
		}
	}
	add("", rest)
	if len(out) == 0 {
		out = []Group{{Index: 0}}
	}
	return out
}

func labelsOf(c *framework.ClusterInfo) labels.Set { return labels.Set(c.Cluster.Labels) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
