package propagator_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/hubtemplate"
	"flotilla.dev/flotilla/policy/propagator"
)

// templated is a ConfigurationPolicy template whose ConfigMap data holds value.
func templated(name, value string) runtime.RawExtension {
	obj := map[string]any{"apiVersion": "policy.open-cluster-management.io/v1", "kind": "ConfigurationPolicy",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"remediationAction": "inform", "object-templates": []any{map[string]any{"complianceType": "musthave",
			"objectDefinition": map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "site", "namespace": "default"}, "data": map[string]any{"value": value}}}}}}
	raw, _ := json.Marshal(obj)
	return runtime.RawExtension{Raw: raw}
}

// templateValue returns the resolved value and hub template error of the
// replica's first template.
func (s *scope) templateValue(name, cluster string) (value, tmplErr string) {
	r := s.replica(name, cluster)
	if r == nil || len(r.Spec.PolicyTemplates) == 0 {
		return "<no replica>", ""
	}
	var obj struct {
		Metadata struct{ Annotations map[string]string }
		Spec     struct {
			ObjectTemplates []struct {
				ObjectDefinition struct{ Data map[string]string } `json:"objectDefinition"`
			} `json:"object-templates"`
		}
	}
	_ = json.Unmarshal(r.Spec.PolicyTemplates[0].ObjectDefinition.Raw, &obj)
	if len(obj.Spec.ObjectTemplates) == 0 {
		return "<no object>", ""
	}
	return obj.Spec.ObjectTemplates[0].ObjectDefinition.Data["value"], obj.Metadata.Annotations[hubtemplate.ErrorAnnotation]
}

func TestHubTemplatesResolvedPerClusterAndOnChange(t *testing.T) {
	s := newScope(t, "tmpl")
	s.clusters("prod", "tmpl-1", "tmpl-2", "tmpl-3")
	s.placement("prod", "prod")
	s.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "site", Namespace: s.ns},
		Data: map[string]string{"tmpl-1": "10.0.0.1", "tmpl-2": "10.0.0.2"}})
	s.policy("p", func(p *policyv1.Policy) {
		p.Spec.PolicyTemplates[0].ObjectDefinition = templated("p-cfg",
			`{{hub .ManagedClusterName hub}}={{hub fromConfigMap "" "site" .ManagedClusterName hub}}`)
	})
	s.binding("p", "prod", policies("p"))
	s.eventuallyReplicas("p", "tmpl-1", "tmpl-2", "tmpl-3")

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		v, e := s.templateValue("p", "tmpl-1")
		assert.Equal(c, "tmpl-1=10.0.0.1", v)
		assert.Empty(c, e)
		v, _ = s.templateValue("p", "tmpl-2")
		assert.Equal(c, "tmpl-2=10.0.0.2", v)
		// tmpl-3 has no key: its replica carries the error, unresolved, and is NonCompliant.
		v, e = s.templateValue("p", "tmpl-3")
		assert.Contains(c, v, "{{hub")
		assert.Equal(c, `fromConfigMap: ConfigMap tmpl/site has no key "tmpl-3"`, e)
		if r := s.replica("p", "tmpl-3"); assert.NotNil(c, r) && assert.Len(c, r.Status.Details, 1) {
			assert.Equal(c, policyv1.NonCompliant, r.Status.ComplianceState)
			assert.Contains(c, r.Status.Details[0].History[0].Message, `NonCompliant; violation - Error occurred while processing hub-templates: fromConfigMap`)
		}
		assert.Equal(c, policyv1.NonCompliant, s.root("p").Status.ComplianceState)
	}, timeout, tick)

	// The ConfigMap changes: every replica is resolved again, tmpl-3's error goes.
	update(s, client.ObjectKey{Namespace: s.ns, Name: "site"}, &corev1.ConfigMap{}, func(cm *corev1.ConfigMap) {
		cm.Data["tmpl-1"] = "10.1.1.1"
		cm.Data["tmpl-3"] = "10.0.0.3"
	}, false)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		v, _ := s.templateValue("p", "tmpl-1")
		assert.Equal(c, "tmpl-1=10.1.1.1", v)
		v, e := s.templateValue("p", "tmpl-3")
		assert.Equal(c, "tmpl-3=10.0.0.3", v)
		assert.Empty(c, e)
		if r := s.replica("p", "tmpl-3"); assert.NotNil(c, r) {
			assert.Empty(c, r.Status.ComplianceState, "the hub's error verdict is withdrawn; the spoke reports anew")
		}
	}, timeout, tick)
}

