package evaluate

import (
	"fmt"
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

// phrase is the OCM wording of what happened to an object.
func (f *Finding) phrase() string {
	if f.ApplyError != nil {
		return fmt.Sprintf("could not be %s", pastTense(f.Action))
	}
	if f.Applied != None {
		return fmt.Sprintf("was %s successfully", pastTense(f.Applied))
	}
	switch f.Outcome {
	case Matches:
		return "found as specified"
	case Missing:
		return "not found"
	case Mismatch:
		return "found but not as specified"
	case Found:
		return "found"
	default:
		return "missing as expected"
	}
}

// Reason is the related object's reason.
func (f *Finding) Reason() string {
	if f.ApplyError != nil {
		return fmt.Sprintf("K8s %s failed", f.Action)
	}
	switch f.Applied {
	case Create:
		return "K8s creation success"
	case Update:
		return "K8s update success"
	case Delete:
		return "K8s deletion success"
	}
	switch f.Outcome {
	case Matches:
		return "Resource found as expected"
	case Missing:
		return "Resource not found but should exist"
	case Mismatch:
		return "Resource found but does not match"
	case Found:
		return "Resource found but should not exist"
	default:
		return "Resource not found as expected"
	}
}

func pastTense(v Verb) string {
	switch v {
	case Create:
		return "created"
	case Update:
		return "updated"
	case Delete:
		return "deleted"
	}
	return string(v)
}

// Message is the template's message in OCM's wording, e.g.
// "configmaps [a, b] found as specified in namespace default".
func (t *TemplateResult) Message() string {
	if t.Error != nil {
		return fmt.Sprintf("object-templates[%d]: %v", t.Index, t.Error)
	}
	type group struct {
		phrase     string
		compliant  bool
		names      []string
		namespaces []string
		errs       []string
	}
	var groups []*group
	byPhrase := map[string]*group{}
	for _, f := range t.Findings {
		p := f.phrase()
		g := byPhrase[p]
		if g == nil {
			g = &group{phrase: p, compliant: f.Compliant()}
			byPhrase[p] = g
			groups = append(groups, g)
		}
		if f.Name != "" {
			g.names = appendUnique(g.names, f.Name)
		}
		if f.Namespace != "" {
			g.namespaces = appendUnique(g.namespaces, f.Namespace)
		}
		if f.ApplyError != nil {
			g.errs = appendUnique(g.errs, f.ApplyError.Error())
		}
	}
	if len(groups) == 0 {
		return fmt.Sprintf("%s: namespaceSelector selects no namespace; nothing to check", t.describe())
	}
	sort.SliceStable(groups, func(i, j int) bool { return !groups[i].compliant && groups[j].compliant })
	parts := make([]string, 0, len(groups))
	for _, g := range groups {
		var b strings.Builder
		b.WriteString(t.Mapping.Resource)
		if len(g.names) > 0 {
			sort.Strings(g.names)
			fmt.Fprintf(&b, " [%s]", strings.Join(capList(g.names), ", "))
		}
		b.WriteString(" " + g.phrase)
		sort.Strings(g.namespaces)
		switch len(g.namespaces) {
		case 0:
		case 1:
			b.WriteString(" in namespace " + g.namespaces[0])
		default:
			b.WriteString(" in namespaces: " + strings.Join(capList(g.namespaces), ", "))
		}
		if len(g.errs) > 0 {
			b.WriteString(": " + strings.Join(g.errs, "; "))
		}
		parts = append(parts, b.String())
	}
	return strings.Join(parts, "; ")
}

// MaxListed is how many names or namespaces a message lists before
// summarising the rest; MaxRelated is how many related objects a status keeps
// (NonCompliant ones first), so the status of a template matching thousands
// of objects stays far below the apiserver's object size limit.
const (
	MaxListed  = 20
	MaxRelated = 1000
)

func capList(list []string) []string {
	if len(list) <= MaxListed {
		return list
	}
	out := append([]string{}, list[:MaxListed]...)
	return append(out, fmt.Sprintf("+%d more", len(list)-MaxListed))
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// ConditionType is "violation" for a NonCompliant template, else "notification".
func (t *TemplateResult) ConditionType() string {
	if t.Compliance() == policyv1.Compliant {
		return Notification
	}
	return Violation
}

// Message is the policy's message: each template's "<type> - <message>",
// joined with "; ".
func (r *Result) Message() string {
	parts := make([]string, 0, len(r.Templates))
	for _, t := range r.Templates {
		parts = append(parts, t.ConditionType()+" - "+t.Message())
	}
	if len(parts) == 0 {
		return "notification - the policy has no object-templates"
	}
	return strings.Join(parts, "; ")
}

// EventMessage is the text of a compliance event and history entry:
// "<State>; <message>".
func (r *Result) EventMessage() string {
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
			Message:            t.Message(),
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
		for _, f := range t.Findings {
			st.RelatedObjects = append(st.RelatedObjects, t.related(f, prev.RelatedObjects))
		}
	}
	if len(st.RelatedObjects) > MaxRelated {
		sort.SliceStable(st.RelatedObjects, func(i, j int) bool {
			return st.RelatedObjects[i].Compliant != string(policyv1.Compliant) && st.RelatedObjects[j].Compliant == string(policyv1.Compliant)
		})
		st.RelatedObjects = st.RelatedObjects[:MaxRelated]
	}
	return st
}

func (t *TemplateResult) reason() string {
	if t.Error != nil {
		return "K8s error"
	}
	if t.Compliance() == policyv1.Compliant {
		return "K8s `" + strings.ToLower(string(t.ComplianceType)) + "` objects are as specified"
	}
	return "K8s `" + strings.ToLower(string(t.ComplianceType)) + "` objects are not as specified"
}

func (t *TemplateResult) related(f *Finding, prev []policyv1.RelatedObject) policyv1.RelatedObject {
	ro := policyv1.RelatedObject{
		Object: policyv1.ObjectResource{
			Kind:       t.Mapping.GVK.Kind,
			APIVersion: t.Mapping.GVK.GroupVersion().String(),
			Metadata:   policyv1.ObjectMetadata{Name: f.Name, Namespace: f.Namespace},
		},
		Compliant: string(policyv1.NonCompliant),
		Reason:    f.Reason(),
	}
	if ro.Object.Metadata.Name == "" {
		ro.Object.Metadata.Name = "-"
	}
	if f.Compliant() {
		ro.Compliant = string(policyv1.Compliant)
	}
	props := &policyv1.ObjectProperties{UID: f.UID}
	if props.UID == "" && f.Live != nil {
		props.UID = string(f.Live.GetUID())
	}
	created := f.CreatedByPolicy
	if !created && props.UID != "" {
		for _, p := range prev {
			if p.Object == ro.Object && p.Properties != nil && p.Properties.UID == props.UID &&
				p.Properties.CreatedByPolicy != nil && *p.Properties.CreatedByPolicy {
				created = true
			}
		}
	}
	if created {
		props.CreatedByPolicy = &created
	}
	if t.RecordDiff == policyv1.RecordDiffInStatus {
		props.Diff = truncate(f.Diff, MaxDiff)
	}
	if props.UID != "" || props.CreatedByPolicy != nil || props.Diff != "" {
		ro.Properties = props
	}
	return ro
}

// MaxDiff is the most bytes of diff kept in a related object's properties.
const MaxDiff = 10 << 10

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndex(s[:n], "\n")
	if cut < 0 {
		cut = n
	}
	return s[:cut] + "\n# diff truncated: " + fmt.Sprint(len(s)-cut) + " more bytes"
}
