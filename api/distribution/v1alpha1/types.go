package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
)

// PolicyAnnotation on a ManifestWorkReplicaSet names the DistributionPolicy
// (in the replica set's namespace) its works are rendered with.
const PolicyAnnotation = "flotilla.dev/distribution-policy"

// DistributionPolicy changes a ManifestWorkReplicaSet's template per cluster
// (spec.overrides) and divides its workloads' replicas among the clusters
// (spec.replicas). A replica set uses it through PolicyAnnotation; several
// replica sets may share one.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=dp
// +kubebuilder:printcolumn:name="OVERRIDES",type=integer,JSONPath=`.status.overrideCount`
// +kubebuilder:printcolumn:name="DIVISION",type=string,JSONPath=`.spec.replicas.type`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type DistributionPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec DistributionPolicySpec `json:"spec,omitempty"`
	// +optional
	Status DistributionPolicyStatus `json:"status,omitempty"`
}

// DistributionPolicySpec is the policy: the overrides, applied in order, and
// the replica division.
type DistributionPolicySpec struct {
	// Overrides are applied to each cluster's copy of the template in list
	// order (and, within a rule, images, labels, annotations, command, args,
	// then jsonPatch). A rule applies to a manifest when its clusters and its
	// manifests both select it.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	Overrides []OverrideRule `json:"overrides,omitempty"`

	// Replicas says how the replicas of the template's workloads are divided
	// among the clusters. Unset: every cluster runs spec.replicas (Duplicated).
	// +optional
	Replicas *ReplicaDivision `json:"replicas,omitempty"`
}

// OverrideRule is one named override.
type OverrideRule struct {
	// Name identifies the rule in the status and in failure messages.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Clusters selects the clusters the rule applies to; empty selects every cluster.
	// +optional
	Clusters ClusterSelector `json:"clusters,omitempty"`

	// Manifests selects the template manifests the rule changes; empty
	// selects every manifest. A manifest is selected when any entry matches.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Manifests []ManifestSelector `json:"manifests,omitempty"`

	// Images change container images, component by component.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Images []ImageOverride `json:"images,omitempty"`

	// Labels add, replace or remove metadata.labels.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Labels []MetadataOverride `json:"labels,omitempty"`

	// Annotations add, replace or remove metadata.annotations.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Annotations []MetadataOverride `json:"annotations,omitempty"`

	// Command appends to or removes from containers' command.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Command []ArgsOverride `json:"command,omitempty"`

	// Args appends to or removes from containers' args.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Args []ArgsOverride `json:"args,omitempty"`

	// JSONPatch is an RFC 6902 patch applied to each selected manifest, for
	// anything the other fields do not cover. String values may hold
	// templates.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	JSONPatch []JSONPatchOperation `json:"jsonPatch,omitempty"`
}

// ClusterSelector selects managed clusters, with the shapes a Placement's
// requiredClusterSelector uses. Its parts are ANDed; an empty selector
// selects every cluster.
type ClusterSelector struct {
	// Names are cluster names; when set, the cluster must be one of them.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	Names []string `json:"names,omitempty"`
	// LabelSelector selects clusters by label.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// ClaimSelector selects clusters by the ClusterClaims in their status.
	// +optional
	ClaimSelector *clusterv1beta1.ClusterClaimSelector `json:"claimSelector,omitempty"`
}

