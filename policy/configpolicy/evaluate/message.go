package evaluate

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// Reasons of related objects (and of the events a template's message is
// assembled from), in upstream config-policy-controller's wording.
const (
	ReasonFoundAsExpected    = "Resource found as expected"
	ReasonCreated            = "K8s creation success"
	ReasonUpdated            = "K8s update success"
	ReasonDeleted            = "K8s deletion success"
	ReasonNotFoundMustExist  = "Resource not found but should exist"
	ReasonFoundNoMatch       = "Resource found but does not match"
	ReasonFoundMustNotExist  = "Resource found but should not exist"
	ReasonNotFoundAsExpected = "Resource not found as expected"
	ReasonCreateError        = "K8s creation error"
	ReasonDeleteError        = "K8s deletion error"
	ReasonUpdateError        = "K8s update template error"
	ReasonTemplateError      = "Error processing template"
	ReasonMissingNamespace   = "K8s missing namespace"
	ReasonNamespaceSelector  = "namespaceSelector error"
	ReasonDecodeError        = "K8s decode object definition error"
	ReasonK8sError           = "K8s error"
)

// standardReasons are the reasons whose objects are summarised in one
// phrase, in the order upstream lists them in a message, with the condition
// reason each contributes.
var standardReasons = []struct{ reason, condition, phrase string }{
	{ReasonFoundAsExpected, "K8s `must have` object already exists", "found as specified"},
	{ReasonCreated, ReasonCreated, "was created successfully"},
	{ReasonUpdated, ReasonUpdated, "was updated successfully"},
	{ReasonDeleted, ReasonDeleted, "was deleted successfully"},
	{ReasonNotFoundMustExist, "K8s does not have a `must have` object", "not found"},
	{ReasonFoundNoMatch, "K8s does not have a `must have` object", "found but not as specified"},
	{ReasonNotFoundAsExpected, "K8s `must not have` object already missing", "missing as expected"},
	{ReasonFoundMustNotExist, "K8s has a `must not have` object", "found"},
}

// ReasonedError is an error worded as upstream words it: the condition
// reason, and the message shown as is (no object-templates[i] prefix).
type ReasonedError struct {
	Reason string
	Msg    string
}

func (e *ReasonedError) Error() string { return e.Msg }

// event is one evaluated object (or namespace, for a template without a
// name) as a template's status message sees it.
type event struct {
	// key is "namespace/name"; the namespace is the template's own for a
	// cluster-scoped kind whose template carries one (upstream keeps it).
	key string
	// names are the matches of a template without a name.
	names     []string
	compliant bool
	reason    string
	// message is used as is for a reason outside standardReasons.
	message string
}

// statusMessage assembles a template's compliance, condition reason and
// message from its events, with upstream's rules: when any event is
// NonCompliant only the NonCompliant ones are told; events are grouped by
// reason (in standardReasons order, then other reasons sorted), then by the
// names they are about, each group saying the namespaces it covers. Every
// name is listed: upstream cuts nothing here.
func statusMessage(resource string, events []event) (compliant bool, reason, msg string) {
	compliant = true
	for _, e := range events {
		if !e.compliant {
			compliant = false
		}
	}
	byReason := map[string][]event{}
	for _, e := range events {
		if e.compliant == compliant {
			byReason[e.reason] = append(byReason[e.reason], e)
		}
	}
	order := make([]string, 0, len(byReason))
	std := map[string]int{}
	for i, s := range standardReasons {
		std[s.reason] = i
		order = append(order, s.reason)
	}
	var others []string
	for r := range byReason {
		if _, ok := std[r]; !ok {
			others = append(others, r)
		}
	}
	sort.Strings(others)
	order = append(order, others...)

	var reasons, parts []string
	for _, r := range order {
		evs := byReason[r]
		if len(evs) == 0 {
			continue
		}
		sort.SliceStable(evs, func(i, j int) bool { return evs[i].key < evs[j].key })
		var namesStrs []string
		keysByNames := map[string][]event{}
		for _, e := range evs {
			_, names, _ := strings.Cut(e.key, "/")
			if len(e.names) > 0 {
				names = strings.Join(e.names, ", ")
			}
			if _, ok := keysByNames[names]; !ok {
				namesStrs = append(namesStrs, names)
			}
			keysByNames[names] = append(keysByNames[names], e)
		}
		sort.Strings(namesStrs)
		i, ok := std[r]
		if !ok {
			reasons = append(reasons, r)
			for _, names := range namesStrs {
				for _, e := range keysByNames[names] {
					parts = append(parts, e.message)
				}
			}
			continue
		}
		reasons = append(reasons, standardReasons[i].condition)
		byTail := map[string][]string{}
		for _, names := range namesStrs {
			nsSet := map[string]bool{}
			for _, e := range keysByNames[names] {
				if ns, _, _ := strings.Cut(e.key, "/"); ns != "" {
					nsSet[ns] = true
				}
			}
			tail := standardReasons[i].phrase
			if len(nsSet) > 0 {
				nsList := make([]string, 0, len(nsSet))
				for ns := range nsSet {
					nsList = append(nsList, ns)
				}
				sort.Strings(nsList)
				if len(nsList) > 1 {
					tail += " in namespaces: "
				} else {
					tail += " in namespace "
				}
				tail += strings.Join(nsList, ", ")
			}
			byTail[tail] = append(byTail[tail], names)
		}
		tails := make([]string, 0, len(byTail))
		for tail := range byTail {
			tails = append(tails, tail)
		}
		sort.Strings(tails)
		for _, tail := range tails {
			names := byTail[tail]
			sort.Strings(names)
			joined := strings.Join(names, ", ")
			if joined != "" {
				joined = " [" + joined + "]"
			}
			parts = append(parts, resource+joined+" "+tail)
		}
	}
	return compliant, strings.Join(reasons, "; "), strings.Join(parts, "; ")
}

