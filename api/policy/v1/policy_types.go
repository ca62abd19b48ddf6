package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Labels and annotations of the governance framework.
const (
	// RootPolicyLabel on a replica names its root policy as "<namespace>.<name>".
	RootPolicyLabel = GroupName + "/root-policy"
	// ClusterNameLabel on a replica names the managed cluster it is for.
	ClusterNameLabel = GroupName + "/cluster-name"
	// ClusterNamespaceLabel on a replica names the cluster namespace it lives in.
	ClusterNamespaceLabel = GroupName + "/cluster-namespace"
	// StandardsAnnotation, CategoriesAnnotation and ControlsAnnotation classify a
	// policy; each holds a comma-separated list.
	StandardsAnnotation  = GroupName + "/standards"
	CategoriesAnnotation = GroupName + "/categories"
	ControlsAnnotation   = GroupName + "/controls"
)

// PolicyTemplate is one policy engine object (a ConfigurationPolicy, say) a
// Policy delivers, with how it is applied.
type PolicyTemplate struct {
	// ObjectDefinition is the object to create on the managed cluster.
	// +kubebuilder:pruning:PreserveUnknownFields
	ObjectDefinition runtime.RawExtension `json:"objectDefinition"`
	// ExtraDependencies apply to this template only, beside spec.dependencies.
	ExtraDependencies []PolicyDependency `json:"extraDependencies,omitempty"`
	// IgnorePending leaves this template's Pending state out of the policy's compliance.
	IgnorePending bool `json:"ignorePending,omitempty"`
}

// PolicyDependency names an object whose status.compliant must reach Compliance
// before the templates that depend on it are created.
type PolicyDependency struct {
	metav1.TypeMeta `json:",inline"`
	// Name of the object depended on.
	Name string `json:"name"`
	// Namespace of the object depended on; empty for the policy's own namespace
	// or a cluster-scoped object.
	Namespace string `json:"namespace,omitempty"`
	// Compliance is the state the object must report.
	// +kubebuilder:validation:Enum=Compliant;Pending;NonCompliant
	Compliance ComplianceState `json:"compliance"`
}

// HubTemplateOptions changes how hub templates are resolved.
type HubTemplateOptions struct {
	// ServiceAccountName is a service account in the policy's namespace whose
	// rights bound the hub templates' lookups. Flotilla does not support it yet:
	// lookups stay restricted to the policy's namespace and its ManagedCluster.
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// PolicySpec is what a Policy delivers and how.
type PolicySpec struct {
	// Disabled removes the policy from every managed cluster while set.
	Disabled bool `json:"disabled"`
	// CopyPolicyMetadata copies all the root's labels and annotations to its
	// replicas when true (the default); when false only the governance
	// framework's own (policy.open-cluster-management.io/...) are copied.
	// +optional
	CopyPolicyMetadata *bool `json:"copyPolicyMetadata,omitempty"`
	// RemediationAction, when set, overrides the remediationAction of every template.
	// +optional
	RemediationAction RemediationAction `json:"remediationAction,omitempty"`
	// PolicyTemplates are the objects delivered to each managed cluster.
	PolicyTemplates []*PolicyTemplate `json:"policy-templates"`
	// Dependencies apply to every template of the policy.
	Dependencies []PolicyDependency `json:"dependencies,omitempty"`
	// HubTemplateOptions changes how hub templates are resolved.
	// +optional
	HubTemplateOptions *HubTemplateOptions `json:"hubTemplateOptions,omitempty"`
}

// PlacementDecision is one cluster a placement chose.
type PlacementDecision struct {
	ClusterName      string `json:"clusterName,omitempty"`
	ClusterNamespace string `json:"clusterNamespace,omitempty"`
}

// Placement reports one binding of the policy to a placement, directly or
// through a PolicySet.
type Placement struct {
	// PlacementBinding is the binding's name.
	PlacementBinding string `json:"placementBinding,omitempty"`
	// PlacementRule is a bound PlacementRule (not supported by Flotilla).
	PlacementRule string `json:"placementRule,omitempty"`
	// Placement is the bound Placement's name.
	Placement string `json:"placement,omitempty"`
	// Decisions are the clusters the placement chose (OCM leaves this empty for Placements).
	Decisions []PlacementDecision `json:"decisions,omitempty"`
	// PolicySet is set when the policy is bound through this PolicySet.
	PolicySet string `json:"policySet,omitempty"`
}

// CompliancePerClusterStatus is one cluster's compliance with a root policy.
type CompliancePerClusterStatus struct {
	ComplianceState  ComplianceState `json:"compliant,omitempty"`
	ClusterName      string          `json:"clustername,omitempty"`
	ClusterNamespace string          `json:"clusternamespace,omitempty"`
}

// DetailsPerTemplate is one template's compliance on a cluster and its recent history.
type DetailsPerTemplate struct {
	// +kubebuilder:pruning:PreserveUnknownFields
	TemplateMeta    metav1.ObjectMeta   `json:"templateMeta,omitempty"`
	ComplianceState ComplianceState     `json:"compliant,omitempty"`
	History         []ComplianceHistory `json:"history,omitempty"`
}

// PolicyStatus is the observed state. A root policy (on the hub, in its own
// namespace) uses placement and status; a replica uses compliant and details.
type PolicyStatus struct {
	// Placement lists the root's bindings (root only).
	Placement []*Placement `json:"placement,omitempty"`
	// Status lists each cluster's compliance (root only).
	Status []*CompliancePerClusterStatus `json:"status,omitempty"`
	// ComplianceState is the overall verdict: on a root, aggregated over the
	// clusters (NonCompliant > Pending > unknown > Compliant); on a replica, its cluster's.
	// +kubebuilder:validation:Enum=Compliant;Pending;NonCompliant
	ComplianceState ComplianceState `json:"compliant,omitempty"`
	// Details lists each template's compliance and history (replica only).
	Details []*DetailsPerTemplate `json:"details,omitempty"`
}

// Policy wraps policy engine objects in spec.policy-templates and delivers them
// to the managed clusters its PlacementBindings choose.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=policies,scope=Namespaced,shortName=plc
// +kubebuilder:printcolumn:name="Remediation action",type="string",JSONPath=".spec.remediationAction"
// +kubebuilder:printcolumn:name="Compliance state",type="string",JSONPath=".status.compliant"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type Policy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	Spec   PolicySpec   `json:"spec"`
	Status PolicyStatus `json:"status,omitempty"`
}

// PolicyList is a list of Policies.
//
// +kubebuilder:object:root=true
type PolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Policy `json:"items"`
}

func init() { register(&Policy{}, &PolicyList{}) }
