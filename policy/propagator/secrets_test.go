package propagator_test

import (
	"context"
	"encoding/base64"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/hubtemplate"
	"flotilla.dev/flotilla/policy/propagator"
)

// TestSecretChangeResolvesOnlyItsReaders: a Secret a hub template reads
// changes; the replicas of the policy reading it are resolved again (the new
// value, encrypted), and the replicas of a policy reading another Secret and
// of one reading a ConfigMap are not rewritten.
func TestSecretChangeResolvesOnlyItsReaders(t *testing.T) {
	s := newScope(t, "secwatch")
	s.clusters("prod", "secwatch-1", "secwatch-2")
	s.placement("prod", "prod")
	s.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: s.ns}, Data: map[string][]byte{"v": []byte("one")}})
	s.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: s.ns}, Data: map[string][]byte{"v": []byte("other")}})
	s.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: s.ns}, Data: map[string]string{"v": "plain"}})
	for name, tmpl := range map[string]string{
		"reads-a": `{{hub fromSecret "" "a" "v" hub}}`,
		"reads-b": `{{hub fromSecret "" "b" "v" hub}}`,
		"reads-c": `{{hub fromConfigMap "" "c" "v" hub}}`,
	} {
		s.policy(name, func(p *policyv1.Policy) { p.Spec.PolicyTemplates[0].ObjectDefinition = templated(name+"-cfg", tmpl) })
	}
	s.binding("all", "prod", policies("reads-a", "reads-b", "reads-c"))
	clusters := []string{"secwatch-1", "secwatch-2"}
	decrypted := func(policy, cluster string) string {
		r := s.replica(policy, cluster)
		if r == nil {
			return ""
		}
		v, _ := s.templateValue(policy, cluster)
		iv, _ := base64.StdEncoding.DecodeString(r.Annotations[propagator.IVAnnotation])
		var key corev1.Secret
		if hub.Get(s.ctx, client.ObjectKey{Namespace: cluster, Name: propagator.EncryptionKeySecret}, &key) != nil {
			return ""
		}
		out, err := hubtemplate.DecryptAll(v, key.Data["key"], iv)
		if err != nil {
			return ""
		}
		b, _ := base64.StdEncoding.DecodeString(out.(string))
		return string(b)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, cl := range clusters {
			assert.Equal(c, "one", decrypted("reads-a", cl))
			assert.Equal(c, "other", decrypted("reads-b", cl))
			v, _ := s.templateValue("reads-c", cl)
			assert.Equal(c, "plain", v)
		}
	}, timeout, tick)
	versions := map[string]string{}
	for _, p := range []string{"reads-b", "reads-c"} {
		for _, cl := range clusters {
			versions[p+"/"+cl] = s.replica(p, cl).ResourceVersion
		}
	}

	update(s, client.ObjectKey{Namespace: s.ns, Name: "a"}, &corev1.Secret{}, func(sec *corev1.Secret) { sec.Data["v"] = []byte("two") }, false)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, cl := range clusters {
			assert.Equal(c, "two", decrypted("reads-a", cl))
		}
	}, timeout, tick, "the Secret's change never reached its readers' replicas")
	for _, p := range []string{"reads-b", "reads-c"} {
		for _, cl := range clusters {
			assert.Equal(t, versions[p+"/"+cl], s.replica(p, cl).ResourceVersion, "%s on %s was rewritten", p, cl)
		}
	}
}

// TestSecretWatchesOnlyWhereGranted: the hub's Secret watches run as the hub
// identity; with ClusterRole hub-template-secrets bound in one namespace
// only, that namespace is watched (its changes arrive) and the other is
// refused and not watched.
func TestSecretWatchesOnlyWhereGranted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, ns := range []string{"granted", "not-granted"} {
		require.NoError(t, hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	const role = "open-cluster-management:flotilla-hub:hub-template-secrets"
	require.NoError(t, hub.Create(ctx, shippedClusterRole(t, role)))
	const user = "system:serviceaccount:open-cluster-management-hub:flotilla-hub"
	require.NoError(t, hub.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "hub-template-secrets", Namespace: "granted"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: user}}}))
	cfg := rest.CopyConfig(hubConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	mc, err := metadata.NewForConfig(cfg)
	require.NoError(t, err)
	w := propagator.NewSecretWatches(mc)
	defer w.Stop()
	require.Eventually(t, func() bool { // the RoleBinding reaches the authorizer
		w.Sync(ctx, []string{"granted", "not-granted"})
		return strings.Join(w.Watched(), ",") == "granted"
	}, timeout, tick)
	w.Sync(ctx, []string{"granted", "not-granted"})
	assert.Equal(t, []string{"granted"}, w.Watched())

	require.NoError(t, hub.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "not-granted"}}))
	require.NoError(t, hub.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "granted"}}))
	select {
	case ev := <-w.Events():
		assert.Equal(t, "granted", ev.Object.GetNamespace(), "an event from a namespace the hub may not watch")
		assert.Equal(t, "s", ev.Object.GetName())
	case <-ctx.Done():
		t.Fatal("no event for the Secret of the granted namespace")
	}
	// No longer read: no longer watched.
	w.Sync(ctx, nil)
	assert.Empty(t, w.Watched())

}

// shippedClusterRole is the ClusterRole name of manifests/hub/00-rbac.yaml,
// as shipped.
func shippedClusterRole(t *testing.T, name string) *rbacv1.ClusterRole {
	t.Helper()
	raw, err := os.ReadFile("../../manifests/hub/00-rbac.yaml")
	require.NoError(t, err)
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var cr rbacv1.ClusterRole
		if yaml.Unmarshal([]byte(doc), &cr) == nil && cr.Kind == "ClusterRole" && cr.Name == name {
			return &cr
		}
	}
	t.Fatalf("manifests/hub/00-rbac.yaml ships no ClusterRole %s", name)
	return nil
}
