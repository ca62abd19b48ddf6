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

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"flotilla.dev/flotilla/internal/ocm"
)

// FuzzEvaluate builds real, signed CSRs from arbitrary subjects, labels, names
// and requesters (what anyone holding a bootstrap token can file) and checks
// the hub's decision: a CSR that is approved or waits for an admin always asks
// for exactly its labelled cluster's identity, with no other group and no
// subject alternative name; a requester other than the subject is never
// auto-approved unless listed.
func FuzzEvaluate(f *testing.F) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	f.Add("c1", "system:open-cluster-management:c1:agent", "system:open-cluster-management:c1", "system:open-cluster-management:managed-clusters", "", "system:bootstrap:abc", true)
	f.Add("c1", "system:open-cluster-management:c1:agent", "system:open-cluster-management:c1", "", "", "system:open-cluster-management:c1:agent", false)
	f.Add("c1", "system:open-cluster-management:c2:agent", "system:open-cluster-management:c1", "", "", "x", false)
	f.Add("c1", "system:open-cluster-management:c1:a:b", "system:open-cluster-management:c1", "system:masters", "", "x", false)
	f.Add("kube-system", "system:open-cluster-management:kube-system:a", "system:open-cluster-management:kube-system", "", "", "x", true)
	f.Add("c1", "system:open-cluster-management:c1:agent", "system:open-cluster-management:c1", "", "evil.example.com", "x", true)
	f.Fuzz(func(t *testing.T, label, cn, org1, org2, dnsName, requester string, mayRenew bool) {
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
		v := Evaluate(r, Facts{RequesterMayRenew: mayRenew, AutoApproveUsers: []string{"auto"}})
		if v.Decision == Reject {
			if v.Check == "" || v.Message == "" {
				t.Fatalf("a rejection names its check and says why: %+v", v)
			}
			return
		}
		if v.Decision != Approve && v.Decision != Wait {
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
	})
}
