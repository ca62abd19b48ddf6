package workreplicaset

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
	"flotilla.dev/flotilla/hub/workreplicaset/distribute"
	"flotilla.dev/flotilla/internal/placementread"
)

// ConditionDistributionPolicyApplied is the condition Flotilla adds to a
// replica set that names a DistributionPolicy: whether every decided
// cluster's work could be rendered with it, which overrides applied to how
// many clusters, and the divided workloads' replicas.
const ConditionDistributionPolicyApplied = "DistributionPolicyApplied"

// Reasons of ConditionDistributionPolicyApplied.
const (
	ReasonRendered       = "Rendered"
	ReasonRenderFailed   = "RenderFailed"
	ReasonPolicyNotFound = "PolicyNotFound"
	ReasonPolicyInvalid  = "PolicyInvalid"
)

// distribution is the render of every decided cluster's work: the per-cluster
// spec and revision, the clusters that failed, and the counts for the status.
type distribution struct {
	// named: the replica set names a policy (the condition is owned).
	named bool
	out   distribute.Output
	// hash is each rendered cluster's revision (TemplateHash of its spec).
	hash map[string]string
	// failed holds the clusters whose render failed, with why; they get no work written.
	failed map[string]error
	// policyErr: the policy could not be used at all (missing, unreadable, invalid).
	policyErr    error
	policyReason string
	// hold: the policy divides replicas and some placement's decisions are
	// unknown or being rewritten: nothing is written until they settle.
	hold bool
}

// hashOf is the revision cluster's work should carry.
func (d distribution) hashOf(cluster, template string) string {
	if h, ok := d.hash[cluster]; ok {
		return h
	}
	return template
}

// renderable lists, in placementRef then decision order, the accepted
// clusters of the refs whose decisions can be used, as plan will decide them.
func renderable(f Facts) []string {
	covered := map[string]bool{}
	var out []string
	for _, rf := range f.Refs {
		d := rf.Decisions
		if rf.ReadErr != nil || !d.Found || d.Readiness == placementread.Unknown || rf.AcceptedErr != nil {
			continue
		}
		decided, _ := SplitDecisions(d.Own, covered, rf.Accepted)
		for _, c := range decided {
			out = append(out, c.Name)
		}
	}
	return out
}

// distribute renders the template for every renderable cluster with the
// replica set's policy (none: the template as is, at revision f.Hash).
func distributeWorks(f Facts) distribution {
	d := distribution{named: f.PolicyName != "", hash: map[string]string{}, failed: map[string]error{}}
	if !d.named {
		return d
	}
	names := renderable(f)
	fail := func(reason string, err error) distribution {
		d.policyErr, d.policyReason = err, reason
		for _, c := range names {
			d.failed[c] = err
		}
		return d
	}
	if f.PolicyErr != nil {
		return fail(ReasonPolicyNotFound, f.PolicyErr)
	}
	if f.Policy == nil {
		return fail(ReasonPolicyNotFound, fmt.Errorf("DistributionPolicy %q not found in this namespace", f.PolicyName))
	}
	in := distribute.Input{Template: f.Template, Previous: map[string]*workv1.ManifestWorkSpec{}}
	for _, n := range names {
		c, ok := f.Clusters[n]
		if !ok {
			c = distribute.Cluster{Name: n}
		}
		in.Clusters = append(in.Clusters, c)
	}
	for _, w := range f.Works {
		in.Previous[w.Namespace] = &w.Spec
	}
	key := renderKey(f, in)
	if r, ok := f.Renders.get(f.Namespace+"/"+f.Name, key); ok {
		d.out, d.hash, d.failed = r.out, r.hash, r.failed
	} else {
		p, err := distribute.Compile(f.Policy.Spec)
		if err != nil {
			return fail(ReasonPolicyInvalid, fmt.Errorf("DistributionPolicy %q: %w", f.PolicyName, err))
		}
		d.out = p.Render(in)
		for _, n := range names {
			w := d.out.Works[n]
			if w.Err != nil {
				d.failed[n] = w.Err
				continue
			}
			d.hash[n] = TemplateHash(w.Spec)
		}
		f.Renders.put(f.Namespace+"/"+f.Name, key, rendered{out: d.out, hash: d.hash, failed: d.failed})
	}
	if f.Policy.Spec.Replicas != nil && f.Policy.Spec.Replicas.Type != "" && f.Policy.Spec.Replicas.Type != distv1alpha1.Duplicated {
		for _, rf := range f.Refs {
			d.hold = d.hold || rf.ReadErr != nil || !rf.Decisions.Found || rf.Decisions.Readiness != placementread.Ready || rf.AcceptedErr != nil
		}
	}
	return d
}

