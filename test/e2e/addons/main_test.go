// Package addons_test tests the addon framework end to end on real apiservers:
// a hub (hub.Run, addon manager included) and two klusterlets, in-process, with
// the example addon and a few test addons (broken manifests, a greedy
// registration, a pre-delete hook, a Placements install).
package addons_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/addons/example"
	"flotilla.dev/flotilla/addons/framework"
	"flotilla.dev/flotilla/hub"
	"flotilla.dev/flotilla/klusterlet"
	"flotilla.dev/flotilla/test/fleet"
	"flotilla.dev/flotilla/test/testenv"
)

var (
	env    *testenv.Env
	hubCli client.Client
)

const (
	timeout = 2 * time.Minute
	tick    = 200 * time.Millisecond
)

// cm is a ConfigMap manifest.
func cm(name, ns string) *corev1.ConfigMap {
	return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"k": "v"}}
}

// testAddon is an addon made of functions, for the cases below.
type testAddon struct {
	name      string
	opts      framework.Options
	manifests func(*clusterv1.ManagedCluster, *addonv1alpha1.ManagedClusterAddOn) ([]runtime.Object, error)
}

func (a testAddon) Name() string               { return a.name }
func (a testAddon) Options() framework.Options { return a.opts }
func (a testAddon) Manifests(c *clusterv1.ManagedCluster, m *addonv1alpha1.ManagedClusterAddOn) ([]runtime.Object, error) {
	return a.manifests(c, m)
}

func oneConfigMap(name string) func(*clusterv1.ManagedCluster, *addonv1alpha1.ManagedClusterAddOn) ([]runtime.Object, error) {
	return func(_ *clusterv1.ManagedCluster, m *addonv1alpha1.ManagedClusterAddOn) ([]runtime.Object, error) {
		return []runtime.Object{cm(name, "default")}, nil
	}
}

func registry() (*framework.Registry, error) {
	none := framework.Health{Mode: framework.HealthNone}
	return framework.NewRegistry(
		example.Addon{},
		testAddon{name: "broken", opts: framework.Options{Health: none}, manifests: func(*clusterv1.ManagedCluster, *addonv1alpha1.ManagedClusterAddOn) ([]runtime.Object, error) {
			return nil, errors.New("template value .Values.image is missing")
		}},
		testAddon{name: "greedy", opts: framework.Options{Health: none, Registration: &framework.Registration{Permissions: []rbacv1.PolicyRule{
			{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, Verbs: []string{"create"}}}}},
			manifests: oneConfigMap("greedy")},
		testAddon{name: "placed", opts: framework.Options{Health: none}, manifests: oneConfigMap("placed")},
		testAddon{name: "versioned", opts: framework.Options{Health: none}, manifests: oneConfigMap("versioned")},
		testAddon{name: "signed", opts: framework.Options{Health: none, Registration: &framework.Registration{SignerName: customSigner,
			Subject: &addonv1alpha1.Subject{User: "signed-client", Groups: []string{"signed-clients"}}}}, manifests: oneConfigMap("signed")},
		testAddon{name: "hooked", opts: framework.Options{Health: none}, manifests: func(_ *clusterv1.ManagedCluster, m *addonv1alpha1.ManagedClusterAddOn) ([]runtime.Object, error) {
			hook := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
				ObjectMeta: metav1.ObjectMeta{Name: "hooked-cleanup", Namespace: "default", Labels: map[string]string{"open-cluster-management.io/addon-pre-delete": ""}},
				Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "cleanup"}}}}
			return []runtime.Object{cm("hooked", "default"), hook}, nil
		}},
	)
}

// TestMain: a hub with the addons above, and two clusters joined and
// accepted. cluster2's addon credentials are short-lived and renewed when 99%
// of their life is left: TestAddonCredentialRotation sees them rotate within
// seconds (the signer allows no less than 600 s).
func TestMain(m *testing.M) {
	reg, err := registry()
	if err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
	os.Exit(fleet.Main(m, fleet.Options{Clusters: 2, Join: true, Hub: hub.Options{Addons: reg},
		Klusterlet: func(i int, o *klusterlet.Options) {
			if i == 1 {
				o.Registration.AddonCertExpirationSeconds, o.Registration.RotationFraction = 600, 0.99
			}
		},
		Setup: func(_ context.Context, f *fleet.Fleet) error {
			env, hubCli = f.Env, f.Client
			return nil
		}}, nil))
}
