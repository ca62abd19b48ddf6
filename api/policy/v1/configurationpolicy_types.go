package v1

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ComplianceType says how an object template must hold. Matching is
// case-insensitive (use Normalize).
// +kubebuilder:validation:Enum=MustHave;Musthave;musthave;MustOnlyHave;Mustonlyhave;mustonlyhave;MustNotHave;Mustnothave;mustnothave
type ComplianceType string

const (
	// MustHave: the object exists and holds at least the template's fields.
	MustHave ComplianceType = "MustHave"
	// MustOnlyHave: the object exists and its maps and lists equal the template's.
	MustOnlyHave ComplianceType = "MustOnlyHave"
	// MustNotHave: no such object exists.
	MustNotHave ComplianceType = "MustNotHave"
)

// Normalize returns the canonical spelling (MustHave, MustOnlyHave,
// MustNotHave), or c unchanged when it is none of them.
func (c ComplianceType) Normalize() ComplianceType {
	for _, k := range []ComplianceType{MustHave, MustOnlyHave, MustNotHave} {
		if strings.EqualFold(string(c), string(k)) {
			return k
		}
	}
	return c
}

// MetadataComplianceType overrides the template's complianceType for
// metadata.labels and metadata.annotations.
// +kubebuilder:validation:Enum=MustHave;Musthave;musthave;MustOnlyHave;Mustonlyhave;mustonlyhave
type MetadataComplianceType string

// RecordDiff says where the difference between the live object and the
// template is recorded. Empty means InStatus, except for Secrets (None).
// +kubebuilder:validation:Enum=Log;InStatus;None
type RecordDiff string

const (
	// RecordDiffLog writes the diff to the engine's log.
	RecordDiffLog RecordDiff = "Log"
	// RecordDiffInStatus stores the diff in relatedObjects[].properties.diff.
	RecordDiffInStatus RecordDiff = "InStatus"
	// RecordDiffNone records no diff.
	RecordDiffNone RecordDiff = "None"
)

// PruneObjectBehavior says what happens to the objects a policy manages when
// the policy is deleted.
// +kubebuilder:validation:Enum=DeleteAll;DeleteIfCreated;None
type PruneObjectBehavior string

const (
	// PruneDeleteAll deletes every object of the policy's MustHave and MustOnlyHave templates.
	PruneDeleteAll PruneObjectBehavior = "DeleteAll"
	// PruneDeleteIfCreated deletes only the objects the policy created (same UID).
	PruneDeleteIfCreated PruneObjectBehavior = "DeleteIfCreated"
	// PruneNone leaves every object in place.
	PruneNone PruneObjectBehavior = "None"
)

// NonEmptyString is a string that must not be empty.
// +kubebuilder:validation:MinLength=1
type NonEmptyString string

// Target selects namespaces: by name globs (include, exclude; exclude wins)
// and by labels. An empty Target selects no namespace.
type Target struct {
	// MatchLabels selects namespaces carrying all of these labels.
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
	// MatchExpressions selects namespaces by label requirements.
	MatchExpressions []metav1.LabelSelectorRequirement `json:"matchExpressions,omitempty"`
	// Include lists namespace names or globs (`*`, `?`, `[...]`) to select.
	// Empty with a label selector means every namespace.
	Include []NonEmptyString `json:"include,omitempty"`
	// Exclude lists namespace names or globs never selected; exclude wins.
	Exclude []NonEmptyString `json:"exclude,omitempty"`
	// TerminatingInclusion says whether namespaces being deleted are selected:
	// IfMatch (when they match the rest), Never, or Default (IfMatch).
	// +kubebuilder:default:=Default
	// +kubebuilder:validation:Enum=IfMatch;Never;Default
	// +optional
	TerminatingInclusion string `json:"terminatingInclusion,omitempty"`
}

