package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Subject is a Policy or PolicySet a PlacementBinding binds, in the binding's namespace.
type Subject struct {
	// APIGroup must be policy.open-cluster-management.io.
	// +kubebuilder:validation:Enum=policy.open-cluster-management.io
	// +kubebuilder:validation:MinLength=1
	APIGroup string `json:"apiGroup"`
	// Kind is Policy or PolicySet.
	// +kubebuilder:validation:Enum=Policy;PolicySet
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// Name of the Policy or PolicySet.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// PlacementSubject is the placement a PlacementBinding binds, in its namespace.
type PlacementSubject struct {
	// APIGroup is cluster.open-cluster-management.io for a Placement
	// (apps.open-cluster-management.io, for the deprecated PlacementRule, is
	// accepted on the wire but not supported by Flotilla).
	// +kubebuilder:validation:Enum=apps.open-cluster-management.io;cluster.open-cluster-management.io
	// +kubebuilder:validation:MinLength=1
	APIGroup string `json:"apiGroup"`
	// Kind is Placement (or the unsupported PlacementRule).
	// +kubebuilder:validation:Enum=PlacementRule;Placement
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// Name of the placement.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// BindingOverrides change the bound policies on the clusters this binding selects.
type BindingOverrides struct {
	// RemediationAction, when set, must be enforce: the replicas on this
	// binding's clusters are enforced whatever the root says.
	// +optional
	// +kubebuilder:validation:Enum=Enforce;enforce
	RemediationAction string `json:"remediationAction,omitempty"`
}

// SubFilter narrows what a binding selects.
type SubFilter string

// Restricted: the binding places nothing itself; its overrides apply only to
// clusters that another, unrestricted binding of the same policy selects.
const Restricted SubFilter = "restricted"

// PlacementBindingStatus is empty, as in OCM.
type PlacementBindingStatus struct{}

// PlacementBinding binds a Placement to Policies and PolicySets of its
// namespace, with optional overrides.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=placementbindings,scope=Namespaced,shortName=pb
type PlacementBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	PlacementRef PlacementSubject `json:"placementRef"`
	// +kubebuilder:validation:MinItems=1
	Subjects []Subject `json:"subjects"`
	// +optional
	BindingOverrides BindingOverrides `json:"bindingOverrides,omitempty"`
	// +optional
	// +kubebuilder:validation:Enum=restricted
	SubFilter SubFilter              `json:"subFilter,omitempty"`
	Status    PlacementBindingStatus `json:"status,omitempty"`
}

// PlacementBindingList is a list of PlacementBindings.
//
// +kubebuilder:object:root=true
type PlacementBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PlacementBinding `json:"items"`
}

func init() { register(&PlacementBinding{}, &PlacementBindingList{}) }
