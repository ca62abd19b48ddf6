package hub

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

func TestWithServicePointsEachWebhookAtItsPath(t *testing.T) {
	p := "/validate-manifestwork"
	hooks := []admissionregistrationv1.ValidatingWebhook{{Name: "w", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &p}}}
	out := withService(hooks, "ns", "svc", []byte("ca"))
	require.Len(t, out, 1)
	cc := out[0].ClientConfig
	assert.Nil(t, cc.URL)
	require.NotNil(t, cc.Service)
	assert.Equal(t, "ns", cc.Service.Namespace)
	assert.Equal(t, "svc", cc.Service.Name)
	assert.Equal(t, p, *cc.Service.Path)
	assert.Equal(t, int32(443), *cc.Service.Port)
	assert.Equal(t, []byte("ca"), cc.CABundle)
	assert.Equal(t, p, *hooks[0].ClientConfig.URL, "the input is not changed")

	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{Webhooks: out}
	assert.True(t, ours(vwc, "service:ns/svc"))
	assert.False(t, ours(vwc, "service:ns/other"))
	assert.False(t, ours(vwc, "https://127.0.0.1:9443"), "a URL hub does not own a Service configuration")
}

func TestConversionClientConfig(t *testing.T) {
	svc := conversionClientConfig("https://10.0.0.1:9443", "ns/svc", []byte("ca"))
	require.NotNil(t, svc.Service, "Pod mode: the apiserver calls the Service")
	assert.Nil(t, svc.URL)
	assert.Equal(t, "ns", svc.Service.Namespace)
	assert.Equal(t, "svc", svc.Service.Name)
	assert.Equal(t, "/convert-addon", *svc.Service.Path)
	assert.Equal(t, int32(443), *svc.Service.Port)
	assert.Equal(t, []byte("ca"), svc.CABundle)

	url := conversionClientConfig("https://10.0.0.1:9443", "", []byte("ca"))
	assert.Nil(t, url.Service)
	require.NotNil(t, url.URL)
	assert.Equal(t, "https://10.0.0.1:9443/convert-addon", *url.URL)
	assert.Equal(t, []byte("ca"), url.CABundle)
}

func TestWebhookSetPointsMutatingHooksToo(t *testing.T) {
	v, m := "/validate-managedcluster", "/mutate-managedcluster"
	set := webhookSet{
		validating: []admissionregistrationv1.ValidatingWebhook{{Name: "v", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &v}}},
		mutating:   []admissionregistrationv1.MutatingWebhook{{Name: "m", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &m}}},
	}
	byURL := set.pointed(atBaseURL("https://10.0.0.1:9443", []byte("ca")))
	require.Len(t, byURL.mutating, 1)
	assert.Equal(t, "https://10.0.0.1:9443/mutate-managedcluster", *byURL.mutating[0].ClientConfig.URL)
	assert.Equal(t, "https://10.0.0.1:9443/validate-managedcluster", *byURL.validating[0].ClientConfig.URL)
	assert.Equal(t, []byte("ca"), byURL.mutating[0].ClientConfig.CABundle)
	assert.Equal(t, m, *set.mutating[0].ClientConfig.URL, "the input is not changed")
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: byURL.mutating}
	assert.True(t, oursMutating(mwc, "https://10.0.0.1:9443"))
	assert.False(t, oursMutating(mwc, "https://10.0.0.2:9443"), "another hub's")

	bySvc := set.pointed(atService("ns", "svc", []byte("ca")))
	require.NotNil(t, bySvc.mutating[0].ClientConfig.Service)
	assert.Equal(t, m, *bySvc.mutating[0].ClientConfig.Service.Path)
	assert.True(t, oursMutating(&admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: bySvc.mutating}, "service:ns/svc"))
}
