package history_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// TestTrendNowAfterSameSecondRemediation is the report of issue 28: the
// demo's policy went NonCompliant on cluster2 and was enforced Compliant in
// the same second. The trend's "now" and the family's count now must equal
// the live report (Compliant on both clusters), and the summary counts one
// remediation.
func TestTrendNowAfterSameSecondRemediation(t *testing.T) {
	for name, whole := range map[string]bool{"microseconds, recorded remediation first": false, "one whole second, recorded in order": true} {
		t.Run(name, func(t *testing.T) { testTrendNow(t, whole) })
	}
}

func testTrendNow(t *testing.T, wholeSecond bool) {
	ctx := context.Background()
	s, err := history.OpenSQLite(ctx, filepath.Join(t.TempDir(), "h.db"))
	require.NoError(t, err)
	defer s.Close()
	now := time.Date(2026, 11, 20, 6, 0, 0, 0, time.UTC)
	sec := now.Add(-14*time.Minute + 10*time.Second)
	ev := func(cluster string, st compliance.State, at time.Time) history.Event {
		return history.Event{Policy: "policies/policy-baseline-namespace", Template: "baseline-namespace", Cluster: cluster, State: st, Message: string(st) + "; x", Time: at}
	}
	// Recorded in the worst order: the remediation first, as a replica's
	// newest-first list would give them one by one. A source that knows
	// only the whole second gives them in the order they happened, and the
	// recording order keeps it (the state's name used to break the tie).
	events := []history.Event{ev("cluster1", compliance.Compliant, sec.Add(-time.Minute)),
		ev("cluster2", compliance.Compliant, sec.Add(480*time.Millisecond)), ev("cluster2", compliance.NonCompliant, sec.Add(120*time.Millisecond))}
	if wholeSecond {
		events[1], events[2] = ev("cluster2", compliance.NonCompliant, sec), ev("cluster2", compliance.Compliant, sec)
	}
	for _, e := range events {
		_, err := s.Record(ctx, e)
		require.NoError(t, err)
	}
	root := policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "policies", Name: "policy-baseline-namespace", Annotations: map[string]string{
		policyv1.StandardsAnnotation: "NIST SP 800-53", policyv1.CategoriesAnnotation: "CM Configuration Management",
		policyv1.ControlsAnnotation: "CM-2 Baseline Configuration"}}}
	for _, c := range []string{"cluster1", "cluster2"} {
		root.Status.Status = append(root.Status.Status, &policyv1.CompliancePerClusterStatus{ClusterName: c, ClusterNamespace: c, ComplianceState: policyv1.Compliant})
	}
	in := compliance.Input{Roots: []policyv1.Policy{root}, Now: now}
	r := compliance.Build(in, compliance.Filter{})
	sum, err := history.SummarizeWithTrend(ctx, s, history.Query{Since: now.Add(-time.Hour)}, nil, r, in, 0)
	require.NoError(t, err)
	last := sum.Trend.Total[len(sum.Trend.Total)-1]
	assert.Equal(t, 2, last.Compliant, "the trend's now: compliant, as the live report")
	assert.Equal(t, 0, last.NonCompliant, "the trend's now: no noncompliant")
	for _, c := range sum.Trend.Controls {
		p := c.Points[len(c.Points)-1]
		assert.Equal(t, 0, p.NonCompliant, "%s %s: noncompliant now", c.Family, c.Control)
	}
	assert.Len(t, sum.Remediations, 1)
	require.NotEmpty(t, sum.Changes)
	assert.Equal(t, compliance.Compliant, sum.Changes[len(sum.Changes)-1].State, "the newest change is the remediation")
}
