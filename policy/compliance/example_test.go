package compliance_test

import (
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/compliance"
)

// A root policy annotated as in policy-collection, NonCompliant on one of two
// clusters, reported as a table.
func Example() {
	p := policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "policies", Name: "policy-role", Annotations: map[string]string{
		policyv1.StandardsAnnotation:  "NIST SP 800-53",
		policyv1.CategoriesAnnotation: "AC Access Control",
		policyv1.ControlsAnnotation:   "AC-6 Least Privilege",
	}}}
	p.Status.Status = []*policyv1.CompliancePerClusterStatus{
		{ClusterName: "east", ClusterNamespace: "east", ComplianceState: policyv1.NonCompliant},
		{ClusterName: "west", ClusterNamespace: "west", ComplianceState: policyv1.Compliant},
	}
	r := compliance.Build(compliance.Input{Roots: []policyv1.Policy{p}, Now: time.Now()}, compliance.Filter{})
	_ = compliance.WriteTable(os.Stdout, r)
	// Output:
	// STANDARD         FAMILY              CONTROL                COMPLIANT   NONCOMPLIANT   PENDING   VIOLATING CLUSTERS
	// NIST SP 800-53   AC Access Control   AC-6 Least Privilege   1           1              0         east
}
