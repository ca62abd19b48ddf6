package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"

	distributionv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	policyv1beta1 "flotilla.dev/flotilla/api/policy/v1beta1"
)

// New returns a scheme with the built-in Kubernetes types and all OCM hub types.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		clusterv1.Install, clusterv1alpha1.Install, clusterv1beta1.Install, clusterv1beta2.Install,
		workv1.Install, workv1alpha1.Install,
		addonv1alpha1.Install, addonv1beta1.Install,
		policyv1.AddToScheme, policyv1beta1.AddToScheme,
		distributionv1alpha1.AddToScheme,
	} {
		utilruntime.Must(add(s))
	}
	return s
}
