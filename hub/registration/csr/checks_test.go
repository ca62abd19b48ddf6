package csr

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// csrBuilder makes CertificateSigningRequests for the table below.
type csrBuilder struct {
	t   *testing.T
	obj *certificatesv1.CertificateSigningRequest
	sub pkix.Name
	dns []string
	raw []byte
}

func newCSR(t *testing.T, cluster, agent string) *csrBuilder {
	return &csrBuilder{t: t,
		obj: &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: cluster + "-x", Labels: map[string]string{"open-cluster-management.io/cluster-name": cluster}},
			Spec: certificatesv1.CertificateSigningRequestSpec{
				SignerName: certificatesv1.KubeAPIServerClientSignerName,
				Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth},
				Username:   "system:serviceaccount:open-cluster-management:agent-registration-bootstrap",
			},
		},
		sub: pkix.Name{
			CommonName:   "system:open-cluster-management:" + cluster + ":" + agent,
			Organization: []string{"system:open-cluster-management:" + cluster, "system:open-cluster-management:managed-clusters"},
		},
	}
}

func (b *csrBuilder) label(v string) *csrBuilder {
	b.obj.Labels["open-cluster-management.io/cluster-name"] = v
	return b
}
func (b *csrBuilder) noLabel() *csrBuilder {
	delete(b.obj.Labels, "open-cluster-management.io/cluster-name")
	return b
}
func (b *csrBuilder) signer(s string) *csrBuilder {
	b.obj.Spec.SignerName = s
	return b
}
func (b *csrBuilder) cn(s string) *csrBuilder          { b.sub.CommonName = s; return b }
func (b *csrBuilder) org(o ...string) *csrBuilder      { b.sub.Organization = o; return b }
func (b *csrBuilder) user(u string) *csrBuilder        { b.obj.Spec.Username = u; return b }
func (b *csrBuilder) dnsNames(d ...string) *csrBuilder { b.dns = d; return b }
func (b *csrBuilder) rawRequest(r []byte) *csrBuilder  { b.raw = r; return b }
func (b *csrBuilder) usages(u ...certificatesv1.KeyUsage) *csrBuilder {
	b.obj.Spec.Usages = u
	return b
}
func (b *csrBuilder) condition(c certificatesv1.RequestConditionType) *csrBuilder {
	b.obj.Status.Conditions = append(b.obj.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: c})
	return b
}
func (b *csrBuilder) uid(u string) *csrBuilder { b.obj.UID = types.UID(u); return b }
func (b *csrBuilder) renewal() *csrBuilder     { b.obj.Spec.Username = b.sub.CommonName; return b }

func (b *csrBuilder) Obj() *certificatesv1.CertificateSigningRequest {
	if b.raw != nil {
		b.obj.Spec.Request = b.raw
		return b.obj
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(b.t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: b.sub, DNSNames: b.dns}, key)
	require.NoError(b.t, err)
	b.obj.Spec.Request = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	return b.obj
}

