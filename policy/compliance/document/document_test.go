package document_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/document"
	"flotilla.dev/flotilla/policy/compliance/history"
	"flotilla.dev/flotilla/policy/compliance/nist"
)

var now = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

// policy is a root in ns, mapped to control, NonCompliant on east, with its
// replica whose message names ns.
func policy(ns, control string) (root, replica policyv1.Policy) {
	root = policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", Annotations: map[string]string{
		policyv1.StandardsAnnotation: "NIST SP 800-53", policyv1.ControlsAnnotation: control}}}
	root.Status.Status = []*policyv1.CompliancePerClusterStatus{{ClusterName: "east", ClusterNamespace: "east", ComplianceState: policyv1.NonCompliant}}
	replica = policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "east", Name: ns + ".p", Labels: map[string]string{policyv1.RootPolicyLabel: ns + ".p"}}}
	replica.Status.Details = []*policyv1.DetailsPerTemplate{{TemplateMeta: metav1.ObjectMeta{Name: "check"}, ComplianceState: policyv1.NonCompliant,
		History: []policyv1.ComplianceHistory{{LastTimestamp: metav1.NewTime(now.Add(-time.Hour)), Message: "NonCompliant; violation - in " + ns}}}}
	return root, replica
}

// source: a/p (AC-6) and b/p (SC-28), and a history where a/p broke 2 days
// ago and b/p broke 3 days ago after a remediation.
func source(t *testing.T) document.Source {
	t.Helper()
	ra, pa := policy("a", "AC-6")
	rb, pb := policy("b", "SC-28")
	s, err := history.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "h.db"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	ev := func(p string, st compliance.State, ago time.Duration) history.Event {
		return history.Event{Policy: p, Template: "check", Cluster: "east", State: st, Message: string(st), Time: now.Add(-ago)}
	}
	_, err = s.Record(context.Background(), ev("a/p", compliance.Compliant, 20*day), ev("a/p", compliance.NonCompliant, 2*day),
		ev("b/p", compliance.NonCompliant, 10*day), ev("b/p", compliance.Compliant, 9*day), ev("b/p", compliance.NonCompliant, 3*day))
	require.NoError(t, err)
	return document.Source{Input: compliance.Input{Roots: []policyv1.Policy{ra, rb}, Replicas: []policyv1.Policy{pa, pb}, Now: now}, History: s}
}

func TestBuildBaselineWithHistory(t *testing.T) {
	moderate, _ := nist.Default().Baseline("moderate")
	doc, err := document.Build(context.Background(), source(t), document.Options{Baseline: moderate, History: true, Since: now.Add(-30 * day)})
	require.NoError(t, err)
	require.NotNil(t, doc.Report.Baseline, "the baseline is kept with a history")
	assert.Equal(t, 2, doc.Report.Baseline.Covered)
	require.NotNil(t, doc.History)
	assert.Len(t, doc.History.Changes, 5)
	require.NotNil(t, doc.History.Trend)
	// The history's chain head it was computed from travels with it (OSCAL
	// history-chain-head), and verify finds it in the store.
	require.NotNil(t, doc.Report.HistoryHead)
	src := source(t)
	_, err = document.Build(context.Background(), src, document.Options{History: true, Since: now.Add(-30 * day)})
	require.NoError(t, err)
	head, err := src.History.Head(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(5), head.Seq)
	assert.Equal(t, head.Hash, doc.Report.HistoryHead.Hash, "the same recorded history, the same head")
	v, err := src.History.Verify(context.Background(), doc.Report.HistoryHead.Hash)
	require.NoError(t, err)
	assert.True(t, v.OK())
	assert.Contains(t, v.Found, doc.Report.HistoryHead.Hash)

	var table bytes.Buffer
	require.NoError(t, document.Render(&table, compliance.FormatTable, doc, compliance.RenderOptions{}))
	assert.Contains(t, table.String(), "BASELINE NIST SP 800-53 rev5 MODERATE")
	assert.Contains(t, table.String(), "5 changes, 1 remediated")
}

