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
	failed := errors.New("managedclusters \"c1\" is forbidden")
	tests := []struct {
		name          string
		err           error
		period, retry time.Duration
		want          time.Duration
	}{
		{"success waits the period", nil, time.Minute, 5 * time.Second, time.Minute},
		{"failure retries sooner", failed, time.Minute, 5 * time.Second, 5 * time.Second},
		{"failure never waits longer than the period", failed, 2 * time.Second, 5 * time.Second, 2 * time.Second},
		{"no retry interval: the period", failed, time.Minute, 0, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, nextRound(tt.err, tt.period, tt.retry))
		})
	}
}
