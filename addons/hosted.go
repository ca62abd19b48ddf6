package addons

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/addons/framework"
	"flotilla.dev/flotilla/internal/ocm"
)

// HostedAgentArgs returns the flotilla command line of a's agent on cluster,
// read from the Deployment its own manifests deliver (a container whose args
// start with "addon-agent"), so a process run next to the klusterlet (OCM's
// Hosted mode, `flotilla dev` without nodes) and the Pod the works deliver run
// the same thing. false: the addon's agent is not a flotilla subcommand.
func HostedAgentArgs(a framework.Addon, cluster string) ([]string, bool) {
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: a.Name(), Namespace: cluster},
		Status: addonv1alpha1.ManagedClusterAddOnStatus{Namespace: ocm.DefaultAddonInstallNamespace}}
	objs, err := a.Manifests(&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}, mca)
	if err != nil {
		return nil, false
	}
	for _, o := range objs {
		d, ok := o.(*appsv1.Deployment)
		if !ok {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if len(c.Args) > 0 && c.Args[0] == "addon-agent" {
				return append([]string(nil), c.Args...), true
			}
		}
	}
	return nil, false
}