// EvaluationInterval is how long to wait before evaluating again in a given
// state. Empty or "watch" means: whenever a watched object or the policy changes.
// "never" means: only when the policy itself changes.
type EvaluationInterval struct {
	// Compliant is the interval after a Compliant evaluation, e.g. "10m" or "never":
	// a Go duration of at most 3 parts of up to 5 digits each (so it always parses).
	// +kubebuilder:validation:Pattern=`^(?:never|watch|(?:[0-9]{1,5}(?:\.[0-9]{1,9})?(?:h|m|s|ms|us|ns)){1,3})$`
	Compliant string `json:"compliant,omitempty"`
	// NonCompliant is the interval after a NonCompliant evaluation, e.g. "45s" or "never",
	// in the same form as Compliant.
	// +kubebuilder:validation:Pattern=`^(?:never|watch|(?:[0-9]{1,5}(?:\.[0-9]{1,9})?(?:h|m|s|ms|us|ns)){1,3})$`
	NonCompliant string `json:"noncompliant,omitempty"`
}

// ObjectTemplate is one object the policy checks.
type ObjectTemplate struct {
	// ComplianceType is MustHave, MustOnlyHave or MustNotHave (any letter case).
	// +kubebuilder:validation:Required
	ComplianceType ComplianceType `json:"complianceType"`
	// MetadataComplianceType applies to labels and annotations; it defaults to ComplianceType.
	// +optional
	MetadataComplianceType MetadataComplianceType `json:"metadataComplianceType,omitempty"`
	// RecordDiff is where differences are recorded (Log, InStatus, None).
	// +optional
	RecordDiff RecordDiff `json:"recordDiff,omitempty"`
	// ObjectSelector narrows a template without metadata.name to the objects
	// whose labels match. Ignored when the template names its object.
	// +optional
	ObjectSelector *metav1.LabelSelector `json:"objectSelector,omitempty"`
	// ObjectDefinition is the object (apiVersion, kind, metadata, and the
	// fields that matter). Without metadata.name it matches every object of
	// its kind in the selected namespaces (inform only).
	// +kubebuilder:validation:Required
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	ObjectDefinition runtime.RawExtension `json:"objectDefinition"`
}

// ConfigurationPolicySpec says which objects must (or must not) exist, and
// how they must look.
type ConfigurationPolicySpec struct {
	// RemediationAction is inform (report) or enforce (make it so); default inform.
	// +kubebuilder:default=inform
	// +optional
	RemediationAction RemediationAction `json:"remediationAction,omitempty"`
	// Severity of a violation: low, medium, high or critical.
	// +optional
	Severity Severity `json:"severity,omitempty"`
	// NamespaceSelector picks the namespaces for namespaced templates without a namespace.
	// +optional
	NamespaceSelector Target `json:"namespaceSelector,omitempty"`
	// ObjectTemplates are the objects to check.
	// +optional
	ObjectTemplates []ObjectTemplate `json:"object-templates,omitempty"`
	// ObjectTemplatesRaw is a YAML list of object templates with
	// managed-cluster templates ({{ ... }}: range, if, lookup...), resolved on
	// the cluster before evaluation. Use it or object-templates, not both.
	// +optional
	ObjectTemplatesRaw string `json:"object-templates-raw,omitempty"`
	// PruneObjectBehavior says what to delete when the policy is deleted; default None.
	// +kubebuilder:default=None
	// +optional
	PruneObjectBehavior PruneObjectBehavior `json:"pruneObjectBehavior,omitempty"`
	// EvaluationInterval throttles re-evaluation per compliance state.
	// +optional
	EvaluationInterval EvaluationInterval `json:"evaluationInterval,omitempty"`
	// CustomMessage replaces the compliance message (events and history) with
	// a Go template, per state.
	// +optional
	CustomMessage CustomMessage `json:"customMessage,omitempty"`
}

// CustomMessage holds Go templates for the compliance message. Each gets
// .DefaultMessage (the message it replaces) and .Policy (the policy as a map
// with its JSON field names, status included).
type CustomMessage struct {
	// Compliant is the template used when the policy is Compliant.
	// +optional
	Compliant string `json:"compliant,omitempty"`
	// NonCompliant is the template used otherwise (NonCompliant or unknown).
	// +optional
	NonCompliant string `json:"noncompliant,omitempty"`
}

