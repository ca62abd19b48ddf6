package bindings

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"flotilla.dev/flotilla/internal/sartest"
)

// sarClient answers SubjectAccessReviews: allowed when the user is in allow.
func sarClient(allow map[string]bool) client.Client {
	return sartest.Client(func(sar *authorizationv1.SubjectAccessReview) bool {
		ra := sar.Spec.ResourceAttributes
		return allow[sar.Spec.User] && ra.Verb == "create" && ra.Resource == "managedclustersets" &&
			ra.Subresource == "bind" && ra.Group == clusterv1beta2.GroupName
	})
}

func request(op admissionv1.Operation, user string, b, old *clusterv1beta2.ManagedClusterSetBinding) admission.Request {
	raw, _ := json.Marshal(b)
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op, Namespace: b.Namespace,
		UserInfo: authenticationv1.UserInfo{Username: user}, Object: runtime.RawExtension{Raw: raw}}}
	if old != nil {
		req.OldObject.Raw, _ = json.Marshal(old)
	}
	return req
}

func binding(name, set string) *clusterv1beta2.ManagedClusterSetBinding {
	return &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps"},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set}}
}

func TestValidator(t *testing.T) {
	v := &Validator{Client: sarClient(map[string]bool{"admin": true})}
	tests := []struct {
		name    string
		req     admission.Request
		allowed bool
		message string
	}{
		{"allowed user", request(admissionv1.Create, "admin", binding("prod", "prod"), nil), true, ""},
		{"user without bind", request(admissionv1.Create, "alice", binding("prod", "prod"), nil), false,
			`user "alice" may not bind ManagedClusterSet "prod" to namespace "apps"`},
		{"name must match set", request(admissionv1.Create, "admin", binding("other", "prod"), nil), false, "must be named after its set"},
		{"empty set", request(admissionv1.Create, "admin", binding("x", ""), nil), false, "spec.clusterSet is required"},
		{"update without set change needs nothing", request(admissionv1.Update, "alice", binding("prod", "prod"), binding("prod", "prod")), true, ""},
		{"update that changes the set is checked", request(admissionv1.Update, "alice", binding("dev", "dev"), binding("dev", "prod")), false, "may not bind"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := v.Handle(context.Background(), tc.req)
			assert.Equal(t, tc.allowed, resp.Allowed)
			if tc.message != "" {
				assert.Contains(t, resp.Result.Message, tc.message)
			}
		})
	}
}
