package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// RemovalAction says what a mustnothave policy does with one kind of object
// the operator installation made.
// +kubebuilder:validation:Enum=Keep;Delete;DeleteIfUnused
type RemovalAction string

const (
	// Keep leaves the objects in place.
	Keep RemovalAction = "Keep"
	// Delete removes them.
	Delete RemovalAction = "Delete"
	// DeleteIfUnused removes an OperatorGroup no other Subscription in its namespace uses.
	DeleteIfUnused RemovalAction = "DeleteIfUnused"
)

// RemovalBehavior is what a mustnothave policy removes, per kind.
type RemovalBehavior struct {
	// OperatorGroups: Keep or DeleteIfUnused (default).
	// +kubebuilder:default=DeleteIfUnused
	// +kubebuilder:validation:Enum=Keep;DeleteIfUnused
	OperatorGroups RemovalAction `json:"operatorGroups,omitempty"`
	// Subscriptions: Keep or Delete (default).
	// +kubebuilder:default=Delete
	// +kubebuilder:validation:Enum=Keep;Delete
	Subscriptions RemovalAction `json:"subscriptions,omitempty"`
	// CSVs: Keep or Delete (default).
	// +kubebuilder:default=Delete
	// +kubebuilder:validation:Enum=Keep;Delete
	CSVs RemovalAction `json:"clusterServiceVersions,omitempty"`
	// CRDs the operator owns: Keep (default) or Delete.
	// +kubebuilder:default=Keep
	// +kubebuilder:validation:Enum=Keep;Delete
	CRDs RemovalAction `json:"customResourceDefinitions,omitempty"`
}

// WithDefaults fills the actions left empty with their defaults.
func (r RemovalBehavior) WithDefaults() RemovalBehavior {
	for _, f := range []struct {
		v   *RemovalAction
		def RemovalAction
	}{{&r.OperatorGroups, DeleteIfUnused}, {&r.Subscriptions, Delete}, {&r.CSVs, Delete}, {&r.CRDs, Keep}} {
		if *f.v == "" {
			*f.v = f.def
		}
	}
	return r
}

// ComplianceConfigAction is the compliance a situation counts as.
// +kubebuilder:validation:Enum=Compliant;NonCompliant
type ComplianceConfigAction string

const (
	// ConfigCompliant: the situation does not make the policy NonCompliant.
	ConfigCompliant ComplianceConfigAction = "Compliant"
	// ConfigNonCompliant: the situation makes the policy NonCompliant.
	ConfigNonCompliant ComplianceConfigAction = "NonCompliant"
)

// ComplianceConfig says how situations that are not failures count.
type ComplianceConfig struct {
	// CatalogSourceUnhealthy: the Subscription's CatalogSource is missing or
	// not READY. Default Compliant.
	// +kubebuilder:default=Compliant
	CatalogSourceUnhealthy ComplianceConfigAction `json:"catalogSourceUnhealthy,omitempty"`
	// DeploymentsUnavailable: an operator Deployment lacks its minimum
	// availability. Default NonCompliant.
	// +kubebuilder:default=NonCompliant
	DeploymentsUnavailable ComplianceConfigAction `json:"deploymentsUnavailable,omitempty"`
	// UpgradesAvailable: an InstallPlan to an upgrade waits for approval.
	// Default Compliant.
	// +kubebuilder:default=Compliant
	UpgradesAvailable ComplianceConfigAction `json:"upgradesAvailable,omitempty"`
	// DeprecationsPresent is accepted for compatibility (Flotilla does not
	// read OLM's deprecation conditions). Default Compliant.
	// +kubebuilder:default=Compliant
	DeprecationsPresent ComplianceConfigAction `json:"deprecationsPresent,omitempty"`
	// MinorChannelUpgradeAvailable is accepted for compatibility. Default Compliant.
	// +kubebuilder:default=Compliant
	MinorChannelUpgradeAvailable ComplianceConfigAction `json:"minorChannelUpgradeAvailable,omitempty"`
}

