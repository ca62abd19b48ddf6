package csr

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"flotilla.dev/flotilla/internal/ocm"
)

// FuzzEvaluate builds real, signed CSRs from arbitrary subjects, labels, names
// and requesters (what anyone holding a bootstrap token can file) and checks
// the hub's decision: a CSR that is approved or waits for an admin always asks
// for exactly its labelled cluster's identity, with no other group and no
// subject alternative name; a requester other than the subject is never
// auto-approved unless listed, and a listed one only for a cluster the hub
// accepted for its CSR or whose lease is stale, never a denied one.
func FuzzEvaluate(f *testing.F) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	f.Add("c1", "system:open-cluster-management:c1:agent", "system:open-cluster-management:c1", "system:open-cluster-management:managed-clusters", "", "system:bootstrap:abc", true, uint8(0))
	f.Add("c1", "system:open-cluster-management:c1:agent", "system:open-cluster-management:c1", "", "", "system:open-cluster-management:c1:agent", false, uint8(0))
	f.Add("c1", "system:open-cluster-management:c2:agent", "system:open-cluster-management:c1", "", "", "x", false, uint8(0))
	f.Add("c1", "system:open-cluster-management:c1:a:b", "system:open-cluster-management:c1", "system:masters", "", "x", false, uint8(0))
	f.Add("kube-system", "system:open-cluster-management:kube-system:a", "system:open-cluster-management:kube-system", "", "", "x", true, uint8(0))
	f.Add("c1", "system:open-cluster-management:c1:agent", "system:open-cluster-management:c1", "", "evil.example.com", "x", true, uint8(0))
	f.Add("c1", "system:open-cluster-management:c1:agent", "system:open-cluster-management:c1", "", "", "auto", false, uint8(0b011111))
	f.Add("c1", "system:open-cluster-management:c1:agent", "system:open-cluster-management:c1", "", "", "auto", false, uint8(0b101011))
	f.Fuzz(func(t *testing.T, label, cn, org1, org2, dnsName, requester string, mayRenew bool, state uint8) {
		tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}}
		for _, o := range []string{org1, org2} {
			if o != "" {
				tmpl.Subject.Organization = append(tmpl.Subject.Organization, o)
			}
		}
		if dnsName != "" {
			tmpl.DNSNames = []string{dnsName}
		}
		der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
		if err != nil {
			return // not encodable: nobody can file it either
		}
		r := &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{ocm.ClusterNameLabel: label}},
			Spec: certificatesv1.CertificateSigningRequestSpec{
				Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
				SignerName: certificatesv1.KubeAPIServerClientSignerName,
				Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
				Username:   requester,
			},
		}
		// state's bits: found, hubAcceptsClient, HubAccepted present, HubAccepted
		// True, ever granted, lease stale, accepted by the hub for this CSR, deleting.
		bit := func(i int) bool { return state&(1<<i) != 0 }
		now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
		r.UID = "uid-1"
		cluster := ClusterFacts{Found: bit(0), HubAcceptsClient: bit(1), EverGranted: bit(4), Deleting: bit(7), Grace: 5 * time.Minute}
		if bit(2) {
			status := metav1.ConditionFalse
			if bit(3) {
				status = metav1.ConditionTrue
			}
			cluster.HubAccepted = &metav1.Condition{Status: status, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}
		}
		renewed := metav1.NewMicroTime(now.Add(-time.Minute))
		if bit(5) {
			renewed = metav1.NewMicroTime(now.Add(-time.Hour))
		}
		cluster.LeaseRenewTime = &renewed
		if bit(6) {
			cluster.AutoAcceptedFor = "uid-1"
		}
		v := Evaluate(r, Facts{RequesterMayRenew: mayRenew, AutoApproveUsers: []string{"auto"}, Cluster: cluster, Now: now})
		if v.Decision == Reject {
			if v.Check == "" || v.Message == "" {
				t.Fatalf("a rejection names its check and says why: %+v", v)
			}
			return
		}
		if v.Decision != Approve && v.Decision != Wait && v.Decision != Accept && v.Decision != Hold {
			t.Fatalf("unexpected decision %q for a labelled CSR", v.Decision)
		}
		want := ocm.ClusterGroupName(label)
		if ocm.ReservedName(label) != "" {
			t.Fatalf("a reserved cluster name %q passed", label)
		}
		if cn != ocm.GroupPrefix+label+":"+v.Agent || v.Agent == "" || strings.Contains(v.Agent, ":") {
			t.Fatalf("CN %q passed for cluster %q (agent %q)", cn, label, v.Agent)
		}
		if !slices.Contains(tmpl.Subject.Organization, want) {
			t.Fatalf("O %v passed without %q", tmpl.Subject.Organization, want)
		}
		for _, o := range tmpl.Subject.Organization {
			if o != want && o != ocm.ManagedClustersGroup {
				t.Fatalf("O %q passed", o)
			}
		}
		if dnsName != "" {
			t.Fatalf("a CSR with SAN %q passed", dnsName)
		}
		if v.Decision == Approve && !(requester == cn && mayRenew) && requester != "auto" {
			t.Fatalf("approved without renew permission or auto-approve: requester %q CN %q", requester, cn)
		}
		if (v.Decision == Accept || v.Decision == Hold) && (requester != "auto" || v.Renewal) {
			t.Fatalf("%s is only for an auto-approve user's first CSR: requester %q CN %q", v.Decision, requester, cn)
		}
		if v.Decision == Approve && !v.Renewal {
			granted := cluster.HubAccepted != nil && cluster.HubAccepted.Status == metav1.ConditionTrue
			if !cluster.Found || cluster.Deleting || !cluster.HubAcceptsClient || !granted || !(bit(5) || bit(6)) {
				t.Fatalf("auto-approved a first CSR for a cluster that is missing, deleting, denied, not granted or live: %+v", cluster)
			}
		}
		if v.Decision == Accept && (!cluster.Found || cluster.HubAcceptsClient || cluster.HubAccepted != nil || cluster.EverGranted) {
			t.Fatalf("auto-accepted a cluster somebody decided on: %+v", cluster)
		}
	})
}
