package evaluate

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/hubtemplate"
)

// TestProtectedValues: values the hub protected are decrypted in memory with
// the cluster's key, and the policy object keeps the encrypted text; a
// missing key, another key or a missing IV is a template error naming it.
func TestProtectedValues(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	iv := bytes.Repeat([]byte{1}, hubtemplate.IVSize)
	enc, err := hubtemplate.Encrypt(key, iv, []byte("blue"))
	require.NoError(t, err)
	value := hubtemplate.ProtectedPrefix + base64.StdEncoding.EncodeToString(enc)
	mk := func(ivAnn string) *policyv1.ConfigurationPolicy {
		return policy(t, fmt.Sprintf(`
metadata: {name: p, namespace: cluster1, annotations: {%q: %q}}
spec:
  remediationAction: inform
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: default}, data: {color: %q}}
`, hubtemplate.IVAnnotation, ivAnn, value))
	}
	keySecret := func(k []byte) string {
		return fmt.Sprintf("{apiVersion: v1, kind: Secret, metadata: {name: %s, namespace: cluster1}, data: {key: %s}}",
			hubtemplate.KeySecret, base64.StdEncoding.EncodeToString(k))
	}
	cm := func(color string) string {
		return "{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: default}, data: {color: " + color + "}}"
	}
	goodIV := base64.StdEncoding.EncodeToString(iv)

	p := mk(goodIV)
	r := Policy(p, objects(t, keySecret(key), cm("blue")))
	assert.Equal(t, policyv1.Compliant, r.Compliance(), "the decrypted value matches")
	assert.Contains(t, string(p.Spec.ObjectTemplates[0].ObjectDefinition.Raw), hubtemplate.ProtectedPrefix, "the policy keeps the encrypted text")
	assert.Equal(t, policyv1.NonCompliant, Policy(mk(goodIV), objects(t, keySecret(key), cm("red"))).Compliance())

	for _, tc := range []struct {
		name string
		p    *policyv1.ConfigurationPolicy
		objs []string
		want string
	}{
		{"no key on the cluster", mk(goodIV), []string{cm("blue")}, "the encryption key cluster1/policy-encryption-key does not exist"},
		{"another cluster's key", mk(goodIV), []string{keySecret(bytes.Repeat([]byte{9}, 32)), cm("blue")}, "cannot decrypt the protected value"},
		{"a short key", mk(goodIV), []string{keySecret([]byte("short")), cm("blue")}, "holds no 256-bit key"},
		{"no IV", mk(""), []string{keySecret(key), cm("blue")}, "no valid " + hubtemplate.IVAnnotation},
	} {
		r := Policy(tc.p, objects(t, tc.objs...))
		assert.Equal(t, policyv1.NonCompliant, r.Compliance(), tc.name)
		msg := r.DefaultMessage()
		assert.True(t, strings.Contains(msg, tc.want), "%s: %q lacks %q", tc.name, msg, tc.want)
		assert.NotContains(t, msg, "blue", tc.name)
	}
}