// OperatorPolicySpec says which operator must (or must not) be installed
// through the Operator Lifecycle Manager (OLM), and how (the fields of OCM's
// OperatorPolicy).
type OperatorPolicySpec struct {
	// Severity of a violation: low, medium, high or critical.
	// +optional
	Severity policyv1.Severity `json:"severity,omitempty"`
	// RemediationAction: inform reports, enforce creates, approves and removes.
	// +kubebuilder:default=inform
	RemediationAction policyv1.RemediationAction `json:"remediationAction"`
	// ComplianceType: musthave (the operator is installed) or mustnothave.
	// +kubebuilder:validation:Enum=musthave;mustnothave
	ComplianceType policyv1.ComplianceType `json:"complianceType"`
	// OperatorGroup the operator's namespace must hold (name, namespace,
	// targetNamespaces, selector...). Without it, any single OperatorGroup in
	// the namespace does, and enforce creates one for all namespaces.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	OperatorGroup *runtime.RawExtension `json:"operatorGroup,omitempty"`
	// Subscription: the spec of an OLM Subscription (name is the package;
	// namespace, channel, source, sourceNamespace, startingCSV, config),
	// plus its name and namespace. Managed-cluster templates ({{ ... }}) in it
	// are resolved on the cluster.
	// +kubebuilder:validation:Required
	// +kubebuilder:pruning:PreserveUnknownFields
	Subscription runtime.RawExtension `json:"subscription"`
	// Versions are the ClusterServiceVersion names allowed; empty allows any.
	// +optional
	Versions []policyv1.NonEmptyString `json:"versions,omitempty"`
	// RemovalBehavior is what mustnothave enforce removes.
	// +kubebuilder:default={}
	// +optional
	RemovalBehavior RemovalBehavior `json:"removalBehavior,omitempty"`
	// UpgradeApproval: Automatic approves InstallPlans to allowed versions;
	// None approves only the initial installation.
	// +kubebuilder:validation:Enum=None;Automatic
	UpgradeApproval string `json:"upgradeApproval"`
	// ComplianceConfig says how situations count.
	// +kubebuilder:default={}
	// +optional
	ComplianceConfig ComplianceConfig `json:"complianceConfig,omitempty"`
}

// OperatorPolicyStatus is what the engine last found.
type OperatorPolicyStatus struct {
	// ComplianceState of the policy.
	ComplianceState policyv1.ComplianceState `json:"compliant,omitempty"`
	// ObservedGeneration is the generation last evaluated.
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions in upstream's types: Compliant, ValidPolicySpec,
	// OperatorGroupCompliant, SubscriptionCompliant, InstallPlanCompliant,
	// ClusterServiceVersionCompliant, CustomResourceDefinitionCompliant,
	// DeploymentCompliant, CatalogSourcesUnhealthy.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// RelatedObjects are the OLM objects and Deployments looked at.
	RelatedObjects []policyv1.RelatedObject `json:"relatedObjects"`
	// ResolvedSubscriptionLabel is the Subscription's package and namespace.
	// +optional
	ResolvedSubscriptionLabel string `json:"resolvedSubscriptionLabel,omitempty"`
	// History of compliance changes, newest first, at most 10 (Flotilla's
	// shape, as ConfigurationPolicy's).
	// +optional
	History []policyv1.ComplianceHistory `json:"history,omitempty"`
}

// OperatorPolicy installs and governs an operator through OLM.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=operatorpolicies,scope=Namespaced
// +kubebuilder:printcolumn:name="Compliance",type=string,JSONPath=`.status.compliant`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OperatorPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   OperatorPolicySpec   `json:"spec,omitempty"`
	Status OperatorPolicyStatus `json:"status,omitempty"`
}

// OperatorPolicyList is a list of OperatorPolicies.
//
// +kubebuilder:object:root=true
type OperatorPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OperatorPolicy `json:"items"`
}
