package registration

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// TestWorksGivesUpOnlyOnRejection: the stored credential is given up when
// the hub does not know it (401) or names someone else, never on a 403 (the
// hub knows it; a restarting hub's authorizer refuses for a few seconds) or
// when the hub is out of reach.
func TestWorksGivesUpOnlyOnRejection(t *testing.T) {
	a := &Agent{opts: Options{ClusterName: "c1"}, agentName: "a1", log: logr.Discard()}
	me := a.subject().CommonName
	status := func(code int, reason metav1.StatusReason) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status: metav1.StatusFailure, Code: int32(code), Reason: reason})
		}
	}
	review := func(user string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(authenticationv1.SelfSubjectReview{
				TypeMeta: metav1.TypeMeta{Kind: "SelfSubjectReview", APIVersion: "authentication.k8s.io/v1"},
				Status:   authenticationv1.SelfSubjectReviewStatus{UserInfo: authenticationv1.UserInfo{Username: user}}})
		}
	}
	tests := []struct {
		name    string
		handler http.HandlerFunc
		works   bool
		wantErr bool
	}{
		{"the hub names this agent", review(me), true, false},
		{"the hub names someone else", review("system:open-cluster-management:c2:a1"), false, false},
		{"unknown to the hub (401): given up", status(http.StatusUnauthorized, metav1.StatusReasonUnauthorized), false, false},
		{"403 (authenticated, not authorised to ask): kept", status(http.StatusForbidden, metav1.StatusReasonForbidden), true, false},
		{"hub failing: kept, an error to retry", status(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			works, err := a.works(context.Background(), &rest.Config{Host: srv.URL})
			assert.Equal(t, tt.works, works)
			assert.Equal(t, tt.wantErr, err != nil, "error: %v", err)
		})
	}
}
