package registration

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestNextRound: a failed lease renewal or status report is retried after the
// retry interval when that is sooner than its period; a good one waits its period.
func TestNextRound(t *testing.T) {
	tests := []struct {
		name          string
		fails         int
		period, retry time.Duration
		want          time.Duration
	}{
		{"success waits the period", 0, time.Minute, 5 * time.Second, time.Minute},
		{"a failure retries sooner", 1, time.Minute, 5 * time.Second, 5 * time.Second},
		{"a second failure waits twice as long", 2, time.Minute, 5 * time.Second, 10 * time.Second},
		{"a fourth: 40s", 4, time.Minute, 5 * time.Second, 40 * time.Second},
		{"many failures: the period", 40, time.Minute, 5 * time.Second, time.Minute},
		{"failure never waits longer than the period", 1, 2 * time.Second, 5 * time.Second, 2 * time.Second},
		{"no retry interval: the period", 3, time.Minute, 0, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, nextRound(tt.fails, tt.period, tt.retry))
		})
	}
	assert.Equal(t, 3, failures(2, errors.New("forbidden")))
	assert.Equal(t, 0, failures(2, nil))
}
