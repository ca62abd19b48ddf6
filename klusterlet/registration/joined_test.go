package registration

import (
	"crypto/x509"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// TestRejects: only a 401 or a TLS failure makes a joined agent ask the
// hub whether its credential still works; a loaded, failing or denying hub
// does not.
func TestRejects(t *testing.T) {
	gr := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"401", fmt.Errorf("renew lease: %w", apierrors.NewUnauthorized("Unauthorized")), true},
		{"unknown authority (the hub CA changed)", fmt.Errorf("Get: %w", x509.UnknownAuthorityError{}), true},
		{"a TLS alert", errors.New(`Put "https://hub": remote error: tls: bad certificate`), true},
		{"429 from a loaded hub", fmt.Errorf("renew lease: %w", apierrors.NewTooManyRequests("slow down", 1)), false},
		{"403 (denied: RBAC gone)", apierrors.NewForbidden(gr, "managed-cluster-lease", errors.New("no")), false},
		{"503", apierrors.NewServiceUnavailable("down"), false},
		{"timeout", apierrors.NewTimeoutError("slow", 1), false},
		{"not found", apierrors.NewNotFound(gr, "managed-cluster-lease"), false},
		{"connection refused", errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, rejects(tt.err)) })
	}
}
