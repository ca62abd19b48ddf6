package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// NonEmptyString is a string of at least one character.
// +kubebuilder:validation:MinLength=1
type NonEmptyString string

// PolicySetSpec names the policies of the set.
type PolicySetSpec struct {
	// Description says what the set is for.
	Description string `json:"description,omitempty"`
	// Policies are names of Policies in the set's namespace.
	Policies []NonEmptyString `json:"policies"`
}

// PolicySetStatusPlacement is one binding of the set to a placement.
type PolicySetStatusPlacement struct {
	PlacementBinding string `json:"placementBinding,omitempty"`
	Placement        string `json:"placement,omitempty"`
	PlacementRule    string `json:"placementRule,omitempty"`
}

// PolicySetStatus is the set's aggregated compliance.
type PolicySetStatus struct {
	Placement []PolicySetStatusPlacement `json:"placement,omitempty"`
	// Compliant aggregates the member policies (NonCompliant > Pending > Compliant).
	Compliant policyv1.ComplianceState `json:"compliant,omitempty"`
	// StatusMessage explains a missing compliance: policies that do not exist,
	// are disabled, or have no status yet.
	StatusMessage string `json:"statusMessage,omitempty"`
}

// PolicySet groups Policies of its namespace so that one PlacementBinding
// places them all; its status aggregates their compliance.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=policysets,scope=Namespaced,shortName=plcset
// +kubebuilder:printcolumn:name="Compliance state",type="string",JSONPath=".status.compliant"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type PolicySet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PolicySetSpec   `json:"spec"`
	Status PolicySetStatus `json:"status,omitempty"`
}

// PolicySetList is a list of PolicySets.
//
// +kubebuilder:object:root=true
type PolicySetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PolicySet `json:"items"`
}
