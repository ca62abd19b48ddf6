package webhook

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
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"flotilla.dev/flotilla/hub/registration/csr"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/sartest"
)

func TestAgentChange(t *testing.T) {
	base := func() *clusterv1.ManagedCluster {
		return &clusterv1.ManagedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{"a": "b"}, Finalizers: []string{"f"}},
			Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true, LeaseDurationSeconds: 60},
		}
	}
	tests := []struct {
		name   string
		mutate func(*clusterv1.ManagedCluster)
		want   string
	}{
		{"no change", func(*clusterv1.ManagedCluster) {}, ""},
		{"client configs", func(c *clusterv1.ManagedCluster) {
			c.Spec.ManagedClusterClientConfigs = []clusterv1.ClientConfig{{URL: "https://c1:6443"}}
		}, ""},
		{"label itself into a placement", func(c *clusterv1.ManagedCluster) { c.Labels["env"] = "prod" }, "metadata.labels"},
		{"annotation", func(c *clusterv1.ManagedCluster) { c.Annotations = map[string]string{"x": "y"} }, "metadata.annotations"},
		{"drop the hub's finalizer", func(c *clusterv1.ManagedCluster) { c.Finalizers = nil }, "metadata.finalizers"},
		{"remove its taints", func(c *clusterv1.ManagedCluster) {
			c.Spec.Taints = []clusterv1.Taint{{Key: "x", Effect: clusterv1.TaintEffectNoSelect}}
		}, "spec (other than managedClusterClientConfigs)"},
		{"stretch its lease", func(c *clusterv1.ManagedCluster) { c.Spec.LeaseDurationSeconds = 3600 }, "spec (other than managedClusterClientConfigs)"},
		{"un-accept itself", func(c *clusterv1.ManagedCluster) { c.Spec.HubAcceptsClient = false }, "spec (other than managedClusterClientConfigs)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := base()
			tt.mutate(cur)
			assert.Equal(t, tt.want, agentChange(base(), cur))
		})
	}
}

// acceptClient answers SubjectAccessReviews for managedclusters/accept: allowed
// for the users in allow. It counts the reviews asked.
func acceptClient(allow map[string]bool, asked *int) client.Client {
	return sartest.Client(func(sar *authorizationv1.SubjectAccessReview) bool {
		*asked++
		ra := sar.Spec.ResourceAttributes
		return allow[sar.Spec.User] && ra.Verb == "update" && ra.Resource == "managedclusters" &&
			ra.Subresource == "accept" && ra.Group == ocm.RegisterGroup
	})
}

// Accepting a cluster and marking the hub's own acceptance in one request
// (what the hub's auto-approve patch does) is one question, asked once; who
// may not accept is refused either change.
func TestAcceptIsAskedOncePerRequest(t *testing.T) {
	s := runtime.NewScheme()
	_ = clusterv1.Install(s)
	before := func() *clusterv1.ManagedCluster {
		return &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	}
	accepted := func(mark string) *clusterv1.ManagedCluster {
		c := before()
		c.Spec.HubAcceptsClient = true
		if mark != "" {
			c.Annotations = map[string]string{csr.AutoAcceptedAnnotation: mark}
		}
		return c
	}
	marked := before()
	marked.Annotations = map[string]string{csr.AutoAcceptedAnnotation: "uid-1"}
	tests := []struct {
		name    string
		user    string
		cur     *clusterv1.ManagedCluster
		allowed bool
		asked   int
		message string
	}{
		{"accept and mark, by the hub", "hub", accepted("uid-1"), true, 1, ""},
		{"accept only, by an admin", "hub", accepted(""), true, 1, ""},
		{"mark only, by the hub", "hub", marked, true, 1, ""},
		{"accept and mark, by a stranger", "mallory", accepted("uid-1"), false, 1, "cannot accept ManagedCluster"},
		{"mark only, by a stranger", "mallory", marked, false, 1, "cannot set annotation " + csr.AutoAcceptedAnnotation},
		{"no acceptance change", "mallory", before(), true, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked := 0
			v := &Validator{Client: acceptClient(map[string]bool{"hub": true}, &asked), Decoder: admission.NewDecoder(s)}
			raw, _ := json.Marshal(tt.cur)
			old, _ := json.Marshal(before())
			resp := v.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Update, UserInfo: authenticationv1.UserInfo{Username: tt.user},
				Object: runtime.RawExtension{Raw: raw}, OldObject: runtime.RawExtension{Raw: old}}})
			assert.Equal(t, tt.allowed, resp.Allowed, resp.Result)
			assert.Equal(t, tt.asked, asked, "SubjectAccessReviews asked")
			if tt.message != "" {
				assert.Contains(t, resp.Result.Message, tt.message)
			}
		})
	}
}
