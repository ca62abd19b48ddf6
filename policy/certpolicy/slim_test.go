package certpolicy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSlimSecret: the cache keeps only a Secret's certificate bytes; private
// keys, other data, and the last-applied annotation (a copy of the whole
// Secret) are dropped, and a Secret without a certificate keeps no data.
func TestSlimSecret(t *testing.T) {
	for _, tc := range []struct {
		name   string
		secret corev1.Secret
		want   map[string][]byte
	}{
		{"tls", corev1.Secret{Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": []byte("CERT"), "tls.key": []byte("KEY"), "ca.crt": []byte("CA")}},
			map[string][]byte{"tls.crt": []byte("CERT")}},
		{"key label", corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{KeyLabel: "cert.pem"}},
			Data: map[string][]byte{"cert.pem": []byte("CERT"), "key.pem": []byte("KEY")}},
			map[string][]byte{"cert.pem": []byte("CERT")}},
		{"tls without a certificate", corev1.Secret{Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.key": []byte("KEY")}}, nil},
		{"no certificate", corev1.Secret{Data: map[string][]byte{"password": []byte("hunter2")}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.secret.DeepCopy()
			s.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"tls.key":"S0VZ"}}`}
			s.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
			s.StringData = map[string]string{"x": "y"}
			out, err := slimSecret(s)
			require.NoError(t, err)
			got := out.(*corev1.Secret)
			assert.Equal(t, tc.want, got.Data)
			assert.Nil(t, got.Annotations)
			assert.Nil(t, got.ManagedFields)
			assert.Nil(t, got.StringData)
			assert.Equal(t, Holds(&tc.secret), Holds(got), "slimming keeps whether the Secret holds a certificate")
		})
	}
}