// A reader of namespace a sees a's report, messages and history only, also in
// when east last became NonCompliant.
func TestReadableNamespaces(t *testing.T) {
	src := source(t)
	src.Readable = func(ns string) bool { return ns == "a" }
	doc, err := document.Build(context.Background(), src, document.Options{History: true, Since: now.Add(-30 * day)})
	require.NoError(t, err)
	js, err := json.Marshal(doc)
	require.NoError(t, err)
	assert.Contains(t, string(js), "violation - in a")
	assert.NotContains(t, string(js), "b/p")
	assert.NotContains(t, string(js), "violation - in b")

	h, err := document.BuildHistory(context.Background(), src, document.HistoryOptions{Since: now.Add(-30 * day), Cluster: "east"})
	require.NoError(t, err)
	assert.Len(t, h.Changes, 2)
	assert.Empty(t, h.Remediations, "b's remediation is not a's reader's")
	require.NotNil(t, h.LastBecameNonCompliant)
	assert.Equal(t, now.Add(-2*day), *h.LastBecameNonCompliant, "a's break, not b's")

	src.Readable = func(string) bool { return false }
	h, err = document.BuildHistory(context.Background(), src, document.HistoryOptions{Since: now.Add(-30 * day), Cluster: "east"})
	require.NoError(t, err)
	assert.Empty(t, h.Changes)
	assert.Nil(t, h.LastBecameNonCompliant)
}

func TestBuildHistoryControl(t *testing.T) {
	h, err := document.BuildHistory(context.Background(), source(t), document.HistoryOptions{Since: now.Add(-30 * day), Control: "SC-28"})
	require.NoError(t, err)
	assert.Len(t, h.Changes, 3, "b/p's only")
	assert.Len(t, h.Remediations, 1)
	require.NotNil(t, h.Trend)
	require.Len(t, h.Trend.Controls, 1)
	assert.Equal(t, "SC-28 Protection of Information at Rest", h.Trend.Controls[0].Control)

	_, err = document.BuildHistory(context.Background(), document.Source{}, document.HistoryOptions{})
	assert.ErrorIs(t, err, document.ErrNoHistory)
}

// What the CLI renders from the API's JSON is what it renders from the
// document itself, in every format that takes a history.
func TestRenderAfterJSON(t *testing.T) {
	low, _ := nist.Default().Baseline("low")
	doc, err := document.Build(context.Background(), source(t), document.Options{Baseline: low, History: true, Since: now.Add(-7 * day)})
	require.NoError(t, err)
	js, err := json.Marshal(doc)
	require.NoError(t, err)
	var back document.Document
	require.NoError(t, json.Unmarshal(js, &back))
	for _, format := range []string{compliance.FormatTable, compliance.FormatJSON, compliance.FormatHTML} {
		var want, got bytes.Buffer
		require.NoError(t, document.Render(&want, format, doc, compliance.RenderOptions{}))
		require.NoError(t, document.Render(&got, format, &back, compliance.RenderOptions{}))
		assert.Equal(t, want.String(), got.String(), format)
	}
	back.History = nil
	for _, format := range []string{compliance.FormatCSV, compliance.FormatOSCAL} {
		var want, got bytes.Buffer
		require.NoError(t, document.Render(&want, format, &document.Document{Report: doc.Report}, compliance.RenderOptions{}))
		require.NoError(t, document.Render(&got, format, &back, compliance.RenderOptions{}))
		assert.Equal(t, want.String(), got.String(), format)
	}

	h, err := document.BuildHistory(context.Background(), source(t), document.HistoryOptions{Since: now.Add(-30 * day), Cluster: "east"})
	require.NoError(t, err)
	js, err = json.Marshal(h)
	require.NoError(t, err)
	var hback document.HistoryDocument
	require.NoError(t, json.Unmarshal(js, &hback))
	var want, got bytes.Buffer
	require.NoError(t, document.RenderHistory(&want, compliance.FormatTable, h))
	require.NoError(t, document.RenderHistory(&got, compliance.FormatTable, &hback))
	assert.Equal(t, want.String(), got.String())
	assert.Contains(t, got.String(), "east last became NonCompliant: 2026-11-22 12:00Z")
}
