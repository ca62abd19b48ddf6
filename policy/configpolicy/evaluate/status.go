package evaluate

import (
	"reflect"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/conditions"
)

// Condition types of a template status, as OCM names them.
const (
	Violation    = "violation"
	Notification = "notification"
)

// Reason is the related object's reason, in upstream's wording.
func (f *Finding) Reason() string {
	if f.ApplyError != nil {
		switch f.Action {
		case Create:
			return ReasonCreateError
		case Delete:
			return ReasonDeleteError
		}
		return ReasonUpdateError
	}
	switch f.Applied {
	case Create:
		return ReasonCreated
	case Update:
		return ReasonUpdated
	case Delete:
		return ReasonDeleted
	}
	switch f.Outcome {
	case Matches:
		return ReasonFoundAsExpected
	case Missing:
		return ReasonNotFoundMustExist
	case Mismatch:
		return ReasonFoundNoMatch
	case Found:
		return ReasonFoundMustNotExist
	default:
		return ReasonNotFoundAsExpected
	}
}

// Message is the template's message in upstream's wording, e.g.
// "configmaps [a, b] found as specified in namespace default" (without the
// suffix a "never" evaluationInterval adds; see Result.Status).
func (t *TemplateResult) Message() string {
	_, _, msg := statusMessage(t.Mapping.Resource, t.events())
	return msg
}

// ConditionType is "violation" for a NonCompliant template, else "notification".
func (t *TemplateResult) ConditionType() string {
	if t.Compliance() == policyv1.Compliant {
		return Notification
	}
	return Violation
}

// ConditionMessage is the template's message as its condition says it:
// with upstream's note when a "never" evaluationInterval stops evaluation in
// that state.
func (r *Result) ConditionMessage(t *TemplateResult) string {
	return t.Message() + neverSuffix(r.Policy, t.Compliance() == policyv1.Compliant)
}

// Message is the policy's message: each template's "<type> - <message>",
// joined with "; ".
func (r *Result) Message() string {
	parts := make([]string, 0, len(r.Templates))
	for _, t := range r.Templates {
		parts = append(parts, t.ConditionType()+" - "+r.ConditionMessage(t))
	}
	if len(parts) == 0 {
		return "notification - the policy has no object-templates"
	}
	return strings.Join(parts, "; ")
}

// DefaultMessage is the compliance message without customMessage:
// "<State>; <message>".
func (r *Result) DefaultMessage() string {
	return string(r.Compliance()) + "; " + r.Message()
}

// Status renders the result as a ConfigurationPolicy status. prev (may be
// nil) carries history, condition transition times and createdByPolicy
// across evaluations; now is the evaluation time.
func (r *Result) Status(prev *policyv1.ConfigurationPolicyStatus, now time.Time) policyv1.ConfigurationPolicyStatus {
	if prev == nil {
		prev = &policyv1.ConfigurationPolicyStatus{}
	}
	st := policyv1.ConfigurationPolicyStatus{
		ComplianceState:         r.Compliance(),
		LastEvaluated:           now.UTC().Format(time.RFC3339),
		LastEvaluatedGeneration: r.Policy.Generation,
		History:                 prev.History,
	}
	for i, t := range r.Templates {
		cond := policyv1.Condition{
			Type:               t.ConditionType(),
			Status:             metav1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now.UTC().Truncate(time.Second)),
			Reason:             t.reason(),
			Message:            r.ConditionMessage(t),
		}
		if i < len(prev.CompliancyDetails) {
			for _, pc := range prev.CompliancyDetails[i].Conditions {
				if pc.Type == cond.Type && conditions.SameMessage(pc.Message, cond.Message) {
					cond.LastTransitionTime = pc.LastTransitionTime
				}
			}
		}
		st.CompliancyDetails = append(st.CompliancyDetails, policyv1.TemplateStatus{
			ComplianceState: t.Compliance(),
			Conditions:      []policyv1.Condition{cond},
		})
	}
	r.touched = nil
	r.fitStatusRelated(&st, prev, r.Related(prev.RelatedObjects), RelatedBudget, Dropped{}, now)
	return st
}

