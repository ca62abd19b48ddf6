package governance_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/hubtemplate"
)

// TestProtectedSecret: a policy enforcing a Secret whose value comes from a
// hub Secret through `fromSecret ... | protect`: the hub replica holds only
// the encrypted value (per cluster key and IV), the framework agent copies
// the cluster's key to the managed cluster, the engine decrypts in memory and
// enforces the right value while the ConfigurationPolicy on the cluster keeps
// only the encrypted text (who may read policies there but not Secrets never
// sees it); another cluster's key cannot decrypt it.
func TestProtectedSecret(t *testing.T) {
	ctx := context.Background()
	ns := "protect"
	policyNamespace(t, ns)
	const plain = "s3cret-pw"
	require.NoError(t, hubCli.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: ns},
		Data: map[string][]byte{"password": []byte(plain)}}))
	bindPolicy(t, ns, "app-creds", policyv1.Enforce, `apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: app-creds}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition:
      apiVersion: v1
      kind: Secret
      metadata: {name: app-creds, namespace: default}
      data:
        password: '{{hub fromSecret "" "creds" "password" | protect hub}}'
`)
	for i, cluster := range []string{"cluster1", "cluster2"} {
		k := kubernetes.NewForConfigOrDie(env.Clusters[i].Config)
		require.Eventually(t, func() bool {
			s, err := k.CoreV1().Secrets("default").Get(ctx, "app-creds", metav1.GetOptions{})
			return err == nil && string(s.Data["password"]) == plain
		}, timeout, tick, "%s: the engine never enforced the decrypted value", cluster)
		require.Eventually(t, func() bool {
			state, _ := replicaDetail(cluster, ns, "app-creds", "app-creds")
			return state == policyv1.Compliant
		}, timeout, tick, "%s: never Compliant", cluster)
	}

	// The ConfigurationPolicy on the managed cluster holds no plaintext either.
	for i, cluster := range []string{"cluster1", "cluster2"} {
		var cp policyv1.ConfigurationPolicy
		require.NoError(t, spokeCli(t, i).Get(ctx, client.ObjectKey{Namespace: cluster, Name: "app-creds"}, &cp))
		raw, _ := json.Marshal(cp)
		assert.NotContains(t, string(raw), plain, "%s: plaintext in the ConfigurationPolicy", cluster)
		assert.NotContains(t, string(raw), base64.StdEncoding.EncodeToString([]byte(plain)), "%s: plaintext (base64) in the ConfigurationPolicy", cluster)
		assert.Contains(t, string(raw), hubtemplate.ProtectedPrefix, "%s: the ConfigurationPolicy keeps the encrypted value", cluster)
	}

	// The hub replicas hold no plaintext, in no encoding.
	values := map[string]string{}
	keys := map[string][]byte{}
	ivs := map[string][]byte{}
	for _, cluster := range []string{"cluster1", "cluster2"} {
		var rep policyv1.Policy
		require.NoError(t, hubCli.Get(ctx, client.ObjectKey{Namespace: cluster, Name: ns + ".app-creds"}, &rep))
		raw, _ := json.Marshal(rep)
		assert.NotContains(t, string(raw), plain)
		assert.NotContains(t, string(raw), base64.StdEncoding.EncodeToString([]byte(plain)))
		var tpl struct {
			Spec struct {
				ObjectTemplates []struct {
					ObjectDefinition struct{ Data map[string]string } `json:"objectDefinition"`
				} `json:"object-templates"`
			}
		}
		require.NoError(t, json.Unmarshal(rep.Spec.PolicyTemplates[0].ObjectDefinition.Raw, &tpl))
		v := tpl.Spec.ObjectTemplates[0].ObjectDefinition.Data["password"]
		require.True(t, strings.HasPrefix(v, hubtemplate.ProtectedPrefix), v)
		assert.Equal(t, 1, strings.Count(v, hubtemplate.ProtectedPrefix), "encrypted once")
		values[cluster] = v
		iv, err := base64.StdEncoding.DecodeString(rep.Annotations[hubtemplate.IVAnnotation])
		require.NoError(t, err)
		ivs[cluster] = iv
		var key corev1.Secret
		require.NoError(t, hubCli.Get(ctx, client.ObjectKey{Namespace: cluster, Name: hubtemplate.KeySecret}, &key))
		keys[cluster] = key.Data["key"]
	}
	assert.NotEqual(t, keys["cluster1"], keys["cluster2"], "one key per cluster")
	// The key the agent copied to cluster1 is cluster1's.
	var spokeKey corev1.Secret
	require.NoError(t, spokeCli(t, 0).Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: hubtemplate.KeySecret}, &spokeKey))
	assert.Equal(t, keys["cluster1"], spokeKey.Data["key"])
	// cluster1's own key decrypts its value; cluster2's does not.
	got, err := hubtemplate.DecryptAll(values["cluster1"], keys["cluster1"], ivs["cluster1"])
	require.NoError(t, err)
	assert.Equal(t, base64.StdEncoding.EncodeToString([]byte(plain)), got)
	other, err := hubtemplate.DecryptAll(values["cluster1"], keys["cluster2"], ivs["cluster1"])
	assert.True(t, err != nil || other != got, "cluster2's key decrypted cluster1's value")
}
