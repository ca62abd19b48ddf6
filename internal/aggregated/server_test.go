package aggregated

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/rest"
)

var (
	restConfig = rest.Config{Host: "https://127.0.0.1:1"}
	svc        = types.NamespacedName{Namespace: "ns", Name: "api"}
)

// fakeAuthn stands for the request-header authenticator (its checks are
// k8s.io/apiserver's; the integration test in policy/compliance/apigroup runs
// them behind a real apiserver): a request with X-Test-User is that user.
type fakeAuthn struct{}

func (fakeAuthn) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	name := req.Header.Get("X-Test-User")
	if name == "" {
		return nil, false, errors.New("no client certificate")
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: name}}, true, nil
}

func testServer() *Server {
	echo := func(w http.ResponseWriter, req *http.Request, u user.Info) {
		_, _ = w.Write([]byte(u.GetName() + " " + req.URL.Path))
	}
	return &Server{authn: fakeAuthn{}, o: Options{Groups: []Group{
		{Name: "compliance.flotilla.dev", Version: "v1alpha1", Resources: []Resource{{Name: "reports", SingularName: "report", Kind: "ComplianceReport", Handler: echo}}},
		{Name: "search.flotilla.dev", Version: "v1alpha1", Resources: []Resource{{Name: "results", Kind: "SearchResult", Handler: echo},
			{Name: "syncs", Kind: "Sync", Namespaced: true, Create: true, MaxBodyBytes: 10, Handler: func(w http.ResponseWriter, req *http.Request, u user.Info) {
				body, err := io.ReadAll(req.Body)
				if err != nil {
					Error(w, http.StatusRequestEntityTooLarge, err)
					return
				}
				_, _ = w.Write([]byte(u.GetName() + " " + req.Method + " " + Namespace(req) + " " + string(body)))
			}}}},
	}}}
}

func TestServeHTTP(t *testing.T) {
	s := testServer()
	get := func(path, who, method string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader("0123456789abc"[:len(method)]))
		if who != "" {
			req.Header.Set("X-Test-User", who)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		return w
	}
	t.Run("discovery", func(t *testing.T) {
		var groups metav1.APIGroupList
		w := get("/apis", "alice", http.MethodGet)
		require.Equal(t, http.StatusOK, w.Code)
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &groups))
		require.Len(t, groups.Groups, 2)
		assert.Equal(t, "compliance.flotilla.dev/v1alpha1", groups.Groups[0].PreferredVersion.GroupVersion)

		var group metav1.APIGroup
		require.NoError(t, json.Unmarshal(get("/apis/search.flotilla.dev", "alice", http.MethodGet).Body.Bytes(), &group))
		assert.Equal(t, "APIGroup", group.Kind)
		assert.Equal(t, "search.flotilla.dev", group.Name)

		var list metav1.APIResourceList
		require.NoError(t, json.Unmarshal(get("/apis/compliance.flotilla.dev/v1alpha1", "alice", http.MethodGet).Body.Bytes(), &list))
		assert.Equal(t, "compliance.flotilla.dev/v1alpha1", list.GroupVersion)
		assert.Equal(t, []metav1.APIResource{{Name: "reports", SingularName: "report", Kind: "ComplianceReport", Verbs: metav1.Verbs{"get", "list"}}}, list.APIResources)
	})
	t.Run("a resource's handler gets the user", func(t *testing.T) {
		w := get("/apis/compliance.flotilla.dev/v1alpha1/reports", "alice", http.MethodGet)
		assert.Equal(t, "alice /apis/compliance.flotilla.dev/v1alpha1/reports", w.Body.String())
		w = get("/apis/search.flotilla.dev/v1alpha1/results/x", "bob", http.MethodGet)
		assert.Equal(t, "bob /apis/search.flotilla.dev/v1alpha1/results/x", w.Body.String())
	})
	t.Run("a namespaced resource takes POST with its body, bounded", func(t *testing.T) {
		w := get("/apis/search.flotilla.dev/v1alpha1/namespaces/c1/syncs", "agent", http.MethodPost)
		assert.Equal(t, "agent POST c1 0123", w.Body.String())
		req := httptest.NewRequest(http.MethodPost, "/apis/search.flotilla.dev/v1alpha1/namespaces/c1/syncs", strings.NewReader("01234567890"))
		req.Header.Set("X-Test-User", "agent")
		w = httptest.NewRecorder()
		s.ServeHTTP(w, req)
		assert.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
		var list metav1.APIResourceList
		require.NoError(t, json.Unmarshal(get("/apis/search.flotilla.dev/v1alpha1", "alice", http.MethodGet).Body.Bytes(), &list))
		assert.Equal(t, metav1.APIResource{Name: "syncs", SingularName: "syncs", Kind: "Sync", Namespaced: true, Verbs: metav1.Verbs{"create", "get", "list"}}, list.APIResources[1])
	})
	for _, tc := range []struct {
		name, path, who, method string
		code                    int
		reason                  metav1.StatusReason
	}{
		{"no front-proxy identity", "/apis/compliance.flotilla.dev/v1alpha1/reports", "", http.MethodGet, http.StatusUnauthorized, metav1.StatusReasonUnauthorized},
		{"no front-proxy identity, discovery", "/apis", "", http.MethodGet, http.StatusUnauthorized, metav1.StatusReasonUnauthorized},
		{"an unknown resource", "/apis/compliance.flotilla.dev/v1alpha1/other", "alice", http.MethodGet, http.StatusNotFound, metav1.StatusReasonNotFound},
		{"an unknown group", "/apis/other.flotilla.dev/v1", "alice", http.MethodGet, http.StatusNotFound, metav1.StatusReasonNotFound},
		{"a write", "/apis/compliance.flotilla.dev/v1alpha1/reports", "alice", http.MethodPost, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed},
		{"a delete of a resource that takes POST", "/apis/search.flotilla.dev/v1alpha1/namespaces/c1/syncs", "alice", http.MethodDelete, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed},
		{"a namespaced resource without its namespace", "/apis/search.flotilla.dev/v1alpha1/syncs", "alice", http.MethodPost, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed},
		{"a cluster-scoped resource under a namespace", "/apis/search.flotilla.dev/v1alpha1/namespaces/c1/results", "alice", http.MethodGet, http.StatusNotFound, metav1.StatusReasonNotFound},
		{"a write to discovery", "/apis/search.flotilla.dev/v1alpha1", "alice", http.MethodPost, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := get(tc.path, tc.who, tc.method)
			assert.Equal(t, tc.code, w.Code)
			var st metav1.Status
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &st), w.Body.String())
			assert.Equal(t, tc.reason, st.Reason)
			assert.Equal(t, int32(tc.code), st.Code)
		})
	}
}

func TestNewRefusesLoopbackEndpoint(t *testing.T) {
	g := Group{Name: "g.flotilla.dev", Version: "v1", Resources: []Resource{{Name: "rs", Kind: "R", Handler: func(http.ResponseWriter, *http.Request, user.Info) {}}}}
	_, err := New(Options{Config: nil, Groups: []Group{g}})
	require.ErrorContains(t, err, "required")
	o := Options{Config: &restConfig, Groups: []Group{g}, BindAddress: "127.0.0.1:0", CertFile: "c", KeyFile: "k", CABundle: []byte("x"),
		Service: svc, Endpoint: "127.0.0.1:8443"}
	_, err = New(o)
	require.ErrorContains(t, err, "not loopback")
}
