package propagator

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// Series follow the replicas, a deleted root loses its series, and a reset
// (a restart of the controllers) leaves none until roots are observed again.
func TestGovernanceInfoSeries(t *testing.T) {
	m := NewMetrics(nil)
	root := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	rep := func(s policyv1.ComplianceState) *policyv1.Policy {
		return &policyv1.Policy{Status: policyv1.PolicyStatus{ComplianceState: s}}
	}
	m.observe(root, policyv1.PolicyStatus{ComplianceState: policyv1.NonCompliant},
		map[string]*policyv1.Policy{"c1": rep(policyv1.Compliant), "c2": rep(policyv1.NonCompliant)})
	assert.Equal(t, 3, testutil.CollectAndCount(m.GovernanceInfo))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.GovernanceInfo.WithLabelValues("root", "p", "ns", "")))
	assert.Equal(t, 0.0, testutil.ToFloat64(m.GovernanceInfo.WithLabelValues("propagated", "p", "ns", "c1")))

	m.observe(root, policyv1.PolicyStatus{ComplianceState: policyv1.Compliant}, map[string]*policyv1.Policy{"c1": rep(policyv1.Compliant)})
	assert.Equal(t, 2, testutil.CollectAndCount(m.GovernanceInfo), "c2's series dropped with its replica")

	other := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"}}
	m.observe(other, policyv1.PolicyStatus{}, nil)
	m.forgetRoot("ns", "p")
	assert.Equal(t, 1, testutil.CollectAndCount(m.GovernanceInfo), "p's series gone, q's kept")
	assert.Equal(t, -1.0, testutil.ToFloat64(m.GovernanceInfo.WithLabelValues("root", "q", "ns", "")))

	m.reset()
	assert.Equal(t, 0, testutil.CollectAndCount(m.GovernanceInfo))
	m.observe(other, policyv1.PolicyStatus{}, map[string]*policyv1.Policy{"c1": rep(policyv1.Compliant)})
	assert.Equal(t, 2, testutil.CollectAndCount(m.GovernanceInfo))
}