// Dropped is what the last Status left out of its related objects to stay
// within RelatedBudget.
func (r *Result) Dropped() Dropped { return r.dropped }

// Related are the objects the evaluation looked at, as the status lists
// them (before any limit): one entry per object, sorted as upstream sorts
// them (kind, namespace, name). prev (may be nil) carries createdByPolicy.
func (r *Result) Related(prev []policyv1.RelatedObject) []policyv1.RelatedObject {
	created := map[createdKey]bool{}
	for _, p := range prev {
		if p.Properties != nil && p.Properties.UID != "" && p.Properties.CreatedByPolicy != nil && *p.Properties.CreatedByPolicy {
			created[createdKey{p.Object, p.Properties.UID}] = true
		}
	}
	var out []policyv1.RelatedObject
	index := map[policyv1.ObjectResource]int{}
	for _, t := range r.Templates {
		for _, f := range t.Findings {
			out = addRelated(out, index, t.related(f, created))
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Object, out[j].Object
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Metadata.Namespace != b.Metadata.Namespace {
			return a.Metadata.Namespace < b.Metadata.Namespace
		}
		return a.Metadata.Name < b.Metadata.Name
	})
	return out
}

func (t *TemplateResult) reason() string {
	_, reason, _ := statusMessage(t.Mapping.Resource, t.events())
	return reason
}

// objectRef is the related object entry's object for f.
func (t *TemplateResult) objectRef(f *Finding) policyv1.ObjectResource {
	ref := policyv1.ObjectResource{
		Kind:       t.Mapping.GVK.Kind,
		APIVersion: t.Mapping.GVK.GroupVersion().String(),
		Metadata:   policyv1.ObjectMetadata{Name: f.Name, Namespace: f.Namespace},
	}
	if ref.Metadata.Name == "" {
		ref.Metadata.Name = "-"
	}
	return ref
}

// createdKey is an object the policy created, with the UID it had.
type createdKey struct {
	obj policyv1.ObjectResource
	uid string
}

func (t *TemplateResult) related(f *Finding, created map[createdKey]bool) policyv1.RelatedObject {
	ro := policyv1.RelatedObject{
		Object:    t.objectRef(f),
		Compliant: string(policyv1.NonCompliant),
		Reason:    t.reasonOf(f),
	}
	if t.compliant(f) {
		ro.Compliant = string(policyv1.Compliant)
	}
	props := &policyv1.ObjectProperties{UID: f.UID}
	if props.UID == "" && f.Live != nil {
		props.UID = string(f.Live.GetUID())
	}
	byPolicy := f.CreatedByPolicy || props.UID != "" && created[createdKey{ro.Object, props.UID}]
	if byPolicy {
		props.CreatedByPolicy = &byPolicy
	}
	if t.RecordDiff == policyv1.RecordDiffInStatus || t.RecordDiff == RecordDiffCensored {
		props.Diff = f.Diff
	}
	if props.UID != "" || props.CreatedByPolicy != nil || props.Diff != "" {
		ro.Properties = props
	}
	return ro
}

// addRelated adds ro, or updates the entry of the same object as upstream
// does: an object two templates name is listed once, the later template's
// entry winning when its compliance or properties differ.
func addRelated(list []policyv1.RelatedObject, index map[policyv1.ObjectResource]int, ro policyv1.RelatedObject) []policyv1.RelatedObject {
	if i, ok := index[ro.Object]; ok {
		cur := list[i]
		if cur.Compliant != ro.Compliant || !reflect.DeepEqual(cur.Properties, ro.Properties) {
			list[i] = ro
		}
		return list
	}
	index[ro.Object] = len(list)
	return append(list, ro)
}