func TestEvaluate(t *testing.T) {
	const c1, c2 = "cluster1", "cluster2"
	mayRenew := Facts{RequesterMayRenew: true}
	tests := []struct {
		name     string
		csr      *certificatesv1.CertificateSigningRequest
		facts    Facts
		decision Decision
		check    string
	}{
		{"first CSR waits for an admin", newCSR(t, c1, "a1").Obj(), Facts{}, Wait, ""},
		{"first CSR from an auto-approve user, cluster nobody decided on", newCSR(t, c1, "a1").user("admin").Obj(), Facts{AutoApproveUsers: []string{"admin"}, Cluster: ClusterFacts{Found: true}}, Accept, ""},
		{"renewal with renew permission", newCSR(t, c1, "a1").renewal().Obj(), mayRenew, Approve, ""},
		{"renewal without renew permission", newCSR(t, c1, "a1").renewal().Obj(), Facts{}, Reject, CheckRenewal},
		{"renewal is not helped by auto-approve", newCSR(t, c1, "a1").renewal().Obj(), Facts{AutoApproveUsers: []string{"system:open-cluster-management:cluster1:a1"}}, Reject, CheckRenewal},
		{"not a cluster CSR", newCSR(t, c1, "a1").noLabel().Obj(), mayRenew, Ignore, ""},
		{"already approved", newCSR(t, c1, "a1").condition(certificatesv1.CertificateApproved).Obj(), mayRenew, Ignore, ""},
		{"already denied", newCSR(t, c1, "a1").condition(certificatesv1.CertificateDenied).Obj(), mayRenew, Ignore, ""},
		{"wrong signer", newCSR(t, c1, "a1").signer("kubernetes.io/kubelet-serving").renewal().Obj(), mayRenew, Reject, CheckSigner},
		{"label not a DNS label", newCSR(t, c1, "a1").label("Cluster_1").Obj(), mayRenew, Reject, CheckLabel},
		{"empty label", newCSR(t, c1, "a1").label("").Obj(), mayRenew, Reject, CheckLabel},
		{"reserved cluster name (the shared group)", newCSR(t, "managed-clusters", "a1").Obj(), mayRenew, Reject, CheckLabel},
		{"reserved cluster name (a system namespace)", newCSR(t, "kube-system", "a1").Obj(), mayRenew, Reject, CheckLabel},
		{"garbage request", newCSR(t, c1, "a1").rawRequest([]byte("hello")).Obj(), mayRenew, Reject, CheckRequest},
		{"certificate instead of request", newCSR(t, c1, "a1").rawRequest(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}})).Obj(), mayRenew, Reject, CheckRequest},
		{"forged: label cluster1, subject cluster2", newCSR(t, c2, "a1").label(c1).renewal().Obj(), mayRenew, Reject, CheckOrganization},
		{"forged: extra organization of another cluster", newCSR(t, c1, "a1").org("system:open-cluster-management:cluster1", "system:open-cluster-management:cluster2").renewal().Obj(), mayRenew, Reject, CheckOrganization},
		{"forged: system:masters", newCSR(t, c1, "a1").org("system:open-cluster-management:cluster1", "system:masters").renewal().Obj(), mayRenew, Reject, CheckOrganization},
		{"missing cluster organization", newCSR(t, c1, "a1").org("system:open-cluster-management:managed-clusters").Obj(), mayRenew, Reject, CheckOrganization},
		{"CN of another cluster", newCSR(t, c1, "a1").cn("system:open-cluster-management:cluster2:a1").renewal().Obj(), mayRenew, Reject, CheckCommonName},
		{"CN without agent", newCSR(t, c1, "a1").cn("system:open-cluster-management:cluster1:").Obj(), mayRenew, Reject, CheckCommonName},
		{"CN with extra segment", newCSR(t, c1, "a1").cn("system:open-cluster-management:cluster1:a:b").Obj(), mayRenew, Reject, CheckCommonName},
		{"CN is admin", newCSR(t, c1, "a1").cn("admin").Obj(), mayRenew, Reject, CheckCommonName},
		{"SANs requested", newCSR(t, c1, "a1").dnsNames("evil.example.com").Obj(), mayRenew, Reject, CheckUsages},
		{"server auth usage", newCSR(t, c1, "a1").usages(certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth).renewal().Obj(), mayRenew, Reject, CheckUsages},
		{"no client auth usage", newCSR(t, c1, "a1").usages(certificatesv1.UsageDigitalSignature).renewal().Obj(), mayRenew, Reject, CheckUsages},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Evaluate(tt.csr, tt.facts)
			assert.Equal(t, tt.decision, v.Decision, v.Message)
			assert.Equal(t, tt.check, v.Check, v.Message)
			assert.NotEmpty(t, v.Message)
		})
	}
}

func TestValidateParsesIdentity(t *testing.T) {
	v := Validate(newCSR(t, "cluster1", "agent-7").renewal().Obj())
	assert.Equal(t, Decision(""), v.Decision, v.Message)
	assert.Equal(t, "cluster1", v.Cluster)
	assert.Equal(t, "agent-7", v.Agent)
	assert.True(t, v.Renewal)
}

// clusterFacts builds the ClusterFacts of the auto-approve table.
type clusterFacts struct{ f ClusterFacts }

