package history_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// TestTrendWideWindow: a window as wide as a time can hold (since
// 0001-01-01) still gives points in order from From to now; span*i used to
// overflow a Duration.
func TestTrendWideWindow(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, from := range []time.Time{now.Add(-72 * time.Hour), now.AddDate(-20, 0, 0), {}} {
		tr := history.BuildTrend(history.TrendInput{Report: &compliance.Report{GeneratedAt: now}, From: from})
		require.NotNil(t, tr)
		p := tr.Total
		require.Len(t, p, 31)
		assert.True(t, p[0].Time.Equal(from), "first point %s", p[0].Time)
		assert.True(t, p[30].Time.Equal(now), "last point %s", p[30].Time)
		for i := 1; i < len(p); i++ {
			assert.True(t, p[i].Time.After(p[i-1].Time), "point %d (%s) after point %d (%s)", i, p[i].Time, i-1, p[i-1].Time)
		}
	}
}

func TestParseSinceRefuses(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]string{
		"":           "since: empty",
		"99999999d":  `since "99999999d": more than 106751d back`,
		"9999999w":   `since "9999999w": more than 15250w back`,
		"-3d":        `since "-3d": not a duration`,
		"soon":       `since "soon": not a duration`,
		"2026-13-01": `since "2026-13-01": not a duration`,
		"106751d":    "",
		"2026-11-01": "",
		"1h30m":      "",
	} {
		_, err := history.ParseSince(in, now)
		if want == "" {
			assert.NoError(t, err, in)
			continue
		}
		assert.ErrorContains(t, err, want, in)
	}
}
