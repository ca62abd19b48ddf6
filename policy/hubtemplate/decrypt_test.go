package hubtemplate

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// TestDecryptAll: what the hub protected, the managed cluster decrypts with
// the same key and IV (fromSecret piped into protect is encrypted once);
// another cluster's key or a damaged value fails, naming where.
func TestDecryptAll(t *testing.T) {
	src := objects{"Secret gov/creds": {"data": map[string]any{"password": base64.StdEncoding.EncodeToString([]byte("s3cret"))}}}
	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	key := []byte(strings.Repeat("k", 32))
	iv := []byte(strings.Repeat("i", IVSize))
	in := `{"data":{"password":"{{hub fromSecret \"\" \"creds\" \"password\" | protect hub}}"},
 "list":["x","url=https://{{hub \"host.example\" | protect hub}}/path"],"n":3}`
	got, _, err := Resolve(context.Background(), []byte(in), Options{Namespace: "gov", Cluster: cluster, Source: src, Key: key, IV: iv})
	require.NoError(t, err)
	require.True(t, HasProtected(got))
	assert.Equal(t, 2, strings.Count(string(got), ProtectedPrefix), "fromSecret | protect is encrypted once: %s", got)

	var obj any
	require.NoError(t, json.Unmarshal(got, &obj))
	plain, err := DecryptAll(obj, key, iv)
	require.NoError(t, err)
	out, _ := json.Marshal(plain)
	assert.JSONEq(t, `{"data":{"password":"`+base64.StdEncoding.EncodeToString([]byte("s3cret"))+`"},
 "list":["x","url=https://host.example/path"],"n":3}`, string(out))

	tests := []struct {
		name string
		key  []byte
		obj  any
		err  string
	}{
		{name: "another cluster's key", key: []byte(strings.Repeat("o", 32)), obj: obj, err: "cannot decrypt the protected value at .data.password"},
		{name: "not base64", key: key, obj: map[string]any{"a": []any{ProtectedPrefix + "@@@@"}}, err: ""},
		{name: "damaged value", key: key, obj: map[string]any{"a": []any{ProtectedPrefix + "AAAA"}}, err: "cannot decrypt the protected value at .a[0]"},
		{name: "no protected value", key: nil, obj: map[string]any{"a": "plain"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecryptAll(tc.obj, tc.key, iv)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			if err == nil {
				// AES-CBC has no integrity check: a wrong key may still
				// unpad by chance, but never to the plaintext.
				b, _ := json.Marshal(got)
				assert.NotContains(t, string(b), base64.StdEncoding.EncodeToString([]byte("s3cret")))
				return
			}
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}