func cluster() *clusterFacts {
	return &clusterFacts{f: ClusterFacts{Found: true, Grace: 5 * time.Minute}}
}

// accepted: spec.hubAcceptsClient=true and granted (HubAccepted=True) at `at`.
func (c *clusterFacts) accepted(at time.Time) *clusterFacts {
	c.f.HubAcceptsClient, c.f.EverGranted = true, true
	return c.hubAccepted(metav1.ConditionTrue, at)
}
func (c *clusterFacts) hubAccepted(s metav1.ConditionStatus, at time.Time) *clusterFacts {
	c.f.HubAccepted = &metav1.Condition{Type: "HubAcceptedManagedCluster", Status: s, LastTransitionTime: metav1.NewTime(at)}
	return c
}
func (c *clusterFacts) spec(accepts bool) *clusterFacts { c.f.HubAcceptsClient = accepts; return c }
func (c *clusterFacts) everGranted() *clusterFacts      { c.f.EverGranted = true; return c }
func (c *clusterFacts) deleting() *clusterFacts         { c.f.Deleting = true; return c }
func (c *clusterFacts) forCSR(uid string) *clusterFacts {
	c.f.AutoAcceptedFor = uid
	return c
}
func (c *clusterFacts) renewed(at time.Time) *clusterFacts {
	t := metav1.NewMicroTime(at)
	c.f.LeaseRenewTime = &t
	return c
}

// TestEvaluateAutoApprove: an auto-approve user's first CSR obtains a
// certificate only for a cluster nobody decided on (accepted by the hub for
// it first) or one whose lease is stale; a live accepted cluster, a denied
// and a deleting one are held for an admin (pending, never denied).
func TestEvaluateAutoApprove(t *testing.T) {
	const c1, auto, uid = "cluster1", "auto", "uid-1"
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	first := func() *csrBuilder { return newCSR(t, c1, "a1").user(auto).uid(uid) }
	missing := &clusterFacts{}
	tests := []struct {
		name     string
		csr      *certificatesv1.CertificateSigningRequest
		cluster  *clusterFacts
		decision Decision
		retry    time.Duration
	}{
		// Nobody decided on the cluster.
		{"no ManagedCluster yet: waits for it", first().Obj(), missing, Wait, 0},
		{"undecided: the hub accepts the cluster", first().Obj(), cluster(), Accept, 0},
		{"accepted by the hub for this CSR, not yet granted: waits", first().Obj(), cluster().spec(true).forCSR(uid), Wait, 0},
		{"accepted by the hub for this CSR, granted: approved", first().Obj(), cluster().accepted(ago(time.Second)).forCSR(uid).renewed(ago(time.Second)), Approve, 0},
		// Accepted (by an admin, or by the hub for another CSR).
		{"accepted, fresh lease: held until stale", first().Obj(), cluster().accepted(ago(time.Hour)).renewed(ago(time.Minute)), Hold, 4 * time.Minute},
		{"accepted by the hub for another CSR, fresh lease: held", first().Obj(), cluster().accepted(ago(time.Hour)).forCSR("uid-0").renewed(ago(time.Minute)), Hold, 4 * time.Minute},
		{"accepted, stale lease: approved", first().Obj(), cluster().accepted(ago(time.Hour)).renewed(ago(6 * time.Minute)), Approve, 0},
		{"accepted, lease renewed exactly a grace ago: stale, approved", first().Obj(), cluster().accepted(ago(time.Hour)).renewed(ago(5 * time.Minute)), Approve, 0},
		{"accepted recently, never renewed: clock from acceptance, held", first().Obj(), cluster().accepted(ago(time.Minute)), Hold, 4 * time.Minute},
		{"accepted long ago, never renewed: clock from acceptance, approved", first().Obj(), cluster().accepted(ago(10 * time.Minute)), Approve, 0},
		{"accepted by an admin, not yet granted: held, clock from now", first().Obj(), cluster().spec(true), Hold, 5 * time.Minute},
		{"accepted, namespace conflict (HubAccepted False): held", first().Obj(), cluster().spec(true).hubAccepted(metav1.ConditionFalse, ago(time.Hour)), Hold, 5 * time.Minute},
		// Denied or deleting: never.
		{"denied: held", first().Obj(), cluster().everGranted().hubAccepted(metav1.ConditionFalse, ago(time.Hour)), Hold, 0},
		{"denied, stale lease: still held", first().Obj(), cluster().everGranted().hubAccepted(metav1.ConditionFalse, ago(time.Hour)).renewed(ago(time.Hour)), Hold, 0},
		{"denied before the hub applied it (HubAccepted still True), stale lease: held", first().Obj(), cluster().everGranted().hubAccepted(metav1.ConditionTrue, ago(time.Hour)).renewed(ago(time.Hour)), Hold, 0},
		{"denied after the agent dropped its condition: held", first().Obj(), cluster().everGranted(), Hold, 0},
		{"denied after the hub accepted it for this CSR: held", first().Obj(), cluster().everGranted().forCSR(uid).hubAccepted(metav1.ConditionFalse, ago(time.Hour)), Hold, 0},
		{"being deleted: held", first().Obj(), cluster().accepted(ago(time.Hour)).renewed(ago(time.Hour)).deleting(), Hold, 0},
		// Not an auto-approve user, or a renewal: unchanged.
		{"another user, undecided cluster: waits for an admin", newCSR(t, c1, "a1").user("someone").Obj(), cluster(), Wait, 0},
		{"another user, stale lease: waits for an admin", newCSR(t, c1, "a1").user("someone").Obj(), cluster().accepted(ago(time.Hour)).renewed(ago(time.Hour)), Wait, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Evaluate(tt.csr, Facts{AutoApproveUsers: []string{auto}, Cluster: tt.cluster.f, Now: now})
			assert.Equal(t, tt.decision, v.Decision, v.Message)
			assert.Equal(t, tt.retry, v.RetryAfter, v.Message)
			assert.Empty(t, v.Check, v.Message)
			assert.Contains(t, v.Message, c1)
			if v.Decision == Hold {
				assert.True(t, strings.Contains(v.Message, "flotilla accept --clusters cluster1 --force"), "a held CSR names the admin's way out: %s", v.Message)
			}
		})
	}
}

