// Package rollout plans a ManifestWorkReplicaSet rollout: given the decided
// clusters, how far each one has got with the current template, and the rollout
// strategy, it says which clusters receive the current template now. It is pure and
// table-tested; the controller feeds it facts read from ManifestWorks.
//
// Semantics:
//
//   - All: every cluster at once.
//   - Progressive: clusters one by one in decision order (mandatory decision groups
//     first), at most maxConcurrency in flight (default: the largest decision group).
//     A percentage rounds up (OCM's rule): "10%" of 5 clusters is 1 at a time.
//     A cluster is in flight from the moment it gets the template until it succeeds
//     and has soaked for minSuccessTime. A cluster that failed, or did not succeed
//     within progressDeadline, counts as a failure; once failures exceed maxFailures
//     (count, or percent of all clusters rounded up) the rollout stops: nobody new gets the template.
//   - ProgressivePerGroup: decision groups in order (mandatory first); the next group
//     starts once every cluster of the current one has succeeded and soaked, or
//     failed within maxFailures (count or percent of the group).
//   - Mandatory decision groups tolerate no failure in either progressive mode.
package rollout

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
)

// State is where one cluster stands with the current template.
type State string

const (
	// ToApply: the cluster does not run the current template yet.
	ToApply State = "ToApply"
	// Progressing: the cluster has the current template, not yet successful.
	Progressing State = "Progressing"
	// Succeeded: the template is applied and available on the cluster.
	Succeeded State = "Succeeded"
	// Failed: applying the template failed on the cluster.
	Failed State = "Failed"
)

// Cluster is one decided cluster and its rollout facts.
type Cluster struct {
	Name       string
	GroupIndex int32
	GroupName  string
	State      State
	// Since is when the cluster entered State (when it got the template for
	// Progressing; when it became available for Succeeded).
	Since time.Time
}

// Plan is the planner's answer.
type Plan struct {
	// Apply are the clusters that should run the current template now: those that
	// already do plus those whose turn has come.
	Apply map[string]bool
	// Complete: every cluster succeeded (and soaked).
	Complete bool
	// Stopped: failures exceeded what the strategy tolerates; Reason says where.
	Stopped bool
	// TimedOut are clusters that missed progressDeadline (they count as failures).
	TimedOut []string
	// Reason is a one-line account for people.
	Reason string
	// RequeueAfter > 0: ask again then (a deadline or soak time ends).
	RequeueAfter time.Duration
}

type config struct {
	typ            clusterv1alpha1.RolloutType
	minSuccess     time.Duration
	deadline       time.Duration // 0 = none
	maxFailures    intstr.IntOrString
	maxConcurrency intstr.IntOrString
	mandatory      []clusterv1alpha1.MandatoryDecisionGroup
}

// Validate reports what is wrong with a strategy, naming the field.
func Validate(s clusterv1alpha1.RolloutStrategy) error {
	_, err := parse(s)
	return err
}

func parse(s clusterv1alpha1.RolloutStrategy) (config, error) {
	c := config{typ: s.Type}
	var rc clusterv1alpha1.RolloutConfig
	switch s.Type {
	case clusterv1alpha1.All, "":
		c.typ = clusterv1alpha1.All
		if s.All != nil {
			rc = s.All.RolloutConfig
		}
	case clusterv1alpha1.Progressive:
		if s.Progressive != nil {
			rc = s.Progressive.RolloutConfig
			c.mandatory = s.Progressive.MandatoryDecisionGroups.MandatoryDecisionGroups
			c.maxConcurrency = s.Progressive.MaxConcurrency
		}
	case clusterv1alpha1.ProgressivePerGroup:
		if s.ProgressivePerGroup != nil {
			rc = s.ProgressivePerGroup.RolloutConfig
			c.mandatory = s.ProgressivePerGroup.MandatoryDecisionGroups.MandatoryDecisionGroups
		}
	default:
		return c, fmt.Errorf("rolloutStrategy.type %q is not All, Progressive or ProgressivePerGroup", s.Type)
	}
	c.minSuccess = rc.MinSuccessTime.Duration
	c.maxFailures = rc.MaxFailures
	if d := rc.ProgressDeadline; d != "" && !strings.EqualFold(d, "None") {
		v, err := time.ParseDuration(d)
		if err != nil || v <= 0 {
			return c, fmt.Errorf("rolloutStrategy progressDeadline %q is not a duration like 90m or None", d)
		}
		c.deadline = v
	}
	if _, err := amount(c.maxFailures, 100, "maxFailures"); err != nil {
		return c, err
	}
	if _, err := amount(c.maxConcurrency, 100, "maxConcurrency"); err != nil {
		return c, err
	}
	return c, nil
}

