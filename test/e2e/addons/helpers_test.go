package addons_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/addons/ops"
)

func spoke(i int) kubernetes.Interface { return kubernetes.NewForConfigOrDie(env.Clusters[i].Config) }

func getAddon(cluster, name string) (*addonv1alpha1.ManagedClusterAddOn, error) {
	var m addonv1alpha1.ManagedClusterAddOn
	err := hubCli.Get(context.Background(), client.ObjectKey{Namespace: cluster, Name: name}, &m)
	return &m, err
}

// eventuallyCondition waits until the addon's condition has status and returns it.
func eventuallyCondition(t *testing.T, cluster, name, typ string, status metav1.ConditionStatus) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	require.Eventually(t, func() bool {
		m, err := getAddon(cluster, name)
		if err != nil {
			return false
		}
		c := meta.FindStatusCondition(m.Status.Conditions, typ)
		if c == nil || c.Status != status {
			return false
		}
		got = *c
		return true
	}, timeout, tick, "%s/%s condition %s never became %s", cluster, name, typ, status)
	return got
}

// disable disables the addons on cluster and waits until they are gone.
func disable(t *testing.T, cluster string, names ...string) {
	t.Helper()
	_, _ = ops.Disable(context.Background(), hubCli, ops.DisableOptions{Names: names, Clusters: []string{cluster}})
	require.Eventually(t, func() bool {
		for _, n := range names {
			if _, err := getAddon(cluster, n); !apierrors.IsNotFound(err) {
				return false
			}
		}
		return true
	}, timeout, tick, "addons %v on %s are not removed", names, cluster)
}

// eventuallyReason waits until the addon's condition has reason and returns it
// (an addon passes through other reasons first, e.g. while its configs are set).
func eventuallyReason(t *testing.T, cluster, name, typ, reason string) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	require.Eventually(t, func() bool {
		m, err := getAddon(cluster, name)
		if err != nil {
			return false
		}
		c := meta.FindStatusCondition(m.Status.Conditions, typ)
		if c == nil || c.Reason != reason {
			return false
		}
		got = *c
		return true
	}, timeout, tick, "%s/%s condition %s never had reason %s", cluster, name, typ, reason)
	return got
}