// TestEvaluateAutoApproveAfterAnOutage: after the hub (or its apiserver, or
// the way to it) was down, every lease looks old; a silence counts only from
// when the approver started listening again.
func TestEvaluateAutoApproveAfterAnOutage(t *testing.T) {
	const auto = "auto"
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	csr := newCSR(t, "cluster1", "a1").user(auto).uid("uid-1").Obj()
	stale := cluster().accepted(ago(time.Hour)).renewed(ago(time.Hour)).f
	for _, tc := range []struct {
		name     string
		since    time.Time
		decision Decision
		retry    time.Duration
	}{
		{"listening for two minutes: held until a grace after the start", ago(2 * time.Minute), Hold, 3 * time.Minute},
		{"listening for longer than the grace: approved", ago(10 * time.Minute), Approve, 0},
		{"no bound given: approved", time.Time{}, Approve, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Evaluate(csr, Facts{AutoApproveUsers: []string{auto}, Cluster: stale, Now: now, ListeningSince: tc.since})
			assert.Equal(t, tc.decision, v.Decision, v.Message)
			assert.Equal(t, tc.retry, v.RetryAfter, v.Message)
		})
	}
}

// TestEvaluateRenewalIgnoresClusterFacts: a renewal is decided by the renew
// permission alone, whatever the lease says and whoever is listed.
func TestEvaluateRenewalIgnoresClusterFacts(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	fresh := cluster().accepted(now.Add(-time.Hour)).renewed(now).f
	renewal := newCSR(t, "cluster1", "a1").renewal().Obj()
	users := []string{renewal.Spec.Username}
	v := Evaluate(renewal, Facts{RequesterMayRenew: true, AutoApproveUsers: users, Cluster: fresh, Now: now})
	assert.Equal(t, Approve, v.Decision, v.Message)
	v = Evaluate(renewal, Facts{AutoApproveUsers: users, Cluster: cluster().f, Now: now})
	assert.Equal(t, Reject, v.Decision, v.Message)
	assert.Equal(t, CheckRenewal, v.Check)
}
