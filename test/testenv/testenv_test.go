package testenv_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/keyutil"

	"flotilla.dev/flotilla/test/testenv"
)

func TestEnvironment(t *testing.T) {
	ctx := context.Background()
	env, err := testenv.New(testenv.Options{Clusters: 2})
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = env.Stop()
		}
	})

	hub := kubernetes.NewForConfigOrDie(env.Hub.Config)
	c1 := kubernetes.NewForConfigOrDie(env.Clusters[0].Config)
	c2 := kubernetes.NewForConfigOrDie(env.Clusters[1].Config)
	assert.Equal(t, "cluster1", env.Clusters[0].Name)
	assert.Same(t, env.Clusters[1], env.Cluster("cluster2"))

	t.Run("separate stores", func(t *testing.T) {
		for i, c := range []kubernetes.Interface{hub, c1, c2} {
			_, err := c.CoreV1().Namespaces().Create(ctx, ns("only-in-"+strconv.Itoa(i)), metav1.CreateOptions{})
			require.NoError(t, err)
		}
		for i, c := range []kubernetes.Interface{hub, c1, c2} {
			for j := range 3 {
				_, err := c.CoreV1().Namespaces().Get(ctx, "only-in-"+strconv.Itoa(j), metav1.GetOptions{})
				if i == j {
					assert.NoError(t, err)
				} else {
					assert.True(t, apierrors.IsNotFound(err), "namespace of control plane %d visible on %d: %v", j, i, err)
				}
			}
		}
	})

	t.Run("OCM CRDs installed", func(t *testing.T) {
		_, err := hub.Discovery().ServerResourcesForGroupVersion("cluster.open-cluster-management.io/v1")
		assert.NoError(t, err)
		_, err = c1.Discovery().ServerResourcesForGroupVersion("work.open-cluster-management.io/v1")
		assert.NoError(t, err, "AppliedManifestWork is served on managed clusters")
	})

	t.Run("approved client CSR is signed and authenticates", func(t *testing.T) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
			Subject: pkix.Name{CommonName: "csr-user", Organization: []string{"csr-group"}},
		}, key)
		require.NoError(t, err)
		csr, err := hub.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: "csr-user"},
			Spec: certificatesv1.CertificateSigningRequestSpec{
				Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
				SignerName: certificatesv1.KubeAPIServerClientSignerName,
				Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "TestApproved",
		})
		_, err = hub.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
		require.NoError(t, err)

		var certPEM []byte
		require.Eventually(t, func() bool {
			got, err := hub.CertificatesV1().CertificateSigningRequests().Get(ctx, csr.Name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			certPEM = got.Status.Certificate
			return len(certPEM) > 0
		}, 30*time.Second, 100*time.Millisecond, "kube-controller-manager never signed the approved CSR")

		keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
		require.NoError(t, err)
		user := kubernetes.NewForConfigOrDie(&rest.Config{
			Host:            env.Hub.URL,
			TLSClientConfig: rest.TLSClientConfig{CAData: env.Hub.CAPEM, CertData: certPEM, KeyData: keyPEM},
		})
		// Authenticated as csr-user, who may do nothing yet: 403, not 401.
		_, err = user.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		require.True(t, apierrors.IsForbidden(err), "want Forbidden for an authenticated user without RBAC, got %v", err)
		assert.Contains(t, err.Error(), `"csr-user"`)

		_, err = hub.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "csr-group-view"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "csr-group"}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			_, err := user.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
			return err == nil
		}, 30*time.Second, 100*time.Millisecond, "the signed certificate's group did not get the bound role")
	})

	t.Run("namespace deletion finishes and owner references cascade", func(t *testing.T) {
		_, err := c1.CoreV1().Namespaces().Create(ctx, ns("doomed"), metav1.CreateOptions{})
		require.NoError(t, err)
		owner, err := c1.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = c1.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name:            "dependent",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = c1.CoreV1().ConfigMaps("doomed").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "content"}}, metav1.CreateOptions{})
		require.NoError(t, err)

		require.NoError(t, c1.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{}))
		require.NoError(t, c1.CoreV1().ConfigMaps("default").Delete(ctx, "owner", metav1.DeleteOptions{}))
		require.Eventually(t, func() bool {
			_, err := c1.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, 60*time.Second, 200*time.Millisecond, "namespace deletion never finished")
		require.Eventually(t, func() bool {
			_, err := c1.CoreV1().ConfigMaps("default").Get(ctx, "dependent", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, 60*time.Second, 200*time.Millisecond, "garbage collector never removed the dependent")
	})

	t.Run("stop leaves no process", func(t *testing.T) {
		pids := env.PIDs()
		require.Len(t, pids, 9, "three processes for each of three control planes")
		require.NoError(t, env.Stop())
		stopped = true
		for _, pid := range pids {
			_, err := os.Stat("/proc/" + strconv.Itoa(pid))
			if err == nil {
				stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
				t.Errorf("process %d still exists after Stop: %s", pid, stat)
			}
		}
	})
}

func ns(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}
