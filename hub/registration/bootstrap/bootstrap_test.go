package bootstrap

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/hub/registration/webhook"
	"flotilla.dev/flotilla/internal/pki"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/manifests"
	"flotilla.dev/flotilla/test/testenv"
)

// TestInitGuardsBeforeTheHubRuns: between `init` and the first `flotilla hub`, a
// bootstrap token holder cannot create a ManagedCluster that is already accepted
// (nor any other: writes fail closed). Running init again keeps a hub's own
// webhook configuration.
func TestInitGuardsBeforeTheHubRuns(t *testing.T) {
	ctx := context.Background()
	env := testenv.Start(t, testenv.Options{})
	res, err := Init(ctx, Options{Config: env.Hub.Config})
	require.NoError(t, err)
	require.Equal(t, pki.CAHashes(env.Hub.CAPEM), []string{res.CAHash}, "the join command pins the hub CA")
	assert.Contains(t, res.JoinCommand, " --ca-hash "+res.CAHash)

	tokenHolder := &rest.Config{Host: env.Hub.URL, BearerToken: res.Token, TLSClientConfig: rest.TLSClientConfig{CAData: env.Hub.CAPEM}}
	c, err := client.New(tokenHolder, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	err = c.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "early"}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}})
	require.Error(t, err, "an accepted cluster created before any hub runs")
	assert.Contains(t, err.Error(), "flotilla-hub-not-running-yet")
	admin, err := client.New(env.Hub.Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	err = admin.Get(ctx, client.ObjectKey{Name: "early"}, &clusterv1.ManagedCluster{})
	assert.True(t, apierrors.IsNotFound(err), "nothing was created: %v", err)

	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Name: webhook.ConfigurationName}, vwc))
	require.True(t, webhook.IsPlaceholder(vwc))
	require.NotEmpty(t, vwc.Webhooks)
	assert.Equal(t, admissionregistrationv1.Fail, *vwc.Webhooks[0].FailurePolicy)

	// A hub registers itself; init again leaves that alone.
	url := "https://127.0.0.1:2" + webhook.Path
	vwc.Webhooks[0].ClientConfig.URL = &url
	require.NoError(t, admin.Update(ctx, vwc))
	_, err = Init(ctx, Options{Config: env.Hub.Config})
	require.NoError(t, err)
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Name: webhook.ConfigurationName}, vwc))
	assert.False(t, webhook.IsPlaceholder(vwc))
	assert.Equal(t, url, *vwc.Webhooks[0].ClientConfig.URL)
}

// TestInitInstallsAdmissionPolicies: a hub whose OCM CRDs were installed by
// someone else (clusteradm, say) gets Flotilla's admission policies from init,
// and they refuse what the CRDs alone admit, with no hub process running.
func TestInitInstallsAdmissionPolicies(t *testing.T) {
	ctx := context.Background()
	env := testenv.Start(t, testenv.Options{HubCRDs: []string{}})
	crds, err := manifests.CRDs(manifests.HubCRDs)
	require.NoError(t, err)
	ext := apiextensionsclient.NewForConfigOrDie(env.Hub.Config)
	for _, crd := range crds {
		_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	admin, err := client.New(env.Hub.Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	tooMany := func(name string) *clusterv1beta1.Placement {
		return &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault}}
	}
	// The CRD alone cannot say no to -1 (an int32 the typed client can send).
	require.Eventually(t, func() bool {
		p := tooMany("before")
		p.Spec.NumberOfClusters = ptr.To[int32](-1)
		return admin.Create(ctx, p) == nil
	}, time.Minute, 100*time.Millisecond, "the CRDs are served")

	for range 2 { // init again updates what the first one installed
		_, err = Init(ctx, Options{Config: env.Hub.Config})
		require.NoError(t, err)
	}
	p := tooMany("after")
	p.Spec.NumberOfClusters = ptr.To[int32](-1)
	err = admin.Create(ctx, p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ValidatingAdmissionPolicy 'flotilla-placements'")
	assert.Contains(t, err.Error(), "spec.numberOfClusters must be between 0 and 2147483647")
}