// ManifestSelector selects template manifests; an empty field matches any value.
type ManifestSelector struct {
	// Group is the API group ("" is the core group only when Kind is set; "apps").
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Group string `json:"group,omitempty"`
	// Kind, e.g. Deployment.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name is the manifest's metadata.name.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name string `json:"name,omitempty"`
	// Namespace is the manifest's metadata.namespace.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// Operation is what an override does with its value.
// +kubebuilder:validation:Enum=add;replace;remove
type Operation string

// Override operations.
const (
	// OpAdd sets a value that is missing (for images: a component the image lacks; for metadata: a key).
	OpAdd Operation = "add"
	// OpReplace sets a value, present or not.
	OpReplace Operation = "replace"
	// OpRemove removes it.
	OpRemove Operation = "remove"
)

// ImageComponent is one part of an image reference
// registry/repository:tag@digest.
// +kubebuilder:validation:Enum=Registry;Repository;Tag;Digest
type ImageComponent string

// Image components.
const (
	Registry   ImageComponent = "Registry"
	Repository ImageComponent = "Repository"
	Tag        ImageComponent = "Tag"
	Digest     ImageComponent = "Digest"
)

// ImageOverride changes one component of the images of a manifest's
// containers (spec.containers, spec.initContainers and
// spec.template.spec.{containers,initContainers}, at any depth of a pod
// template the manifest carries).
//
// +kubebuilder:validation:XValidation:rule="(has(self.operation) && self.operation == 'remove') || (has(self.value) && size(self.value) > 0)",message="value is required unless operation is remove"
// +kubebuilder:validation:XValidation:rule="!(self.component == 'Repository' && has(self.operation) && self.operation == 'remove')",message="an image's repository cannot be removed"
// +kubebuilder:validation:XValidation:rule="!has(self.value) || self.value.contains('{{') || (self.component == 'Registry' ? self.value.matches('^[a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?(:[0-9]+)?$') : self.component == 'Repository' ? self.value.matches('^[a-z0-9]+([._-]+[a-z0-9]+)*(/[a-z0-9]+([._-]+[a-z0-9]+)*)*$') : self.component == 'Tag' ? self.value.matches('^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$') : self.value.matches('^[a-z0-9]+([+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$'))",message="value is not a valid image component: a registry is host[:port], a repository lower-case path, a tag up to 128 of [A-Za-z0-9_.-], a digest algorithm:hex"
type ImageOverride struct {
	// Container limits the override to the containers of this name; empty: every container.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Container string `json:"container,omitempty"`
	// Component is the part of the image changed.
	Component ImageComponent `json:"component"`
	// Operation: add (only where the image has no such component), replace (default), remove.
	// +kubebuilder:default=replace
	// +optional
	Operation Operation `json:"operation,omitempty"`
	// Value is the new component (templates allowed); unused by remove.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Value string `json:"value,omitempty"`
}

// MetadataOverride changes one label or annotation.
type MetadataOverride struct {
	// Key is the label or annotation key: [prefix/]name, a DNS subdomain
	// prefix and a name of up to 63 characters.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	Key string `json:"key"`
	// Operation: add (only where the key is missing), replace (default), remove.
	// +kubebuilder:default=replace
	// +optional
	Operation Operation `json:"operation,omitempty"`
	// Value is the new value (templates allowed); unused by remove.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Value string `json:"value,omitempty"`
}

// ArgsOperation is what an ArgsOverride does.
// +kubebuilder:validation:Enum=append;remove
type ArgsOperation string

// Command and args operations.
const (
	// ArgsAppend appends the values.
	ArgsAppend ArgsOperation = "append"
	// ArgsRemove removes every item equal to one of the values.
	ArgsRemove ArgsOperation = "remove"
)

// ArgsOverride appends to or removes from a container's command or args.
type ArgsOverride struct {
	// Container names the container changed; empty: every container.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Container string `json:"container,omitempty"`
	// Operation: append or remove.
	Operation ArgsOperation `json:"operation"`
	// Values are appended or removed (templates allowed).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=4096
	Values []string `json:"values"`
}

// JSONPatchOperation is one RFC 6902 operation.
//
// +kubebuilder:validation:XValidation:rule="!(self.op in ['move', 'copy']) || (has(self.from) && size(self.from) > 0)",message="move and copy need from"
type JSONPatchOperation struct {
	// Op is the RFC 6902 operation.
	// +kubebuilder:validation:Enum=add;remove;replace;move;copy;test
	Op string `json:"op"`
	// Path is a JSON pointer (RFC 6901) into the manifest.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(/([^~]|~[01])*)*$`
	Path string `json:"path"`
	// From is the source pointer of move and copy.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(/([^~]|~[01])*)*$`
	// +optional
	From string `json:"from,omitempty"`
	// Value of add, replace and test; strings in it may hold templates.
	// +optional
	Value *apiextensionsv1.JSON `json:"value,omitempty"`
}

// DivisionType says how replicas are divided.
// +kubebuilder:validation:Enum=Duplicated;Weighted;Capacity
type DivisionType string

// Division types.
const (
	// Duplicated: every cluster runs the manifest's spec.replicas (OCM's behaviour).
	Duplicated DivisionType = "Duplicated"
	// Weighted: spec.replicas is divided in proportion to static weights.
	Weighted DivisionType = "Weighted"
	// Capacity: spec.replicas is divided in proportion to how many replicas
	// fit in each cluster's allocatable resources (status.allocatable, else
	// status.capacity) given the pod template's requests.
	Capacity DivisionType = "Capacity"
)

// ReplicaDivision divides the replicas of the template's workloads.
//
// +kubebuilder:validation:XValidation:rule="self.type != 'Weighted' || (has(self.weights) && size(self.weights) > 0)",message="Weighted needs weights"
// +kubebuilder:validation:XValidation:rule="self.type == 'Weighted' || !has(self.weights) || size(self.weights) == 0",message="weights are only read by Weighted"
type ReplicaDivision struct {
	// Type is the division (default Duplicated).
	// +kubebuilder:default=Duplicated
	// +optional
	Type DivisionType `json:"type,omitempty"`
	// Weights (Weighted): a cluster takes the weight of the first entry whose
	// clusters select it; a cluster no entry selects gets no replicas.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Weights []ClusterWeight `json:"weights,omitempty"`
	// ExtraKinds opts other kinds with spec.replicas into the division
	// (apps Deployment, StatefulSet and ReplicaSet always are).
	// +kubebuilder:validation:MaxItems=16
	// +optional
	ExtraKinds []WorkloadKind `json:"extraKinds,omitempty"`
}

// ClusterWeight is a static weight for the clusters a selector selects.
type ClusterWeight struct {
	// Clusters selects the clusters that take this weight.
	Clusters ClusterSelector `json:"clusters"`
	// Weight is relative to the other clusters' (0: no replicas).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	Weight int32 `json:"weight"`
}

// WorkloadKind names a kind whose spec.replicas is divided.
type WorkloadKind struct {
	// Group is the API group.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Group string `json:"group,omitempty"`
	// Kind of the manifest.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Resource is the kind's plural resource name (for the status feedback of
	// ready and available replicas).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Resource string `json:"resource"`
}

// DistributionPolicyStatus is written by the hub's ManifestWorkReplicaSet
// controller: one entry per replica set using the policy.
type DistributionPolicyStatus struct {
	// OverrideCount is len(spec.overrides) (a column of kubectl get).
	// +optional
	OverrideCount int64 `json:"overrideCount,omitempty"`
	// ReplicaSets are the ManifestWorkReplicaSets that use the policy, by name.
	// +kubebuilder:validation:MaxItems=1024
	// +listType=map
	// +listMapKey=name
	// +optional
	ReplicaSets []ReplicaSetStatus `json:"replicaSets,omitempty"`
}

// ReplicaSetStatus is what the policy did to one replica set's works.
type ReplicaSetStatus struct {
	// Name of the ManifestWorkReplicaSet.
	Name string `json:"name"`
	// Clusters is how many clusters were rendered.
	// +optional
	Clusters int64 `json:"clusters,omitempty"`
	// Overrides counts, per rule, the clusters it applied to (spec order).
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Overrides []OverrideCount `json:"overrides,omitempty"`
	// Failures are clusters whose render failed (at most 20; the replica
	// set's DistributionPolicyApplied condition counts them all).
	// +kubebuilder:validation:MaxItems=20
	// +optional
	Failures []RenderFailure `json:"failures,omitempty"`
	// Workloads are the divided workloads with their replicas per cluster and
	// the ready and available replicas summed from the works' status feedback.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Workloads []WorkloadStatus `json:"workloads,omitempty"`
}

// OverrideCount is how many clusters one rule applied to.
type OverrideCount struct {
	Rule     string `json:"rule"`
	Clusters int64  `json:"clusters"`
}

// RenderFailure is one cluster whose render failed.
type RenderFailure struct {
	Cluster string `json:"cluster"`
	// Rule names the override that failed (empty: the replica division).
	// +optional
	Rule    string `json:"rule,omitempty"`
	Message string `json:"message"`
}

// WorkloadStatus is one divided workload.
type WorkloadStatus struct {
	// +optional
	Group string `json:"group,omitempty"`
	Kind  string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Desired is the template's spec.replicas (the total divided).
	Desired int64 `json:"desired"`
	// Clusters is how many clusters run a share (more than 0 replicas).
	// +optional
	Clusters int64 `json:"clusters,omitempty"`
	// Replicas, ReadyReplicas and AvailableReplicas are summed over the
	// clusters' status feedback (status.replicas: the pods created).
	// +optional
	Replicas int64 `json:"replicas,omitempty"`
	// +optional
	ReadyReplicas int64 `json:"readyReplicas,omitempty"`
	// +optional
	AvailableReplicas int64 `json:"availableReplicas,omitempty"`
}

// DistributionPolicyList is a list of DistributionPolicies.
//
// +kubebuilder:object:root=true
type DistributionPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DistributionPolicy `json:"items"`
}
