// Package hubrbac_test runs the hub with the RBAC manifests/hub gives it (`flotilla
// init --deploy --addon-signers`), impersonated, and checks what the addon
// manager may and may not do with it.
package hubrbac_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/addons/approve"
	"flotilla.dev/flotilla/addons/example"
	"flotilla.dev/flotilla/addons/framework"
	"flotilla.dev/flotilla/addons/ops"
	"flotilla.dev/flotilla/hub"
	"flotilla.dev/flotilla/hub/deploy"
	"flotilla.dev/flotilla/hub/registration/accept"
	"flotilla.dev/flotilla/hub/registration/bootstrap"
	"flotilla.dev/flotilla/internal/addonagent"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/klusterlet"
	"flotilla.dev/flotilla/klusterlet/join"
	"flotilla.dev/flotilla/klusterlet/registration"
	"flotilla.dev/flotilla/test/testenv"
)

const rbacSigner = "flotilla.dev/rbac-signer"

// signed is an addon with a CustomSigner registration of rbacSigner.
type signed struct{}

func (signed) Name() string { return "signed" }
func (signed) Options() framework.Options {
	return framework.Options{Health: framework.Health{Mode: framework.HealthNone}, Registration: &framework.Registration{
		SignerName: rbacSigner, Subject: &addonv1alpha1.Subject{User: "signed-client", Groups: []string{"signed-clients"}}}}
}
func (signed) Manifests(*clusterv1.ManagedCluster, *addonv1alpha1.ManagedClusterAddOn) ([]runtime.Object, error) {
	return nil, nil
}

