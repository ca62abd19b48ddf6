package certpolicy_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/certpolicy"
	"flotilla.dev/flotilla/policy/configpolicy/evaluate"
)

const day = 24 * time.Hour

var namespaces = []evaluate.Namespace{
	{Name: "default"}, {Name: "web", Labels: map[string]string{"tier": "front"}}, {Name: "kube-system"},
}

func TestEvaluate(t *testing.T) {
	year := 365 * day
	for _, tc := range []struct {
		name    string
		policy  *policyv1.CertificatePolicy
		secrets []*corev1.Secret
		state   policyv1.ComplianceState
		message string
		// details: namespace -> its message
		details map[string]string
		// reasons: "ns/cert" -> reasons
		reasons map[string][]string
		next    time.Time
	}{
		{
			name:    "long-lived certificate, default minimum 100h",
			policy:  policy(policyv1.CertificatePolicySpec{}, "default"),
			secrets: []*corev1.Secret{secret("default", "a").Cert(t, 30*day, year, false).Obj()},
			state:   policyv1.Compliant, message: "Compliant",
			details: map[string]string{"default": "Found 0 non compliant certificates in the namespace default.\n"},
			next:    t0.Add(30*day - 100*time.Hour + time.Nanosecond),
		},
		{
			name:    "expiring within minimumDuration",
			policy:  policy(policyv1.CertificatePolicySpec{MinimumDuration: "300h"}, "default"),
			secrets: []*corev1.Secret{secret("default", "a").Cert(t, 10*day, year, false).Obj(), secret("default", "b").Cert(t, 30*day, year, false).Obj()},
			state:   policyv1.NonCompliant,
			message: "NonCompliant; 1 certificates expire in less than 300h0m0s: default:a\n",
			details: map[string]string{"default": "Found 1 non compliant certificates in the namespace default.\nList of non compliant certificates:\na expires on 2026-12-07T12:00:00Z\n"},
			reasons: map[string][]string{"default/a": {"expires in less than 300h0m0s"}},
			next:    t0.Add(30*day - 300*time.Hour + time.Nanosecond),
		},
		{
			name:   "CA certificates use minimumCADuration",
			policy: policy(policyv1.CertificatePolicySpec{MinimumDuration: "100h", MinimumCADuration: "2000h"}, "default"),
			secrets: []*corev1.Secret{
				secret("default", "ca").Cert(t, 50*day, year, true).Obj(),
				secret("default", "leaf").Cert(t, 50*day, year, false).Obj(),
			},
			state:   policyv1.NonCompliant,
			message: "NonCompliant;  1 CA certificates expire in less than 2000h0m0s: default:ca\n",
			reasons: map[string][]string{"default/ca": {"expires in less than 2000h0m0s"}},
			next:    t0.Add(50*day - 100*time.Hour + time.Nanosecond),
		},
		{
			name:   "maximum durations, CA apart",
			policy: policy(policyv1.CertificatePolicySpec{MaximumDuration: "2160h", MaximumCADuration: "87600h"}, "default"),
			secrets: []*corev1.Secret{
				secret("default", "long").Cert(t, 200*day, year, false).Obj(),
				secret("default", "ca").Cert(t, 200*day, year, true).Obj(),
				secret("default", "oldca").Cert(t, 200*day, 20*year, true).Obj(),
			},
			state:   policyv1.NonCompliant,
			message: "NonCompliant;  1 certificates exceed the maximum duration of 2160h0m0s: default:long\n 1 CA certificates exceed the maximum duration of 87600h0m0s: default:oldca\n",
			details: map[string]string{"default": "Found 2 non compliant certificates in the namespace default.\nList of non compliant certificates:\nlong duration too long 8760h0m0s\noldca duration too long 175200h0m0s\n"},
			reasons: map[string][]string{"default/long": {"duration 8760h0m0s exceeds the maximum 2160h0m0s"}, "default/oldca": {"duration 175200h0m0s exceeds the maximum 87600h0m0s"}},
			next:    t0.Add(200*day - 100*time.Hour + time.Nanosecond),
		},
		{
			name:   "SAN patterns",
			policy: policy(policyv1.CertificatePolicySpec{AllowedSANPattern: `\.example\.com$`, DisallowedSANPattern: `^admin\.`}, "default"),
			secrets: []*corev1.Secret{
				secret("default", "ok").Cert(t, 30*day, year, false, "www.example.com").Obj(),
				secret("default", "other").Cert(t, 30*day, year, false, "www.example.com", "evil.org").Obj(),
				secret("default", "admin").Cert(t, 30*day, year, false, "admin.example.com").Obj(),
			},
			state:   policyv1.NonCompliant,
			message: "NonCompliant;  2 certificates defined SAN entries do not match pattern Allowed: \\.example\\.com$ Disallowed: ^admin\\.: default:admin, default:other\n",
			details: map[string]string{"default": "Found 2 non compliant certificates in the namespace default.\nList of non compliant certificates:\n" +
				"admin SAN entry found not matching pattern Allowed: \\.example\\.com$ Disallowed: ^admin\\.\n" +
				"other SAN entry found not matching pattern Allowed: \\.example\\.com$ Disallowed: ^admin\\.\n"},
			reasons: map[string][]string{"default/other": {`SAN evil.org does not match \.example\.com$`}, "default/admin": {`SAN admin.example.com matches the disallowed ^admin\.`}},
			next:    t0.Add(30*day - 100*time.Hour + time.Nanosecond),
		},
		{
			name:   "malformed certificate: reported, not skipped, no crash",
			policy: policy(policyv1.CertificatePolicySpec{}, "default"),
			secrets: []*corev1.Secret{
				secret("default", "garbage").Data(corev1.TLSCertKey, []byte("not a certificate")).Obj(),
				secret("default", "key").Data(corev1.TLSCertKey, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")).Obj(),
				secret("default", "empty").Obj(),
			},
			state:   policyv1.NonCompliant,
			message: "NonCompliant;  2 certificates cannot be read: default:garbage, default:key\n",
			reasons: map[string][]string{"default/garbage": {"cannot be read: tls.crt: neither PEM nor a DER certificate (x509: malformed certificate)"},
				"default/key": {"cannot be read: tls.crt: no PEM block of type CERTIFICATE"}},
		},
		{
			name:   "which Secrets: tls type, tls.crt key, certificate_key_name label, labelSelector",
			policy: policy(policyv1.CertificatePolicySpec{LabelSelector: map[string]policyv1.NonEmptyString{"check": "yes"}}, "default"),
			secrets: []*corev1.Secret{
				secret("default", "unlabelled").Cert(t, day, year, false).Obj(),
				secret("default", "opaque").Opaque().Label("check", "yes").Cert(t, day, year, false).Obj(),
				secret("default", "customkey").Opaque().Label("check", "yes").Label(certpolicy.KeyLabel, "ca.pem").Data("ca.pem", certPEM(t, t0.Add(-year), t0.Add(day), false)).Obj(),
				secret("default", "nocert").Opaque().Label("check", "yes").Data("password", []byte("x")).Obj(),
				secret("default", "named").Label("check", "yes").Label(certpolicy.NameLabel, "my-cert").Cert(t, day, year, false).Obj(),
			},
			state:   policyv1.NonCompliant,
			message: "NonCompliant; 3 certificates expire in less than 100h0m0s: default:customkey, default:named, default:opaque\n",
			reasons: map[string][]string{"default/customkey": {"expires in less than 100h0m0s"}, "default/my-cert": {"expires in less than 100h0m0s"}, "default/opaque": {"expires in less than 100h0m0s"}},
		},
		{
			name:   "namespaceSelector: include, exclude, matchLabels",
			policy: &policyv1.CertificatePolicy{Spec: policyv1.CertificatePolicySpec{NamespaceSelector: policyv1.Target{Include: []policyv1.NonEmptyString{"*"}, Exclude: []policyv1.NonEmptyString{"kube-*"}, MatchLabels: map[string]string{"tier": "front"}}}},
			secrets: []*corev1.Secret{
				secret("default", "a").Cert(t, day, year, false).Obj(),
				secret("web", "b").Cert(t, day, year, false).Obj(),
				secret("kube-system", "c").Cert(t, day, year, false).Obj(),
			},
			state:   policyv1.NonCompliant,
			message: "NonCompliant; 1 certificates expire in less than 100h0m0s: web:b\n",
			details: map[string]string{"web": "Found 1 non compliant certificates in the namespace web.\nList of non compliant certificates:\nb expires on 2026-11-28T12:00:00Z\n"},
		},
		{
			name:    "no namespace selected",
			policy:  policy(policyv1.CertificatePolicySpec{}),
			secrets: []*corev1.Secret{secret("default", "a").Cert(t, day, year, false).Obj()},
			state:   policyv1.Compliant,
			message: "Compliant; No namespaces matched the namespace selector.",
			details: map[string]string{"": "Found 0 non compliant certificates, no namespaces were selected.\n"},
		},
		{
			name:    "two namespaces, sorted",
			policy:  policy(policyv1.CertificatePolicySpec{}, "web", "default"),
			secrets: []*corev1.Secret{secret("web", "b").Cert(t, day, year, false).Obj(), secret("default", "a").Cert(t, -day, year, false).Obj()},
			state:   policyv1.NonCompliant,
			message: "NonCompliant; 2 certificates expire in less than 100h0m0s: default:a, web:b\n",
		},
		{
			name:    "bad SAN pattern: NonCompliant with the reason",
			policy:  policy(policyv1.CertificatePolicySpec{AllowedSANPattern: "("}, "default"),
			state:   policyv1.NonCompliant,
			message: "NonCompliant; spec.allowedSANPattern: error parsing regexp: missing closing ): `(`",
		},
		{
			name:    "bad duration (dryrun input; admission refuses it on a cluster)",
			policy:  policy(policyv1.CertificatePolicySpec{MinimumDuration: "soon"}, "default"),
			state:   policyv1.NonCompliant,
			message: "NonCompliant; spec.minimumDuration: duration \"soon\": time: invalid duration \"soon\"",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := certpolicy.Evaluate(certpolicy.Input{Policy: tc.policy, Namespaces: namespaces, Secrets: tc.secrets, Now: t0})
			assert.Equal(t, tc.state, res.Status.ComplianceState)
			assert.Equal(t, tc.message, res.Message)
			for ns, msg := range tc.details {
				require.Contains(t, res.Status.CompliancyDetails, ns)
				assert.Equal(t, msg, res.Status.CompliancyDetails[ns].Message)
			}
			for key, reasons := range tc.reasons {
				ns, name, _ := cut(key)
				c, ok := res.Status.CompliancyDetails[ns].NonCompliantCertificatesList[name]
				require.True(t, ok, "%s not listed: %+v", key, res.Status.CompliancyDetails)
				assert.Equal(t, reasons, c.Reasons)
			}
			assert.Equal(t, tc.next, res.Next)
			assert.Equal(t, t0.Format(time.RFC3339), res.Status.LastEvaluated)
		})
	}
}

