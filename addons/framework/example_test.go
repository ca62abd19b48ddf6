package framework_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/addons/framework"
)

// hello delivers one ConfigMap naming its cluster, and gives its agent read
// access to ConfigMaps in its cluster's namespace on the hub.
type hello struct{}

func (hello) Name() string { return "hello" }

func (hello) Options() framework.Options {
	return framework.Options{
		Registration: &framework.Registration{Permissions: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}}},
		Health: framework.Health{Mode: framework.HealthLease},
	}
}

func (hello) Manifests(c *clusterv1.ManagedCluster, a *addonv1alpha1.ManagedClusterAddOn) ([]runtime.Object, error) {
	return []runtime.Object{&corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: a.Status.Namespace},
		Data:       map[string]string{"cluster": c.Name},
	}}, nil
}

func Example() {
	reg, err := framework.NewRegistry(hello{})
	if err != nil {
		panic(err)
	}
	fmt.Println(reg.Names())
	fmt.Println(reg.Register(hello{}))
	// Output:
	// [hello]
	// addon "hello" is registered twice
}