// amount resolves a count-or-percent of total. A percentage rounds up, as OCM's
// rollout helper does (math.Ceil), so any percentage above 0% of a non-empty set
// is at least 1: "10%" of 5 clusters is 1, "50%" of 5 is 3. An unset value is 0;
// callers decide what 0 means (maxConcurrency falls back to its default,
// maxFailures tolerates none).
func amount(v intstr.IntOrString, total int, field string) (int, error) {
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return 0, fmt.Errorf("rolloutStrategy %s %d must not be negative", field, v.IntVal)
		}
		return int(v.IntVal), nil
	}
	if v.StrVal == "" {
		return 0, nil
	}
	if pct, ok := strings.CutSuffix(v.StrVal, "%"); ok {
		n, err := strconv.Atoi(pct)
		if err != nil || n < 0 || n > 100 {
			return 0, fmt.Errorf("rolloutStrategy %s %q is not a percentage from 0%% to 100%%", field, v.StrVal)
		}
		return int(math.Ceil(float64(total) * float64(n) / 100)), nil
	}
	n, err := strconv.Atoi(v.StrVal)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("rolloutStrategy %s %q is not a count or a percentage", field, v.StrVal)
	}
	return n, nil
}

// Compute plans the rollout of clusters under strategy at now.
func Compute(strategy clusterv1alpha1.RolloutStrategy, clusters []Cluster, now time.Time) (Plan, error) {
	cfg, err := parse(strategy)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{Apply: map[string]bool{}}
	ordered := order(clusters, cfg.mandatory)

	// Facts per cluster: done (succeeded and soaked), failed (failed or timed out), in flight.
	done := map[string]bool{}
	failed := map[string]bool{}
	for _, c := range ordered {
		switch c.State {
		case Succeeded:
			if soak := c.Since.Add(cfg.minSuccess); cfg.typ != clusterv1alpha1.All && now.Before(soak) {
				p.requeue(soak.Sub(now))
			} else {
				done[c.Name] = true
			}
		case Failed:
			failed[c.Name] = true
		case Progressing:
			if cfg.deadline > 0 {
				if end := c.Since.Add(cfg.deadline); !now.Before(end) {
					failed[c.Name] = true
					p.TimedOut = append(p.TimedOut, c.Name)
				} else {
					p.requeue(end.Sub(now))
				}
			}
		}
		if c.State != ToApply {
			p.Apply[c.Name] = true
		}
	}

	switch cfg.typ {
	case clusterv1alpha1.All:
		for _, c := range ordered {
			p.Apply[c.Name] = true
		}
	case clusterv1alpha1.Progressive:
		progressive(&p, cfg, ordered, done, failed)
	case clusterv1alpha1.ProgressivePerGroup:
		perGroup(&p, cfg, ordered, done, failed)
	}

	p.Complete = len(done) == len(ordered) && !p.Stopped
	if cfg.typ == clusterv1alpha1.All {
		p.Complete = countState(ordered, Succeeded) == len(ordered)
	}
	if p.Reason == "" {
		p.Reason = fmt.Sprintf("%d of %d clusters rolled out", len(done), len(ordered))
		if cfg.typ == clusterv1alpha1.All {
			p.Reason = fmt.Sprintf("%d of %d clusters succeeded", countState(ordered, Succeeded), len(ordered))
		}
	}
	return p, nil
}

