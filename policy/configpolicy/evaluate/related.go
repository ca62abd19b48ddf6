package evaluate

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// RelatedBudget bounds the size of a status' related objects, in bytes of
// JSON. Upstream lists every related object, so a policy that relates many
// thousands of objects (or large diffs) makes a status the apiserver or
// etcd refuses (etcd's request limit is 1.5 MiB per object) and its status
// is never written. With the condition messages' budget (512 KiB, see
// internal/conditions) a status stays near 1 MiB at most.
const RelatedBudget = 512 * 1024

// Dropped is what a status left out of its related objects to fit
// RelatedBudget.
type Dropped struct {
	// Diffs is how many related objects lost their properties.diff.
	Diffs int `json:"diffs,omitempty"`
	// Compliant and NonCompliant count the related objects left out.
	Compliant    int `json:"compliant,omitempty"`
	NonCompliant int `json:"nonCompliant,omitempty"`
	// Total is how many related objects the evaluation had.
	Total int `json:"total,omitempty"`
}

// Any reports whether anything was left out.
func (d Dropped) Any() bool { return d.Diffs+d.Compliant+d.NonCompliant > 0 }

// String says what was left out, for people.
func (d Dropped) String() string {
	if !d.Any() {
		return ""
	}
	kept := d.Total - d.Compliant - d.NonCompliant
	s := fmt.Sprintf("the status lists %d of %d related objects", kept, d.Total)
	if d.NonCompliant+d.Compliant > 0 {
		s += fmt.Sprintf(" (left out: %d NonCompliant, %d Compliant)", d.NonCompliant, d.Compliant)
	}
	if d.Diffs > 0 {
		s += fmt.Sprintf(", %d without their diff", d.Diffs)
	}
	return s + fmt.Sprintf(", to stay within %d KiB; the policy's messages still name every object", RelatedBudget/1024)
}

// fitRelated returns list (in its order) cut to budget bytes of JSON, and
// what it left out, and which objects lost their entry or its diff. First the diffs go, the largest first; then whole
// entries, the ones that matter least first: those the policy created
// (pruneObjectBehavior needs them) are kept longest, then NonCompliant
// ones, then Compliant ones; within each, the last in list order go first.
func fitRelated(list []policyv1.RelatedObject, budget int) ([]policyv1.RelatedObject, Dropped, map[policyv1.ObjectResource]bool) {
	d := Dropped{Total: len(list)}
	touched := map[policyv1.ObjectResource]bool{}
	size := func(ro policyv1.RelatedObject) int {
		b, _ := json.Marshal(ro)
		return len(b) + 1 // and a comma
	}
	sizes := make([]int, len(list))
	total := 1 // "[" and "]", and one comma fewer than entries
	for i, ro := range list {
		sizes[i] = size(ro)
		total += sizes[i]
	}
	if total <= budget {
		return list, d, touched
	}
	out := make([]policyv1.RelatedObject, len(list))
	copy(out, list)
	withDiff := []int{}
	for i, ro := range out {
		if ro.Properties != nil && ro.Properties.Diff != "" {
			withDiff = append(withDiff, i)
		}
	}
	sort.SliceStable(withDiff, func(a, b int) bool { return sizes[withDiff[a]] > sizes[withDiff[b]] })
	for _, i := range withDiff {
		if total <= budget {
			break
		}
		props := *out[i].Properties
		props.Diff = ""
		out[i].Properties = &props
		if props.UID == "" && props.CreatedByPolicy == nil {
			out[i].Properties = nil
		}
		n := size(out[i])
		total -= sizes[i] - n
		sizes[i] = n
		d.Diffs++
		touched[out[i].Object] = true
	}
	if total <= budget {
		return out, d, touched
	}
	rank := func(ro policyv1.RelatedObject) int {
		switch {
		case ro.Properties != nil && ro.Properties.CreatedByPolicy != nil && *ro.Properties.CreatedByPolicy:
			return 0
		case ro.Compliant != string(policyv1.Compliant):
			return 1
		}
		return 2
	}
	order := make([]int, len(out))
	for i := range order {
		order[i] = i
	}
	// least important first: highest rank, then last in list order
	sort.SliceStable(order, func(a, b int) bool {
		ra, rb := rank(out[order[a]]), rank(out[order[b]])
		if ra != rb {
			return ra > rb
		}
		return order[a] > order[b]
	})
	drop := make([]bool, len(out))
	for _, i := range order {
		if total <= budget {
			break
		}
		drop[i] = true
		total -= sizes[i]
		touched[out[i].Object] = true
		if out[i].Compliant == string(policyv1.Compliant) {
			d.Compliant++
		} else {
			d.NonCompliant++
		}
	}
	kept := out[:0]
	for i, ro := range out {
		if !drop[i] {
			kept = append(kept, ro)
		}
	}
	return kept, d, touched
}