// Condition is the verdict of one object template: type "violation" or
// "notification", with a message in OCM's wording.
type Condition struct {
	// Type is "violation" (NonCompliant) or "notification" (Compliant).
	Type string `json:"type"`
	// Status is "True".
	Status metav1.ConditionStatus `json:"status"`
	// LastTransitionTime is when the message last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is a short machine-readable reason.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message says which objects are (not) as specified, and where.
	// +optional
	Message string `json:"message,omitempty"`
}

// TemplateStatus is the result of one object template (field names as OCM's).
type TemplateStatus struct {
	// ComplianceState of this template.
	ComplianceState ComplianceState `json:"Compliant,omitempty"`
	// Conditions holds one violation or notification.
	Conditions []Condition `json:"conditions,omitempty"`
}

// ObjectMetadata names a related object.
type ObjectMetadata struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// ObjectResource identifies a related object.
type ObjectResource struct {
	Kind       string         `json:"kind,omitempty"`
	APIVersion string         `json:"apiVersion,omitempty"`
	Metadata   ObjectMetadata `json:"metadata,omitempty"`
}

// ObjectProperties are facts about a related object.
type ObjectProperties struct {
	// CreatedByPolicy is true when this policy created the object.
	CreatedByPolicy *bool `json:"createdByPolicy,omitempty"`
	// UID of the object when it was last seen or created.
	UID string `json:"uid,omitempty"`
	// Diff is the unified diff enforce would apply (recordDiff InStatus).
	Diff string `json:"diff,omitempty"`
}

// RelatedObject is an object a template looked at, and what it found.
type RelatedObject struct {
	Object ObjectResource `json:"object,omitempty"`
	// Compliant is Compliant or NonCompliant.
	Compliant string `json:"compliant,omitempty"`
	// Reason is, e.g., "Resource found as expected" or "Resource not found but should exist".
	Reason     string            `json:"reason,omitempty"`
	Properties *ObjectProperties `json:"properties,omitempty"`
}

// ConfigurationPolicyStatus is what the engine last found.
type ConfigurationPolicyStatus struct {
	// ComplianceState of the whole policy.
	ComplianceState ComplianceState `json:"compliant,omitempty"`
	// CompliancyDetails has one entry per object template, in order.
	CompliancyDetails []TemplateStatus `json:"compliancyDetails,omitempty"`
	// RelatedObjects are the objects the templates looked at.
	RelatedObjects []RelatedObject `json:"relatedObjects,omitempty"`
	// LastEvaluated is the RFC 3339 time of the evaluation that wrote this status.
	LastEvaluated string `json:"lastEvaluated,omitempty"`
	// LastEvaluatedGeneration is the policy generation that was evaluated.
	// +kubebuilder:validation:Minimum=0
	LastEvaluatedGeneration int64 `json:"lastEvaluatedGeneration,omitempty"`
	// History of compliance changes, newest first, at most 10.
	History []ComplianceHistory `json:"history,omitempty"`
}

// ConfigurationPolicy checks, and on enforce makes, objects on the cluster it
// runs on.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=configurationpolicies,scope=Namespaced,shortName=configpolicy;configpolicies
// +kubebuilder:printcolumn:name="Remediation",type=string,JSONPath=`.spec.remediationAction`
// +kubebuilder:printcolumn:name="Compliance",type=string,JSONPath=`.status.compliant`
// +kubebuilder:printcolumn:name="Severity",type=string,JSONPath=`.spec.severity`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ConfigurationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ConfigurationPolicySpec   `json:"spec,omitempty"`
	Status ConfigurationPolicyStatus `json:"status,omitempty"`
}

// ConfigurationPolicyList is a list of ConfigurationPolicies.
//
// +kubebuilder:object:root=true
type ConfigurationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ConfigurationPolicy `json:"items"`
}

func init() { register(&ConfigurationPolicy{}, &ConfigurationPolicyList{}) }
