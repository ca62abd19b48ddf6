package addons_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"flotilla.dev/flotilla/addons/example"
	"flotilla.dev/flotilla/addons/ops"
	"flotilla.dev/flotilla/internal/ocm"
)

// TestAddonCredentialRotation: cluster2's klusterlet asks 600 s addon
// certificates and renews them with 99% of their life left (main_test.go), so
// the example addon's <addon>-hub-kubeconfig Secret gets a new certificate,
// with a new serial, within seconds. The old certificate still authenticates
// after the rotation, and the agent, reading the Secret each round, keeps
// renewing its lease and copying hub ConfigMaps.
func TestAddonCredentialRotation(t *testing.T) {
	ctx := context.Background()
	cluster, ns := "cluster2", ocm.DefaultAddonInstallNamespace
	_, err := ops.Enable(ctx, hubCli, ops.EnableOptions{Names: []string{example.Name}, Clusters: []string{cluster}})
	require.NoError(t, err)
	t.Cleanup(func() { disable(t, cluster, example.Name) })

	agentCtx, stopAgent := context.WithCancel(ctx)
	agentDone := make(chan error, 1)
	go func() {
		agentDone <- example.RunAgent(agentCtx, example.AgentOptions{SpokeConfig: env.Clusters[1].Config, ClusterName: cluster,
			Interval: 200 * time.Millisecond, LeaseDuration: time.Second})
	}()
	t.Cleanup(func() { stopAgent(); <-agentDone })

	secretCert := func() (*x509.Certificate, *corev1.Secret) {
		sec, err := spoke(1).CoreV1().Secrets(ns).Get(ctx, ocm.AddonHubKubeconfigSecret(example.Name), metav1.GetOptions{})
		if err != nil {
			return nil, nil
		}
		block, _ := pem.Decode(sec.Data["tls.crt"])
		if block == nil {
			return nil, nil
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, nil
		}
		return cert, sec
	}
	var first *x509.Certificate
	var firstSecret *corev1.Secret
	require.Eventually(t, func() bool { first, firstSecret = secretCert(); return first != nil }, timeout, tick,
		"the klusterlet writes the addon's hub credential")
	assert.LessOrEqual(t, first.NotAfter.Sub(first.NotBefore), 20*time.Minute, "the certificate is short-lived as asked")

	var next *x509.Certificate
	require.Eventually(t, func() bool {
		next, _ = secretCert()
		return next != nil && next.SerialNumber.Cmp(first.SerialNumber) != 0
	}, timeout, tick, "the addon credential is renewed before it expires")
	assert.Equal(t, first.Subject.CommonName, next.Subject.CommonName, "same identity")
	assert.True(t, time.Now().Before(first.NotAfter), "renewed while the old certificate was still valid")
	assert.False(t, next.NotAfter.Before(first.NotAfter), "the new certificate lives at least as long")

	// The old certificate still authenticates on the hub until it expires.
	old := rest.CopyConfig(env.Hub.Config)
	old.BearerToken, old.Username, old.Password = "", "", ""
	old.TLSClientConfig.CertFile, old.TLSClientConfig.KeyFile = "", ""
	old.TLSClientConfig.CertData, old.TLSClientConfig.KeyData = firstSecret.Data["tls.crt"], firstSecret.Data["tls.key"]
	_, err = kubernetes.NewForConfigOrDie(old).CoreV1().ConfigMaps(cluster).List(ctx, metav1.ListOptions{})
	assert.NoError(t, err, "the previous certificate is still valid")

	// The agent keeps working with the rotated credential.
	avail := eventuallyCondition(t, cluster, example.Name, addonv1alpha1.ManagedClusterAddOnConditionAvailable, metav1.ConditionTrue)
	assert.Equal(t, addonv1alpha1.AddonAvailableReasonLeaseLeaseUpdated, avail.Reason)
	src := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-rotation", Namespace: cluster, Labels: map[string]string{example.CopyLabel: "true"}},
		Data: map[string]string{"hello": "still here"}}
	require.NoError(t, hubCli.Create(ctx, src))
	t.Cleanup(func() { _ = hubCli.Delete(context.Background(), src) })
	require.Eventually(t, func() bool {
		cur, _ := secretCert()
		if cur == nil || cur.SerialNumber.Cmp(first.SerialNumber) == 0 {
			return false
		}
		got, err := spoke(1).CoreV1().ConfigMaps(ns).Get(ctx, "after-rotation", metav1.GetOptions{})
		return err == nil && got.Data["hello"] == "still here"
	}, timeout, tick, "the agent copies hub ConfigMaps with the renewed credential")
}
