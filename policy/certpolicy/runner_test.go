package certpolicy_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/policy/certpolicy"
	"flotilla.dev/flotilla/test/testenv"
)

var c client.Client

// One managed cluster with the policy CRDs, and the engine running on it.
func TestMain(m *testing.M) {
	env, err := testenv.New(testenv.Options{Clusters: 1, NoHub: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		os.Exit(1)
	}
	cfg := env.Clusters[0].Config
	c, err = client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- certpolicy.Run(ctx, certpolicy.Options{Config: cfg}) }()
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "engine:", err)
	}
	_ = env.Stop()
	os.Exit(code)
}

func mkNamespace(t *testing.T, name string) {
	t.Helper()
	require.NoError(t, c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
}

// liveCert is a PEM certificate expiring left from now, valid for a year.
func liveCert(t *testing.T, left time.Duration) []byte {
	notAfter := time.Now().Add(left)
	return certPEM(t, notAfter.Add(-365*day), notAfter, false, "app.example.com")
}

func tlsSecret(ns, name string, crt []byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: []byte("k")}}
}

func status(t *testing.T, ns, name string) func() policyv1.CertificatePolicyStatus {
	return func() policyv1.CertificatePolicyStatus {
		var p policyv1.CertificatePolicy
		require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &p))
		return p.Status
	}
}

func waitFor(t *testing.T, get func() policyv1.CertificatePolicyStatus, state policyv1.ComplianceState, contains string) policyv1.CertificatePolicyStatus {
	t.Helper()
	var st policyv1.CertificatePolicyStatus
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st = get()
		require.Equal(ct, state, st.ComplianceState)
		require.NotEmpty(ct, st.History)
		assert.Contains(ct, st.History[0].Message, contains)
	}, 30*time.Second, 50*time.Millisecond)
	return st
}

// The engine follows Secrets by watch: a certificate replaced by one that
// expires soon, a malformed one added, then removed.
func TestRunnerFollowsSecrets(t *testing.T) {
	ctx := context.Background()
	mkNamespace(t, "certs-a")
	require.NoError(t, c.Create(ctx, tlsSecret("certs-a", "web", liveCert(t, 90*day))))
	require.NoError(t, c.Create(ctx, &policyv1.CertificatePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "certs-a", Name: "expiry"},
		Spec: policyv1.CertificatePolicySpec{MinimumDuration: "720h", NamespaceSelector: policyv1.Target{Include: []policyv1.NonEmptyString{"certs-a"}}}}))
	get := status(t, "certs-a", "expiry")
	waitFor(t, get, policyv1.Compliant, "Compliant")

	var s corev1.Secret
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "certs-a", Name: "web"}, &s))
	s.Data[corev1.TLSCertKey] = liveCert(t, 10*day)
	require.NoError(t, c.Update(ctx, &s))
	st := waitFor(t, get, policyv1.NonCompliant, "NonCompliant; 1 certificates expire in less than 720h0m0s: certs-a:web")
	cert := st.CompliancyDetails["certs-a"].NonCompliantCertificatesList["web"]
	assert.Equal(t, []string{"expires in less than 720h0m0s"}, cert.Reasons)
	assert.NotEmpty(t, cert.Expiration)
	assert.Equal(t, []string{"app.example.com"}, cert.Sans)

	// A malformed certificate is a reason, not a crash: the engine goes on.
	bad := tlsSecret("certs-a", "broken", []byte("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n"))
	require.NoError(t, c.Create(ctx, bad))
	st = waitFor(t, get, policyv1.NonCompliant, "1 certificates cannot be read: certs-a:broken")
	assert.Contains(t, st.CompliancyDetails["certs-a"].Message, "broken cannot be read: tls.crt: neither PEM nor a DER certificate")

	require.NoError(t, c.Delete(ctx, bad))
	require.NoError(t, c.Delete(ctx, &s))
	st = waitFor(t, get, policyv1.Compliant, "Compliant")
	assert.Equal(t, "Compliant", st.History[0].Message)
	assert.GreaterOrEqual(t, len(st.History), 4)

	// Every change of message is a compliance event on the policy. The
	// events are sent by the recorder on its own goroutine: the last may
	// come a moment after the status.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		var events corev1.EventList
		require.NoError(ct, c.List(ctx, &events, client.InNamespace("certs-a")))
		var msgs []string
		for _, e := range events.Items {
			if e.Reason == "policy: certs-a/expiry" && e.InvolvedObject.Kind == "CertificatePolicy" {
				msgs = append(msgs, e.Message)
			}
		}
		assert.Len(ct, msgs, len(st.History))
	}, time.Minute, 100*time.Millisecond)
}

// A certificate that crosses its minimum duration turns the policy
// NonCompliant with no change to any object: the engine looks again at the
// crossing time it computed.
func TestRunnerCrossingWithoutChange(t *testing.T) {
	ctx := context.Background()
	mkNamespace(t, "certs-b")
	// Crosses 100h (the default minimum) three seconds from now.
	require.NoError(t, c.Create(ctx, tlsSecret("certs-b", "soon", liveCert(t, 100*time.Hour+3*time.Second))))
	require.NoError(t, c.Create(ctx, &policyv1.CertificatePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "certs-b", Name: "crossing"},
		Spec: policyv1.CertificatePolicySpec{NamespaceSelector: policyv1.Target{Include: []policyv1.NonEmptyString{"certs-b"}}}}))
	get := status(t, "certs-b", "crossing")
	first := waitFor(t, get, policyv1.Compliant, "Compliant")
	require.Equal(t, []string{"Compliant"}, messages(first))
	st := waitFor(t, get, policyv1.NonCompliant, "1 certificates expire in less than 100h0m0s: certs-b:soon")
	assert.Len(t, st.History, 2)
}

// Admission refuses a duration no engine could read, naming the field.
func TestInvalidDurationRefused(t *testing.T) {
	for _, d := range []string{"soon", "-5h", "1.h", "100000h", "1h2m3s4ms", "10d"} {
		p := &policyv1.CertificatePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bad-" + strings.NewReplacer(".", "-", "00", "").Replace(strings.ToLower(d))},
			Spec: policyv1.CertificatePolicySpec{MinimumDuration: policyv1.CertDuration(d), MaximumCADuration: "87600h87600h"}}
		err := c.Create(context.Background(), p)
		require.Error(t, err, d)
		assert.True(t, apierrors.IsInvalid(err), "%s: %v", d, err)
		assert.Contains(t, err.Error(), "spec.minimumDuration", d)
	}
	ok := &policyv1.CertificatePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "good-durations"},
		Spec: policyv1.CertificatePolicySpec{MinimumDuration: "1.5h", MinimumCADuration: "2h45m30s", MaximumDuration: "2160h", MaximumCADuration: "87600h87600h"}}
	require.NoError(t, c.Create(context.Background(), ok))
}

func messages(st policyv1.CertificatePolicyStatus) []string {
	var out []string
	for _, h := range st.History {
		out = append(out, h.Message)
	}
	return out
}