// A certificate that passes now fails at the time Evaluate names, and not
// before: the crossing the runner schedules.
func TestEvaluateCrossing(t *testing.T) {
	p := policy(policyv1.CertificatePolicySpec{MinimumDuration: "48h"}, "default")
	secrets := []*corev1.Secret{secret("default", "a").Cert(t, 72*time.Hour, 365*day, false).Obj()}
	res := certpolicy.Evaluate(certpolicy.Input{Policy: p, Namespaces: namespaces, Secrets: secrets, Now: t0})
	require.Equal(t, policyv1.Compliant, res.Status.ComplianceState)
	require.Equal(t, t0.Add(24*time.Hour+time.Nanosecond), res.Next)
	before := certpolicy.Evaluate(certpolicy.Input{Policy: p, Namespaces: namespaces, Secrets: secrets, Now: res.Next.Add(-time.Nanosecond)})
	assert.Equal(t, policyv1.Compliant, before.Status.ComplianceState)
	at := certpolicy.Evaluate(certpolicy.Input{Policy: p, Namespaces: namespaces, Secrets: secrets, Now: res.Next})
	assert.Equal(t, policyv1.NonCompliant, at.Status.ComplianceState)
	assert.True(t, at.Next.IsZero(), "nothing left to wait for")
}

func cut(key string) (string, string, bool) {
	for i := range key {
		if key[i] == '/' {
			return key[:i], key[i+1:], true
		}
	}
	return "", key, false
}