// TestAddonsWithShippedRBAC runs the hub as the identity manifests/hub gives
// it, with --addon-signers naming one custom signer, and enables the example
// addon (kube-apiserver-client registration) and an addon of that custom
// signer: the hub approves both CSRs, signs the custom one with its addon CA,
// and grants the example agent its Role. What it must not do is checked
// against the apiserver's authorizer: approve or sign any other custom
// signer, read any other Secret, list or watch Secrets.
func TestAddonsWithShippedRBAC(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := testenv.Start(t, testenv.Options{Clusters: 1})
	tok, err := bootstrap.Init(ctx, bootstrap.Options{Config: env.Hub.Config})
	require.NoError(t, err)
	objs, err := deploy.Render(deploy.Options{Image: "flotilla.local/unused:1", AddonSigners: []string{rbacSigner}})
	require.NoError(t, err)
	admin, err := client.New(env.Hub.Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	for _, obj := range objs {
		if obj.GetKind() == "Deployment" {
			continue
		}
		require.NoError(t, admin.Create(ctx, obj), "%s %s", obj.GetKind(), obj.GetName())
	}
	const hubUser = "system:serviceaccount:open-cluster-management-hub:flotilla-hub"
	hubGroups := []string{"system:serviceaccounts", "system:serviceaccounts:open-cluster-management-hub", "system:authenticated"}
	hubIdentity := rest.CopyConfig(env.Hub.Config)
	hubIdentity.Impersonate = rest.ImpersonationConfig{UserName: hubUser, Groups: hubGroups}

	reg, err := framework.NewRegistry(example.Addon{}, signed{})
	require.NoError(t, err)
	ready := make(chan struct{})
	hubErr := make(chan error, 1)
	go func() {
		hubErr <- hub.Run(ctx, hub.Options{Config: hubIdentity, Addons: reg, Ready: func() { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-hubErr:
		t.Fatalf("hub: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("hub did not become ready")
	}

	spoke := env.Clusters[0]
	require.NoError(t, join.Join(ctx, join.Options{SpokeConfig: spoke.Config, HubAPIServer: env.Hub.URL, HubToken: tok.Token,
		ClusterName: spoke.Name, NoDeployment: true}))
	go func() {
		_ = klusterlet.Run(ctx, klusterlet.Options{DisableWork: true, Registration: registration.Options{
			ClusterName: spoke.Name, SpokeConfig: spoke.Config, HubKubeconfigDir: t.TempDir(),
			LeaseDurationSeconds: 1, StatusSyncInterval: time.Second, RetryInterval: time.Second, AddonSyncInterval: 500 * time.Millisecond,
		}})
	}()
	require.NoError(t, accept.Accept(ctx, accept.Options{Config: env.Hub.Config, Clusters: []string{spoke.Name}, Wait: true, Timeout: time.Minute}))
	_, err = ops.Enable(ctx, admin, ops.EnableOptions{Names: []string{example.Name, "signed"}, Clusters: []string{spoke.Name}})
	require.NoError(t, err)

	spokeKube := kubernetes.NewForConfigOrDie(spoke.Config)
	for _, addon := range []string{example.Name, "signed"} {
		require.Eventually(t, func() bool {
			sec, err := spokeKube.CoreV1().Secrets(ocm.DefaultAddonInstallNamespace).Get(ctx, ocm.AddonHubKubeconfigSecret(addon), metav1.GetOptions{})
			return err == nil && len(sec.Data[addonagent.SecretKeyCert]) > 0
		}, time.Minute, 200*time.Millisecond, "%s: CSR approved (and signed) by the hub with its own rights", addon)
	}
	// The example agent's hub Role was granted by the hub identity.
	require.Eventually(t, func() bool {
		var m addonv1alpha1.ManagedClusterAddOn
		return admin.Get(ctx, client.ObjectKey{Namespace: spoke.Name, Name: example.Name}, &m) == nil &&
			conditionTrue(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnRegistrationApplied)
	}, time.Minute, 200*time.Millisecond, "RegistrationApplied")

	// Refusals, asked of the apiserver's authorizer for the hub's identity.
	sar := kubernetes.NewForConfigOrDie(env.Hub.Config).AuthorizationV1().SubjectAccessReviews()
	allowed := func(attrs authorizationv1.ResourceAttributes) bool {
		r, err := sar.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: hubUser, Groups: hubGroups, ResourceAttributes: &attrs}}, metav1.CreateOptions{})
		require.NoError(t, err)
		return r.Status.Allowed
	}
	signer := func(verb, name string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Group: "certificates.k8s.io", Resource: "signers", Verb: verb, Name: name}
	}
	secret := func(verb, ns, name string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Resource: "secrets", Verb: verb, Namespace: ns, Name: name}
	}
	for _, verb := range []string{"approve", "sign"} {
		assert.True(t, allowed(signer(verb, rbacSigner)), "%s %s: named by --addon-signers", verb, rbacSigner)
		assert.False(t, allowed(signer(verb, "flotilla.dev/other-signer")), "%s another custom signer", verb)
		assert.False(t, allowed(signer(verb, "example.com/agents")), "%s another domain's signer", verb)
		assert.False(t, allowed(signer(verb, "kubernetes.io/kubelet-serving")), "%s kubelet serving certificates", verb)
		assert.False(t, allowed(signer(verb, "kubernetes.io/legacy-unknown")), "%s legacy-unknown", verb)
	}
	assert.True(t, allowed(secret("get", approve.SignerCANamespace, approve.SignerCASecret)))
	assert.False(t, allowed(secret("update", approve.SignerCANamespace, approve.SignerCASecret)), "the CA is never rewritten")
	assert.False(t, allowed(secret("get", deploy.Namespace, deploy.ServingSecret)), "the webhook serving key")
	assert.False(t, allowed(secret("list", approve.SignerCANamespace, "")), "no Secret listed")
	assert.False(t, allowed(secret("watch", approve.SignerCANamespace, "")), "no Secret watched")
	assert.False(t, allowed(secret("get", "kube-system", "")), "no Secret elsewhere")
	assert.False(t, allowed(secret("create", "kube-system", "")), "no Secret created elsewhere")
	// Its webhook configurations, validating and mutating: its own by name,
	// read through the apiserver (no list, no watch, no patch).
	for resource, other := range map[string]string{
		"validatingwebhookconfigurations": "gatekeeper-validating-webhook-configuration",
		"mutatingwebhookconfigurations":   "istio-sidecar-injector",
	} {
		webhooks := func(verb, name string) authorizationv1.ResourceAttributes {
			return authorizationv1.ResourceAttributes{Group: "admissionregistration.k8s.io", Resource: resource, Verb: verb, Name: name}
		}
		for _, verb := range []string{"get", "update", "delete"} {
			assert.True(t, allowed(webhooks(verb, hub.WebhookConfigurationName)), "%s its own %s", verb, resource)
			assert.False(t, allowed(webhooks(verb, other)), "%s another product's %s", verb, resource)
		}
		assert.False(t, allowed(webhooks("patch", hub.WebhookConfigurationName)), "%s: the hub updates, it never patches", resource)
		assert.False(t, allowed(webhooks("list", "")), "%s are not listed", resource)
		assert.False(t, allowed(webhooks("watch", "")), "%s are not watched", resource)
		assert.False(t, allowed(webhooks("deletecollection", "")), "%s are not removed wholesale", resource)
	}
}

func conditionTrue(conds []metav1.Condition, t string) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}
