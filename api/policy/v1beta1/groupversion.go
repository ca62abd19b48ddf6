package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

var (
	// GroupVersion is policy.open-cluster-management.io/v1beta1.
	GroupVersion = schema.GroupVersion{Group: policyv1.GroupName, Version: "v1beta1"}

	// SchemeBuilder registers the kinds of this group version with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds every kind of this group version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &PolicySet{}, &PolicySetList{}, &OperatorPolicy{}, &OperatorPolicyList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
