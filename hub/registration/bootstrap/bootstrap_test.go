package bootstrap

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/hub/registration/webhook"
	"flotilla.dev/flotilla/hub/scheme"
	"flotilla.dev/flotilla/internal/pki"
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
