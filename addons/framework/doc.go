// Package framework is what an addon author writes against: an Addon answers
// three questions about its agent (its manifests for a cluster, how it
// registers with the hub and which hub rights it gets, how its health is read),
// and a Registry holds the addons a hub manages. The hub's addon manager
// (package addons) iterates the registry; it never picks an addon by name.
//
// A minimal addon, delivering one ConfigMap and asking for no hub credential:
//
//	type hello struct{}
//
//	func (hello) Name() string { return "hello" }
//	func (hello) Options() framework.Options {
//		return framework.Options{Health: framework.Health{Mode: framework.HealthNone}}
//	}
//	func (hello) Manifests(c *clusterv1.ManagedCluster, a *addonv1alpha1.ManagedClusterAddOn) ([]runtime.Object, error) {
//		return []runtime.Object{&corev1.ConfigMap{...}}, nil
//	}
//
//	reg := framework.NewRegistry()
//	_ = reg.Register(hello{})
package framework
