package document_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"flotilla.dev/flotilla/policy/compliance/document"
)

func TestParseQuery(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	window := 30 * 24 * time.Hour
	many := strings.TrimSuffix(strings.Repeat("c,", document.MaxClusters+1), ",")
	for _, tc := range []struct {
		name, raw string
		standard  string
		control   string
		clusters  []string
		since     time.Time
		baseline  string
		refused   string
	}{
		{name: "none: the default window", raw: "", since: now.Add(-window)},
		{name: "all four", raw: "standard=NIST+SP+800-53&control=AC-6&clusters=east,west-1&since=3d",
			standard: "NIST SP 800-53", control: "AC-6", clusters: []string{"east", "west-1"}, since: now.Add(-72 * time.Hour)},
		{name: "a date", raw: "since=2026-11-01", since: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
		{name: "an unknown parameter", raw: "cluster=east", refused: `query parameter "cluster" is not known: the parameters are standard, control, clusters, since, baseline`},
		{name: "a baseline", raw: "baseline=Moderate", baseline: "NIST SP 800-53 rev5 MODERATE", since: now.Add(-window)},
		{name: "a profile file as baseline", raw: "baseline=/etc/passwd", refused: `query parameter baseline "/etc/passwd": use low, moderate, high, privacy`},
		{name: "a repeated parameter", raw: "control=AC&control=SC", refused: "query parameter control is given 2 times"},
		{name: "a long standard", raw: "standard=" + strings.Repeat("x", document.MaxTextParam+1), refused: "query parameter standard: 129 bytes, longer than 128"},
		{name: "a control character", raw: "control=AC%0A6", refused: "query parameter control: contains a control character"},
		{name: "not UTF-8", raw: "control=%ff", refused: "query parameter control: not UTF-8"},
		{name: "an empty cluster", raw: "clusters=east,,west", refused: "query parameter clusters: item 2 is empty"},
		{name: "a trailing comma", raw: "clusters=east,", refused: "query parameter clusters: item 2 is empty"},
		{name: "not a cluster name", raw: "clusters=east,West_1", refused: `query parameter clusters: item 2 "West_1" is not a cluster name`},
		{name: "too many clusters", raw: "clusters=" + many, refused: "query parameter clusters: 1001 clusters, more than 1000"},
		{name: "an unreadable since", raw: "since=yesterday-ish", refused: `query parameter since "yesterday-ish": not a duration`},
		{name: "an empty since", raw: "since=", refused: "query parameter since: empty"},
		{name: "a since after now", raw: "since=2030-01-01", refused: `query parameter since "2030-01-01": 2030-01-01T00:00:00Z is after now`},
		{name: "a since beyond what a time holds", raw: "since=99999999d", refused: `query parameter since "99999999d": more than 106751d back`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := url.ParseQuery(tc.raw)
			require.NoError(t, err)
			o, err := document.ParseQuery(q, now, window)
			if tc.refused != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.refused)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.standard, o.Filter.Standard)
			assert.Equal(t, tc.control, o.Filter.Control)
			assert.Equal(t, tc.clusters, o.Filter.Clusters)
			assert.True(t, o.History)
			assert.True(t, tc.since.Equal(o.Since), "since %s, want %s", o.Since, tc.since)
			if tc.baseline != "" {
				require.NotNil(t, o.Baseline)
				assert.Equal(t, tc.baseline, o.Baseline.Name)
			} else {
				assert.Nil(t, o.Baseline)
			}
		})
	}
}

func TestParseQueryWithoutWindow(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	o, err := document.ParseQuery(url.Values{}, now, 0)
	require.NoError(t, err)
	assert.False(t, o.History, "no window and no since: no history")
	o, err = document.ParseQuery(url.Values{"since": {"1h"}}, now, 0)
	require.NoError(t, err)
	assert.True(t, o.History)
	assert.Equal(t, now.Add(-time.Hour), o.Since)
}

func TestParseHistoryQuery(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	window := 30 * 24 * time.Hour
	for _, tc := range []struct {
		name, raw string
		want      document.HistoryOptions
		refused   string
	}{
		{name: "none: the default window", want: document.HistoryOptions{Since: now.Add(-window)}},
		{name: "all four", raw: "since=7d&cluster=east&policy=team-a/policy-roles&control=AC-6",
			want: document.HistoryOptions{Since: now.Add(-7 * 24 * time.Hour), Cluster: "east", Policy: "team-a/policy-roles", Control: "AC-6"}},
		{name: "a report parameter", raw: "clusters=east", refused: `query parameter "clusters" is not known: the parameters are since, cluster, policy, control`},
		{name: "not a cluster name", raw: "cluster=East_1", refused: `query parameter cluster "East_1" is not a cluster name`},
		{name: "a policy without namespace", raw: "policy=roles", refused: `query parameter policy "roles" is not a root policy: give namespace/name`},
		{name: "a control character", raw: "control=AC%0A6", refused: "query parameter control: contains a control character"},
		{name: "a since after now", raw: "since=2030-01-01", refused: "is after now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := url.ParseQuery(tc.raw)
			require.NoError(t, err)
			o, err := document.ParseHistoryQuery(q, now, window)
			if tc.refused != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.refused)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, o)
		})
	}
}