// ConditionRelatedObjectsTruncated is the type (and reason) of the condition
// a template's status gets, after its upstream violation/notification
// condition, when some of its related objects (or their diffs) were left
// out of the status to stay within RelatedBudget. Its message is
// Dropped.String().
const ConditionRelatedObjectsTruncated = "RelatedObjectsTruncated"

// fitStatusRelated sets st's related objects to related cut to budget, and
// marks each template whose objects were cut with a
// ConditionRelatedObjectsTruncated condition (prev keeps its transition
// time while its message is the same). It records what was left out in
// r.dropped, counted against total related objects (0: len(related)).
func (r *Result) fitStatusRelated(st, prev *policyv1.ConfigurationPolicyStatus, related []policyv1.RelatedObject,
	budget int, base Dropped, now time.Time) {
	var d Dropped
	var touched map[policyv1.ObjectResource]bool
	st.RelatedObjects, d, touched = fitRelated(related, budget)
	d.Diffs += base.Diffs
	d.Compliant += base.Compliant
	d.NonCompliant += base.NonCompliant
	if base.Total > 0 {
		d.Total = base.Total
	}
	r.dropped = d
	for k := range r.touched {
		touched[k] = true
	}
	r.touched = touched
	for i, t := range r.Templates {
		if i >= len(st.CompliancyDetails) {
			break
		}
		conds := st.CompliancyDetails[i].Conditions[:0:0]
		for _, c := range st.CompliancyDetails[i].Conditions {
			if c.Type != ConditionRelatedObjectsTruncated {
				conds = append(conds, c)
			}
		}
		if d.Any() && t.touches(touched) {
			c := policyv1.Condition{
				Type: ConditionRelatedObjectsTruncated, Status: metav1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(now.UTC().Truncate(time.Second)),
				Reason:             ConditionRelatedObjectsTruncated, Message: d.String(),
			}
			if i < len(prev.CompliancyDetails) {
				for _, pc := range prev.CompliancyDetails[i].Conditions {
					if pc.Type == c.Type && pc.Message == c.Message {
						c.LastTransitionTime = pc.LastTransitionTime
					}
				}
			}
			conds = append(conds, c)
		}
		st.CompliancyDetails[i].Conditions = conds
	}
}

// Shrink cuts by more bytes off the JSON of st's related objects (st is the
// last Status), for a status whose object would otherwise pass what the
// apiserver takes; the conditions and Dropped say what was left out. prev
// (may be nil) is the status st replaces: a condition it has with the same
// message keeps its transition time.
func (r *Result) Shrink(st, prev *policyv1.ConfigurationPolicyStatus, by int, now time.Time) {
	if prev == nil {
		prev = &policyv1.ConfigurationPolicyStatus{}
	}
	raw, _ := json.Marshal(st.RelatedObjects)
	base := r.dropped
	if base.Total == 0 {
		base.Total = len(st.RelatedObjects)
	}
	r.fitStatusRelated(st, prev, st.RelatedObjects, max(len(raw)-by, 0), base, now)
}

// touches reports whether one of the template's objects is in objs.
func (t *TemplateResult) touches(objs map[policyv1.ObjectResource]bool) bool {
	if len(objs) == 0 {
		return false
	}
	for _, f := range t.Findings {
		if objs[t.objectRef(f)] {
			return true
		}
	}
	return false
}