// identifier is upstream's "[name] in namespace ns" (either part may be absent).
func identifier(name, ns string) string {
	s := ""
	if name != "" {
		s = "[" + name + "]"
	}
	if ns != "" {
		if s != "" {
			s += " "
		}
		s += "in namespace " + ns
	}
	return s
}

// events are the template's events, from its findings (or its error).
func (t *TemplateResult) events() []event {
	if t.Error != nil {
		reason, msg := t.errorWording()
		return []event{{key: "ns", reason: reason, message: msg}}
	}
	if t.note != nil {
		return []event{*t.note}
	}
	if t.Unnamed && t.selector == nil {
		return t.unnamedEvents()
	}
	out := make([]event, 0, len(t.Findings))
	for _, f := range t.Findings {
		ns := f.Namespace
		if !t.Mapping.Namespaced {
			ns = t.clusterNS
		}
		e := event{key: ns + "/" + f.Name, compliant: t.compliant(f), reason: t.reasonOf(f)}
		switch {
		case f.ApplyError != nil:
			e.message = f.applyErrorMessage()
		case t.statusUnchecked(f):
			e.message = fmt.Sprintf("%s %s was created successfully, the status of the object will be verified in the next evaluation",
				t.Mapping.Resource, identifier(f.Name, f.Namespace))
		}
		out = append(out, e)
	}
	return out
}

// unnamedEvents: one event per namespace, naming the matches (or nothing,
// when no object matches: upstream names none then).
func (t *TemplateResult) unnamedEvents() []event {
	var out []event
	idx := map[string]int{}
	for _, f := range t.Findings {
		ns := f.Namespace
		if !t.Mapping.Namespaced {
			ns = t.clusterNS
		}
		i, ok := idx[ns]
		if !ok {
			idx[ns] = len(out)
			i = len(out)
			out = append(out, event{key: ns + "/", compliant: f.Compliant(), reason: f.Reason()})
		}
		if f.Name != "" {
			out[i].names = append(out[i].names, f.Name)
		}
	}
	return out
}

func (f *Finding) applyErrorMessage() string {
	m := f.Mapping
	switch f.Action {
	case Create:
		return fmt.Sprintf("%s %s is missing, and cannot be created, reason: `%v`", m.Resource, identifier(f.Name, f.Namespace), f.ApplyError)
	case Delete:
		return fmt.Sprintf("%s %s exists, and cannot be deleted, reason: `%v`", m.Resource, identifier(f.Name, f.Namespace), f.ApplyError)
	}
	where := ""
	if m.Namespaced {
		where = " in namespace " + f.Namespace
	}
	return fmt.Sprintf("%s [%s]%s failed to update with the error `%v`", m.Resource, f.Name, where, f.ApplyError)
}

// errorWording is the reason and message of a template that could not be
// evaluated: upstream's where upstream has one, else ours with the
// template's index.
func (t *TemplateResult) errorWording() (reason, msg string) {
	var re *ReasonedError
	if errors.As(t.Error, &re) {
		return re.Reason, re.Msg
	}
	var uk *UnknownKindError
	if errors.As(t.Error, &uk) {
		return ReasonK8sError, uk.Error()
	}
	return ReasonK8sError, fmt.Sprintf("object-templates[%d]: %v", t.Index, t.Error)
}

// neverSuffix is what upstream appends to a condition message when the
// policy will not be evaluated again in that state.
func neverSuffix(p *policyv1.ConfigurationPolicy, compliant bool) string {
	const f = `. This policy will not be evaluated again due to %s being set to "never".`
	switch {
	case compliant && p.Spec.EvaluationInterval.Compliant == "never":
		return fmt.Sprintf(f, "spec.evaluationInterval.compliant")
	case !compliant && p.Spec.EvaluationInterval.NonCompliant == "never":
		return fmt.Sprintf(f, "spec.evaluationInterval.noncompliant")
	}
	return ""
}

// statusUnchecked: the object was just created from a template that names a
// status, which upstream checks in the next evaluation (NonCompliant until
// then).
func (t *TemplateResult) statusUnchecked(f *Finding) bool {
	return t.hasStatus && f.Applied == Create && f.ApplyError == nil
}

// compliant is the object's compliance as its related object says it.
func (t *TemplateResult) compliant(f *Finding) bool {
	return f.Compliant() && !t.statusUnchecked(f)
}

// reasonOf is the object's reason as its related object says it.
func (t *TemplateResult) reasonOf(f *Finding) string {
	if t.statusUnchecked(f) {
		return ReasonCreated + ", status unchecked"
	}
	return f.Reason()
}
