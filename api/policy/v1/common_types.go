package v1

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RemediationAction says whether a policy only reports (inform) or also makes
// the cluster compliant (enforce). Matching is case-insensitive.
// +kubebuilder:validation:Enum=Inform;inform;Enforce;enforce
type RemediationAction string

const (
	// Inform reports violations and changes nothing.
	Inform RemediationAction = "Inform"
	// Enforce creates, updates and deletes objects to remove violations.
	Enforce RemediationAction = "Enforce"
)

// IsEnforce reports whether a is enforce, in any letter case.
func (a RemediationAction) IsEnforce() bool { return strings.EqualFold(string(a), string(Enforce)) }

// Severity is how serious a violation is.
// +kubebuilder:validation:Enum=low;Low;medium;Medium;high;High;critical;Critical
type Severity string

// ComplianceState is the verdict of an evaluation.
// +kubebuilder:validation:Enum=Compliant;Pending;NonCompliant;UnknownCompliancy;Terminating
type ComplianceState string

const (
	// Compliant: every template holds.
	Compliant ComplianceState = "Compliant"
	// NonCompliant: at least one template is violated (or cannot be evaluated).
	NonCompliant ComplianceState = "NonCompliant"
	// Pending: the policy waits on something (dependencies) before it is evaluated.
	Pending ComplianceState = "Pending"
	// UnknownCompliancy: the policy has not been evaluated yet.
	UnknownCompliancy ComplianceState = "UnknownCompliancy"
	// Terminating: the policy is being deleted and its objects pruned.
	Terminating ComplianceState = "Terminating"
)

// ComplianceHistory is one entry of a status history: newest first, at most 10.
type ComplianceHistory struct {
	// LastTimestamp is when the state was recorded.
	LastTimestamp metav1.Time `json:"lastTimestamp,omitempty"`
	// Message is "<State>; <type> - <message>", the same text as the compliance event.
	Message string `json:"message,omitempty"`
	// EventName is the name of the compliance Event that recorded this entry.
	EventName string `json:"eventName,omitempty"`
}

// MaxHistory is how many history entries a status keeps.
const MaxHistory = 10