// condition is ConditionDistributionPolicyApplied for the replica set.
func (d distribution) condition(gen int64, policy string, works []*workv1.ManifestWork) metav1.Condition {
	c := metav1.Condition{Type: ConditionDistributionPolicyApplied, ObservedGeneration: gen}
	switch {
	case d.policyErr != nil:
		c.Status, c.Reason = metav1.ConditionFalse, d.policyReason
		c.Message = d.policyErr.Error() + "; every cluster keeps its current ManifestWork"
		return c
	case len(d.failed) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonRenderFailed
		names := make([]string, 0, len(d.failed))
		for n := range d.failed {
			names = append(names, n)
		}
		sort.Strings(names)
		c.Message = fmt.Sprintf("DistributionPolicy %q: %d clusters could not be rendered and keep their last good ManifestWork: %s: %s",
			policy, len(names), names[0], clip(d.failed[names[0]].Error()))
		if len(names) > 1 {
			others := names[1:]
			more := ""
			if len(others) > maxNamedFailures {
				more = fmt.Sprintf(" and %d more", len(others)-maxNamedFailures)
				others = others[:maxNamedFailures]
			}
			c.Message += fmt.Sprintf(" (and %s%s)", strings.Join(others, ", "), more)
		}
		return c
	}
	c.Status, c.Reason = metav1.ConditionTrue, ReasonRendered
	c.Message = fmt.Sprintf("DistributionPolicy %q: %s", policy, d.summary(works))
	if d.hold {
		c.Message += "; replica division waits for every placement's decisions to settle"
	}
	return c
}

// maxNamedFailures bounds the failed clusters a condition names besides the
// first, and maxFailureMessage a render error's length in a status: a
// condition's message is at most 32768 bytes (metav1.Condition), and a
// render error may quote expanded values a cluster controls (its claims), so
// without bounds a fleet of failures or one long claim made every status
// write of the replica set or the policy fail.
const (
	maxNamedFailures  = 50
	maxFailureMessage = 1024
)

// clip shortens s to maxFailureMessage bytes (on a rune boundary).
func clip(s string) string {
	if len(s) <= maxFailureMessage {
		return s
	}
	cut := maxFailureMessage - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// summary is one line: the overrides and the divided workloads.
func (d distribution) summary(works []*workv1.ManifestWork) string {
	var parts []string
	for _, r := range d.out.Rules {
		parts = append(parts, fmt.Sprintf("%s on %d", r.Rule, r.Clusters))
	}
	s := "no overrides"
	if len(parts) > 0 {
		s = "overrides " + strings.Join(parts, ", ") + " clusters"
	}
	for _, wl := range Aggregate(d.out.Workloads, works) {
		s += fmt.Sprintf("; %s %s: %d replicas over %d clusters, %d created, %d ready, %d available",
			strings.ToLower(wl.Kind), wl.Name, wl.Desired, wl.Clusters, wl.Replicas, wl.ReadyReplicas, wl.AvailableReplicas)
	}
	return s
}

// replicaSetStatus is the replica set's entry in the policy's status.
func (d distribution) replicaSetStatus(name string, works []*workv1.ManifestWork) distv1alpha1.ReplicaSetStatus {
	st := distv1alpha1.ReplicaSetStatus{Name: name, Clusters: int64(len(d.hash) + len(d.failed))}
	for _, r := range d.out.Rules {
		st.Overrides = append(st.Overrides, distv1alpha1.OverrideCount{Rule: r.Rule, Clusters: int64(r.Clusters)})
	}
	names := make([]string, 0, len(d.failed))
	for n := range d.failed {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if len(st.Failures) == 20 {
			break
		}
		f := distv1alpha1.RenderFailure{Cluster: n, Message: clip(d.failed[n].Error())}
		var re *distribute.RenderError
		if errors.As(d.failed[n], &re) {
			f.Rule = re.Rule
		}
		st.Failures = append(st.Failures, f)
	}
	st.Workloads = Aggregate(d.out.Workloads, works)
	return st
}

// Aggregate sums, for each divided workload, the clusters with a share and
// the ready and available replicas the works' status feedback reports
// (distribute.FeedbackReady, FeedbackAvailable).
func Aggregate(workloads []distribute.Workload, works []*workv1.ManifestWork) []distv1alpha1.WorkloadStatus {
	var out []distv1alpha1.WorkloadStatus
	for _, wl := range workloads {
		st := distv1alpha1.WorkloadStatus{Group: wl.Group, Kind: wl.Kind, Namespace: wl.Namespace, Name: wl.Name, Desired: wl.Desired}
		for _, n := range wl.Shares {
			if n > 0 {
				st.Clusters++
			}
		}
		for _, w := range works {
			if _, decided := wl.Shares[w.Namespace]; !decided {
				continue
			}
			replicas, ready, available := Feedback(w, wl.Group, wl.Resource, wl.Namespace, wl.Name)
			st.Replicas += replicas
			st.ReadyReplicas += ready
			st.AvailableReplicas += available
		}
		out = append(out, st)
	}
	return out
}

// Feedback reads a workload's replicas, ready and available replicas from a
// work's status feedback (0 when not reported).
func Feedback(w *workv1.ManifestWork, group, resource, namespace, name string) (replicas, ready, available int64) {
	for _, m := range w.Status.ResourceStatus.Manifests {
		rm := m.ResourceMeta
		if rm.Group != group || rm.Resource != resource || rm.Namespace != namespace || rm.Name != name {
			continue
		}
		for _, v := range m.StatusFeedbacks.Values {
			if v.Value.Integer == nil {
				continue
			}
			switch v.Name {
			case distribute.FeedbackReplicas:
				replicas = *v.Value.Integer
			case distribute.FeedbackReady:
				ready = *v.Value.Integer
			case distribute.FeedbackAvailable:
				available = *v.Value.Integer
			}
		}
	}
	return replicas, ready, available
}