func TestHubTemplateSecretsAreEncryptedAndConfined(t *testing.T) {
	s := newScope(t, "secret")
	s.clusters("prod", "secret-1")
	s.placement("prod", "prod")
	s.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: s.ns}, Data: map[string][]byte{"password": []byte("s3cret")}})
	s.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "secret-elsewhere"}})
	s.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "secret-elsewhere"}, Data: map[string][]byte{"password": []byte("other")}})
	s.policy("p", func(p *policyv1.Policy) {
		p.Spec.PolicyTemplates[0].ObjectDefinition = templated("p-cfg", `{{hub fromSecret "" "creds" "password" hub}}`)
	})
	s.policy("thief", func(p *policyv1.Policy) {
		p.Spec.PolicyTemplates[0].ObjectDefinition = templated("thief-cfg", `{{hub fromSecret "secret-elsewhere" "creds" "password" hub}}`)
	})
	s.binding("p", "prod", policies("p", "thief"))
	s.eventuallyReplicas("p", "secret-1")

	var enc string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		enc, _ = s.templateValue("p", "secret-1")
		assert.True(c, strings.HasPrefix(enc, hubtemplate.ProtectedPrefix), enc)
	}, timeout, tick)
	r := s.replica("p", "secret-1")
	raw, _ := json.Marshal(r.Spec)
	assert.NotContains(t, string(raw), base64.StdEncoding.EncodeToString([]byte("s3cret")), "the secret is not in the replica in clear")
	iv, err := base64.StdEncoding.DecodeString(r.Annotations[propagator.IVAnnotation])
	require.NoError(t, err)
	var key corev1.Secret
	require.NoError(t, hub.Get(s.ctx, client.ObjectKey{Namespace: "secret-1", Name: propagator.EncryptionKeySecret}, &key))
	cipherText, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(enc, hubtemplate.ProtectedPrefix))
	require.NoError(t, err)
	plain, err := hubtemplate.Decrypt(key.Data["key"], iv, cipherText)
	require.NoError(t, err)
	assert.Equal(t, base64.StdEncoding.EncodeToString([]byte("s3cret")), string(plain), "the cluster's key decrypts the Secret's value")

	// Reconciling again keeps the same IV and ciphertext (no churn).
	update(s, client.ObjectKey{Namespace: s.ns, Name: "p"}, &policyv1.Policy{}, func(p *policyv1.Policy) { p.Labels = map[string]string{"touch": "1"} }, false)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		r2 := s.replica("p", "secret-1")
		if assert.NotNil(c, r2) {
			assert.Equal(c, "1", r2.Labels["touch"])
			assert.Equal(c, r.Annotations[propagator.IVAnnotation], r2.Annotations[propagator.IVAnnotation])
		}
		v, _ := s.templateValue("p", "secret-1")
		assert.Equal(c, enc, v)
	}, timeout, tick)

	// Another namespace's Secret is refused, and nothing of it reaches the replica.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		v, e := s.templateValue("thief", "secret-1")
		assert.Contains(c, e, `fromSecret: namespace "secret-elsewhere" is not allowed`)
		assert.NotContains(c, v, base64.StdEncoding.EncodeToString([]byte("other")))
	}, timeout, tick)
}

func TestHubTemplatesFollowClusterLabelsAndClaims(t *testing.T) {
	s := newScope(t, "labels")
	s.clusters("prod", "labels-1")
	s.placement("prod", "prod")
	s.policy("p", func(p *policyv1.Policy) {
		p.Spec.PolicyTemplates[0].ObjectDefinition = templated("p-cfg",
			`{{hub index .ManagedClusterLabels "tier" hub}}/{{hub fromClusterClaim "region" hub}}`)
	})
	s.binding("p", "prod", policies("p"))
	// No claim yet: a template error on the replica.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, e := s.templateValue("p", "labels-1")
		assert.Equal(c, `fromClusterClaim: ManagedCluster labels-1 reports no claim "region"`, e)
	}, timeout, tick)

	update(s, client.ObjectKey{Name: "labels-1"}, &clusterv1.ManagedCluster{}, func(mc *clusterv1.ManagedCluster) {
		mc.Status.ClusterClaims = []clusterv1.ManagedClusterClaim{{Name: "region", Value: "eu"}}
	}, true)
	update(s, client.ObjectKey{Name: "labels-1"}, &clusterv1.ManagedCluster{}, func(mc *clusterv1.ManagedCluster) {
		mc.Labels["tier"] = "gold"
	}, false)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		v, e := s.templateValue("p", "labels-1")
		assert.Equal(c, "gold/eu", v)
		assert.Empty(c, e)
	}, timeout, tick)
}

// lookup of a cluster-scoped kind (which would ignore the policy's namespace)
// is refused: a policy author reads only objects of the policy's namespace.
func TestHubTemplateLookupConfinedToNamespace(t *testing.T) {
	s := newScope(t, "scoped")
	s.clusters("prod", "scoped-1")
	s.placement("prod", "prod")
	s.policy("peek", func(p *policyv1.Policy) {
		p.Spec.PolicyTemplates[0].ObjectDefinition = templated("peek-cfg", `{{hub (lookup "v1" "Namespace" "" "kube-system").metadata.uid hub}}`)
	})
	s.binding("peek", "prod", policies("peek"))
	s.eventuallyReplicas("peek", "scoped-1")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		v, e := s.templateValue("peek", "scoped-1")
		assert.Contains(c, v, "{{hub", "left unresolved")
		assert.Contains(c, e, `Namespace "kube-system" is cluster-scoped`)
	}, timeout, tick)
}
