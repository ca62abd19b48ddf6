// Package certpolicy benchmarks the CertificatePolicy engine on a real
// kube-apiserver: 10,000 TLS Secrets in 100 namespaces, one policy selecting
// all of them. Results: docs/benchmarks.md.
//
//	go test -run '^$' -bench . -benchtime 1x ./test/bench/certpolicy/
package certpolicy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/policy/certpolicy"
	"flotilla.dev/flotilla/policy/configpolicy/evaluate"
	"flotilla.dev/flotilla/test/bench/benchutil"
	"flotilla.dev/flotilla/test/testenv"
)

const (
	namespaces    = 100
	secretsPerNS  = 100 // 10,000 Secrets
	changes       = 20
	minimum       = 720 * time.Hour
	distinctCerts = 16
)

func certPEM(b *testing.B, left time.Duration, i int) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	notAfter := time.Now().Add(left)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(i + 1)), Subject: pkix.Name{CommonName: fmt.Sprintf("svc-%d", i)},
		NotBefore: notAfter.Add(-365 * 24 * time.Hour), NotAfter: notAfter, DNSNames: []string{fmt.Sprintf("svc-%d.example.com", i)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		b.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func nsName(i int) string { return fmt.Sprintf("bench-cert-%03d", i) }

func BenchmarkCertificatePolicy(b *testing.B) {
	env := testenv.Start(b, testenv.Options{Clusters: 1, NoHub: true})
	cfg := rest.CopyConfig(env.Clusters[0].Config)
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	good := make([][]byte, distinctCerts)
	for i := range good {
		good[i] = certPEM(b, 180*24*time.Hour, i)
	}
	expiring := certPEM(b, 10*24*time.Hour, 999)

	b.Logf("creating %d namespaces and %d TLS Secrets", namespaces, namespaces*secretsPerNS)
	parallel(b, namespaces, func(i int) error {
		return c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName(i)}})
	})
	parallel(b, namespaces*secretsPerNS, func(i int) error {
		return c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: nsName(i / secretsPerNS), Name: fmt.Sprintf("tls-%d", i%secretsPerNS)},
			Type: corev1.SecretTypeTLS, Data: map[string][]byte{corev1.TLSCertKey: good[i%distinctCerts], corev1.TLSPrivateKeyKey: []byte("k")}})
	})
	p := &policyv1.CertificatePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "all-certs"},
		Spec: policyv1.CertificatePolicySpec{MinimumDuration: "720h", NamespaceSelector: policyv1.Target{Include: []policyv1.NonEmptyString{"bench-cert-*"}}}}
	if err := c.Create(ctx, p); err != nil {
		b.Fatal(err)
	}

	for range b.N {
		// One evaluation alone, in process: parse and check 10,000 certificates.
		var secrets corev1.SecretList
		if err := c.List(ctx, &secrets); err != nil {
			b.Fatal(err)
		}
		var in certpolicy.Input
		in.Policy, in.Now = p, time.Now()
		for i := range namespaces {
			in.Namespaces = append(in.Namespaces, evaluate.Namespace{Name: nsName(i)})
		}
		for i := range secrets.Items {
			in.Secrets = append(in.Secrets, &secrets.Items[i])
		}
		start := time.Now()
		res := certpolicy.Evaluate(in)
		eval := time.Since(start)
		b.ReportMetric(float64(eval.Milliseconds()), "ms/evaluate-10k")
		b.Logf("Evaluate over %d Secrets (pure, in process): %s, %s", len(in.Secrets), eval.Round(time.Millisecond), res.Status.ComplianceState)

		// First pass: the engine starts, lists and caches every Secret,
		// evaluates, writes the status.
		engineCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		start = time.Now()
		go func() { done <- certpolicy.Run(engineCtx, certpolicy.Options{Config: cfg}) }()
		waitFor(b, c, func(st policyv1.CertificatePolicyStatus) bool { return st.ComplianceState == policyv1.Compliant })
		first := time.Since(start)
		b.ReportMetric(first.Seconds(), "s/first-pass")
		b.Logf("first pass (start, list and cache %d Secrets, evaluate, write the status): %s", namespaces*secretsPerNS, first.Round(time.Millisecond))

		// Change -> status: a Secret's certificate replaced by one expiring
		// within the minimum, then put back.
		var lat []time.Duration
		for i := range changes {
			ns, name := nsName((i*37)%namespaces), fmt.Sprintf("tls-%d", (i*53)%secretsPerNS)
			crt := expiring
			want := func(st policyv1.CertificatePolicyStatus) bool {
				_, listed := st.CompliancyDetails[ns].NonCompliantCertificatesList[name]
				return listed
			}
			if i%2 == 1 {
				ns, name = nsName(((i-1)*37)%namespaces), fmt.Sprintf("tls-%d", ((i-1)*53)%secretsPerNS)
				crt = good[0]
				want = func(st policyv1.CertificatePolicyStatus) bool { return st.ComplianceState == policyv1.Compliant }
			}
			var s corev1.Secret
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
				b.Fatal(err)
			}
			s.Data[corev1.TLSCertKey] = crt
			start := time.Now()
			if err := c.Update(ctx, &s); err != nil {
				b.Fatal(err)
			}
			waitFor(b, c, want)
			lat = append(lat, time.Since(start))
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		p50, p95 := lat[len(lat)/2], lat[len(lat)*95/100]
		b.ReportMetric(float64(p50.Milliseconds()), "ms/change-to-status-p50")
		b.ReportMetric(float64(p95.Milliseconds()), "ms/change-to-status-p95")
		b.Logf("Secret change -> policy status (%d changes, each re-evaluating the 10,000 certificates): p50 %s, p95 %s, max %s",
			len(lat), p50.Round(time.Millisecond), p95.Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
		stop()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

// waitFor returns once the policy's status satisfies ok, following it with
// a watch: a measurement is the engine's latency and one watch event.
func waitFor(b *testing.B, c client.WithWatch, ok func(policyv1.CertificatePolicyStatus) bool) {
	p := &policyv1.CertificatePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "all-certs"}}
	benchutil.WaitWatch(b, c, &policyv1.CertificatePolicyList{}, p, func(p *policyv1.CertificatePolicy) bool { return ok(p.Status) }, 5*time.Minute)
}

func parallel(b *testing.B, n int, f func(i int) error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []string
	next := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					errs = append(errs, err.Error())
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		b.Fatalf("%d failures, first: %s", len(errs), strings.Join(errs[:1], ""))
	}
}
