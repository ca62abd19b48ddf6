package document_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/document"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// TestHistorySectionEscapes: what a managed cluster's agent writes (messages,
// states, template and cluster names, all recorded from replica status) is
// text on the page, never markup, also inside the SVG titles.
func TestHistorySectionEscapes(t *testing.T) {
	hostile := `</title></td><script>alert(1)</script><img src=x onerror=alert(2)>`
	at := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	ev := history.Event{Policy: "ns/p", Template: hostile, Cluster: hostile, State: compliance.State(`NonCompliant" onmouseover="alert(3)`), Message: hostile, Time: at}
	s := &history.Summary{Since: at.Add(-time.Hour), Changes: []history.Transition{{Event: ev, From: compliance.Compliant}}}
	var out bytes.Buffer
	require.NoError(t, document.WriteHistorySection(&out, s))
	page := strings.ToLower(out.String())
	assert.NotContains(t, page, "<script")
	assert.NotContains(t, page, "<img")
	assert.NotContains(t, page, `" onmouseover=`)
	assert.Contains(t, out.String(), "&lt;script&gt;alert(1)&lt;/script&gt;")
}
