package compliance_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/test/testenv"
)

// TestLoad reads a root policy and its replica from a real hub apiserver, with
// status written through the status subresource as the propagator and the
// spoke's status sync would, and checks the report; a user with no right to
// list policies gets a clear error and no report.
func TestLoad(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	c, err := client.New(env.Hub.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"policies", "east"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	tmpl := &policyv1.PolicyTemplate{}
	tmpl.ObjectDefinition.Raw = []byte(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy","metadata":{"name":"cm-check"},"spec":{"remediationAction":"inform","object-templates":[]}}`)
	rootPolicy := &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "policies", Name: "policy-configmap", Annotations: map[string]string{
			policyv1.StandardsAnnotation:  "NIST SP 800-53",
			policyv1.CategoriesAnnotation: "CM Configuration Management",
			policyv1.ControlsAnnotation:   "CM-2 Baseline Configuration",
		}},
		Spec: policyv1.PolicySpec{PolicyTemplates: []*policyv1.PolicyTemplate{tmpl}},
	}
	replica := &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "east", Name: "policies.policy-configmap", Labels: map[string]string{
			policyv1.RootPolicyLabel: "policies.policy-configmap", policyv1.ClusterNameLabel: "east", policyv1.ClusterNamespaceLabel: "east",
		}},
		Spec: rootPolicy.Spec,
	}
	for _, p := range []*policyv1.Policy{rootPolicy, replica} {
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	when := metav1.NewTime(time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC))
	rootPolicy.Status = policyv1.PolicyStatus{ComplianceState: policyv1.NonCompliant, Status: []*policyv1.CompliancePerClusterStatus{
		{ClusterName: "east", ClusterNamespace: "east", ComplianceState: policyv1.NonCompliant},
	}}
	replica.Status = policyv1.PolicyStatus{ComplianceState: policyv1.NonCompliant, Details: []*policyv1.DetailsPerTemplate{{
		TemplateMeta: metav1.ObjectMeta{Name: "cm-check"}, ComplianceState: policyv1.NonCompliant,
		History: []policyv1.ComplianceHistory{{LastTimestamp: when, Message: "NonCompliant; violation - configmaps [game-config] not found in namespace default"}},
	}}}
	for _, p := range []*policyv1.Policy{rootPolicy, replica} {
		if err := c.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}

	r, err := compliance.Load(ctx, c, compliance.Filter{}, when.Time)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Standards) != 1 || r.Standards[0].Name != "NIST SP 800-53" {
		t.Fatalf("standards = %+v, want NIST SP 800-53 only (the replica is not a root)", r.Standards)
	}
	ctl := r.Standards[0].Families[0].Controls[0]
	if ctl.ID != "CM-2" || len(ctl.Clusters) != 1 || ctl.Clusters[0].State != compliance.NonCompliant {
		t.Fatalf("CM-2 = %+v", ctl)
	}
	v := ctl.Clusters[0].Violations
	if len(v) != 1 || v[0].Template != "cm-check" || !strings.Contains(v[0].Message, "game-config") || !v[0].Time.Equal(when.Time) {
		t.Fatalf("violations = %+v, want cm-check's message from the replica", v)
	}

	// Refused: a user without rights on policies.
	nobody := rest.CopyConfig(env.Hub.Config)
	nobody.Impersonate = rest.ImpersonationConfig{UserName: "nobody"}
	nc, err := client.New(nobody, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	r, err = compliance.Load(ctx, nc, compliance.Filter{}, when.Time)
	if err == nil || !strings.Contains(err.Error(), "list policies") || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("Load as nobody: report %v, err %v; want a forbidden error naming the list", r, err)
	}
}
