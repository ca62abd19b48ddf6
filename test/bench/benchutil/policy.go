package benchutil

import (
	"context"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// CreateBoundPolicy creates the benchmarks' policy number i, named name, in
// namespace ns (an inform ConfigurationPolicy that wants Namespace prod-i,
// annotated NIST SP 800-53 CM-2), bound to Placement "all" there.
func CreateBoundPolicy(ctx context.Context, c client.Client, ns, name string, i int) error {
	p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{
		policyv1.StandardsAnnotation: "NIST SP 800-53", policyv1.CategoriesAnnotation: "CM Configuration Management",
		policyv1.ControlsAnnotation: "CM-2 Baseline Configuration"}},
		Spec: policyv1.PolicySpec{RemediationAction: policyv1.Inform, PolicyTemplates: []*policyv1.PolicyTemplate{{ObjectDefinition: k8sruntime.RawExtension{Raw: []byte(
			`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy","metadata":{"name":"` + name + `-ns"},` +
				`"spec":{"remediationAction":"inform","severity":"low","object-templates":[{"complianceType":"musthave",` +
				`"objectDefinition":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"prod-` + strconv.Itoa(i) + `"}}}]}}`)}}}}}
	if err := c.Create(ctx, p); err != nil {
		return err
	}
	return c.Create(ctx, &policyv1.PlacementBinding{ObjectMeta: metav1.ObjectMeta{Name: "binding-" + name, Namespace: ns},
		PlacementRef: policyv1.PlacementSubject{APIGroup: "cluster.open-cluster-management.io", Kind: "Placement", Name: "all"},
		Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: "Policy", Name: name}}})
}
