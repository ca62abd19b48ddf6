package compliance

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

var t0 = time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)

// policyBuilder builds root policies and replicas for tests:
// root("default", "p").nist("CM", "CM-2").on("c1", NonCompliant).obj().
type policyBuilder struct{ p policyv1.Policy }

func root(ns, name string) *policyBuilder {
	return &policyBuilder{p: policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{}}}}
}

func (b *policyBuilder) annotate(standards, categories, controls string) *policyBuilder {
	b.p.Annotations[policyv1.StandardsAnnotation] = standards
	b.p.Annotations[policyv1.CategoriesAnnotation] = categories
	b.p.Annotations[policyv1.ControlsAnnotation] = controls
	return b
}

func (b *policyBuilder) on(cluster string, s policyv1.ComplianceState) *policyBuilder {
	b.p.Status.Status = append(b.p.Status.Status, &policyv1.CompliancePerClusterStatus{ClusterName: cluster, ClusterNamespace: cluster, ComplianceState: s})
	return b
}

func (b *policyBuilder) disabled() *policyBuilder { b.p.Spec.Disabled = true; return b }

func (b *policyBuilder) obj() policyv1.Policy { return b.p }

// replica builds the replica of root ns/name in cluster's namespace with one
// template per (template, state, message), history newest first.
func replica(ns, name, cluster string, templates ...tmpl) policyv1.Policy {
	p := policyv1.Policy{ObjectMeta: metav1.ObjectMeta{
		Namespace: cluster, Name: ns + "." + name,
		Labels: map[string]string{policyv1.RootPolicyLabel: ns + "." + name},
	}}
	for _, t := range templates {
		d := &policyv1.DetailsPerTemplate{TemplateMeta: metav1.ObjectMeta{Name: t.name}, ComplianceState: t.state}
		for i, m := range t.history {
			d.History = append(d.History, policyv1.ComplianceHistory{
				LastTimestamp: metav1.NewTime(t0.Add(-time.Duration(i) * time.Minute)), Message: m,
			})
		}
		p.Status.Details = append(p.Status.Details, d)
	}
	return p
}

type tmpl struct {
	name    string
	state   policyv1.ComplianceState
	history []string
}