func progressive(p *Plan, cfg config, ordered []Cluster, done, failed map[string]bool) {
	mandatory := mandatorySet(cfg.mandatory)
	// Mandatory groups: no failure tolerated, and nothing else starts before they finish.
	var rest []Cluster
	mandatoryDone := true
	for _, c := range ordered {
		if !mandatory(c) {
			rest = append(rest, c)
			continue
		}
		if failed[c.Name] {
			p.Stopped, p.Reason = true, fmt.Sprintf("cluster %s in mandatory decision group %s failed; rollout stopped", c.Name, groupLabel(c))
			return
		}
		if !done[c.Name] {
			mandatoryDone = false
		}
	}
	// Unset (or 0, or 0%, as in OCM) falls back to the largest decision group; any
	// positive percentage is at least 1 (amount rounds up).
	limit, _ := amount(cfg.maxConcurrency, len(ordered), "maxConcurrency")
	if limit <= 0 {
		limit = largestGroup(ordered)
	}
	tolerated, _ := amount(cfg.maxFailures, len(ordered), "maxFailures")
	if n := countIn(rest, failed); n > tolerated {
		p.Stopped, p.Reason = true, fmt.Sprintf("%d clusters failed, more than maxFailures (%d); rollout stopped", n, tolerated)
		return
	}
	inFlight := 0
	for _, c := range ordered {
		if p.Apply[c.Name] && !done[c.Name] && !failed[c.Name] {
			inFlight++
		}
	}
	candidates := ordered
	if !mandatoryDone {
		candidates = nil
		for _, c := range ordered {
			if mandatory(c) {
				candidates = append(candidates, c)
			}
		}
	}
	for _, c := range candidates {
		if inFlight >= limit {
			break
		}
		if !p.Apply[c.Name] {
			p.Apply[c.Name] = true
			inFlight++
		}
	}
}

func perGroup(p *Plan, cfg config, ordered []Cluster, done, failed map[string]bool) {
	mandatory := mandatorySet(cfg.mandatory)
	// Groups in rollout order: ordered is already mandatory-first, then by index.
	var keys []int32
	groups := map[int32][]Cluster{}
	for _, c := range ordered {
		if _, ok := groups[c.GroupIndex]; !ok {
			keys = append(keys, c.GroupIndex)
		}
		groups[c.GroupIndex] = append(groups[c.GroupIndex], c)
	}
	for _, k := range keys {
		g := groups[k]
		tolerated, _ := amount(cfg.maxFailures, len(g), "maxFailures")
		if mandatory(g[0]) {
			tolerated = 0
		}
		nFailed := countIn(g, failed)
		if nFailed > tolerated {
			p.Stopped, p.Reason = true, fmt.Sprintf("%d clusters of decision group %s failed, more than tolerated (%d); rollout stopped", nFailed, groupLabel(g[0]), tolerated)
			return
		}
		finished := true
		for _, c := range g {
			p.Apply[c.Name] = true
			if !done[c.Name] && !failed[c.Name] {
				finished = false
			}
		}
		if !finished {
			return // the next group waits for this one
		}
	}
}

// order sorts clusters for rollout: mandatory groups first (in the order listed),
// then by group index, then name.
func order(clusters []Cluster, mandatory []clusterv1alpha1.MandatoryDecisionGroup) []Cluster {
	rank := func(c Cluster) int {
		for i, m := range mandatory {
			if (m.GroupName != "" && m.GroupName == c.GroupName) || (m.GroupName == "" && m.GroupIndex == c.GroupIndex) {
				return i
			}
		}
		return len(mandatory)
	}
	out := append([]Cluster(nil), clusters...)
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := rank(out[i]), rank(out[j])
		if ri != rj {
			return ri < rj
		}
		if out[i].GroupIndex != out[j].GroupIndex {
			return out[i].GroupIndex < out[j].GroupIndex
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func mandatorySet(ms []clusterv1alpha1.MandatoryDecisionGroup) func(Cluster) bool {
	return func(c Cluster) bool {
		for _, m := range ms {
			if (m.GroupName != "" && m.GroupName == c.GroupName) || (m.GroupName == "" && m.GroupIndex == c.GroupIndex) {
				return true
			}
		}
		return false
	}
}

func groupLabel(c Cluster) string {
	if c.GroupName != "" {
		return fmt.Sprintf("%q (index %d)", c.GroupName, c.GroupIndex)
	}
	return fmt.Sprintf("%d", c.GroupIndex)
}

func largestGroup(cs []Cluster) int {
	sizes := map[int32]int{}
	best := 0
	for _, c := range cs {
		sizes[c.GroupIndex]++
		best = max(best, sizes[c.GroupIndex])
	}
	return max(best, 1)
}

func countIn(cs []Cluster, set map[string]bool) int {
	n := 0
	for _, c := range cs {
		if set[c.Name] {
			n++
		}
	}
	return n
}

func countState(cs []Cluster, s State) int {
	n := 0
	for _, c := range cs {
		if c.State == s {
			n++
		}
	}
	return n
}

func (p *Plan) requeue(d time.Duration) {
	if d > 0 && (p.RequeueAfter == 0 || d < p.RequeueAfter) {
		p.RequeueAfter = d
	}
}
