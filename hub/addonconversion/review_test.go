package addonconversion

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
)

func raw(t *testing.T, v any) runtime.RawExtension {
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return runtime.RawExtension{Raw: data}
}

// serve posts body to a Handler and returns the status code and the decoded review.
func serve(t *testing.T, method string, body []byte) (int, *apiextensionsv1.ConversionReview) {
	rec := httptest.NewRecorder()
	Handler{}.ServeHTTP(rec, httptest.NewRequest(method, Path, bytes.NewReader(body)))
	review := &apiextensionsv1.ConversionReview{}
	if rec.Code == http.StatusOK {
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), review))
	}
	return rec.Code, review
}

func reviewOf(t *testing.T, to string, objs ...runtime.RawExtension) []byte {
	data, err := json.Marshal(&apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request:  &apiextensionsv1.ConversionRequest{UID: "req-1", DesiredAPIVersion: to, Objects: objs},
	})
	require.NoError(t, err)
	return data
}

func TestHandlerConverts(t *testing.T) {
	code, review := serve(t, http.MethodPost, reviewOf(t, V1beta1, raw(t, mca()), raw(t, cma()), raw(t, ManagedClusterAddOnToV1beta1(mca()))))
	require.Equal(t, http.StatusOK, code)
	resp := review.Response
	require.NotNil(t, resp)
	assert.Equal(t, "req-1", string(resp.UID))
	assert.Equal(t, metav1.StatusSuccess, resp.Result.Status)
	require.Len(t, resp.ConvertedObjects, 3)
	m := &addonv1beta1.ManagedClusterAddOn{}
	require.NoError(t, json.Unmarshal(resp.ConvertedObjects[0].Raw, m))
	assert.Equal(t, ManagedClusterAddOnToV1beta1(mca()), m)
	c := &addonv1beta1.ClusterManagementAddOn{}
	require.NoError(t, json.Unmarshal(resp.ConvertedObjects[1].Raw, c))
	assert.Equal(t, ClusterManagementAddOnToV1beta1(cma()), c)
	same := &addonv1beta1.ManagedClusterAddOn{}
	require.NoError(t, json.Unmarshal(resp.ConvertedObjects[2].Raw, same))
	assert.Equal(t, m, same, "an object already at the desired version passes through")

	code, review = serve(t, http.MethodPost, reviewOf(t, V1alpha1, resp.ConvertedObjects...))
	require.Equal(t, http.StatusOK, code)
	back := &addonv1alpha1.ManagedClusterAddOn{}
	require.NoError(t, json.Unmarshal(review.Response.ConvertedObjects[0].Raw, back))
	assert.Equal(t, mca(), back)
}

// TestHandlerRefusesBadInput: what cannot be converted gets a message naming the
// object and the problem; nothing panics, nothing is half converted.
func TestHandlerRefusesBadInput(t *testing.T) {
	good := raw(t, mca())
	tests := []struct {
		name string
		to   string
		objs []runtime.RawExtension
		want string
	}{
		{"a JSON string", V1beta1, []runtime.RawExtension{good, {Raw: []byte(`"ManagedClusterAddOn"`)}}, "object 2 of 2: not a JSON object"},
		{"a JSON list", V1beta1, []runtime.RawExtension{{Raw: []byte(`[1,2]`)}}, "not a JSON object"},
		{"other kind", V1beta1, []runtime.RawExtension{{Raw: []byte(`{"apiVersion":"addon.open-cluster-management.io/v1alpha1","kind":"AddOnTemplate","metadata":{"name":"t"}}`)}},
			`AddOnTemplate t: kind "AddOnTemplate" is not converted here`},
		{"other version", V1beta1, []runtime.RawExtension{{Raw: []byte(`{"apiVersion":"addon.open-cluster-management.io/v2","kind":"ManagedClusterAddOn","metadata":{"name":"a","namespace":"c1"}}`)}},
			`ManagedClusterAddOn c1/a: apiVersion "addon.open-cluster-management.io/v2" is not`},
		{"wrong field type", V1beta1, []runtime.RawExtension{{Raw: []byte(`{"apiVersion":"addon.open-cluster-management.io/v1alpha1","kind":"ManagedClusterAddOn","metadata":{"name":"a","namespace":"c1"},"spec":{"configs":"cfg"}}`)}},
			"ManagedClusterAddOn c1/a (addon.open-cluster-management.io/v1alpha1): json: cannot unmarshal string"},
		{"wrong registration type", V1alpha1, []runtime.RawExtension{{Raw: []byte(`{"apiVersion":"addon.open-cluster-management.io/v1beta1","kind":"ManagedClusterAddOn","metadata":{"name":"a","namespace":"c1"},"status":{"registrations":[{"type":7}]}}`)}},
			"ManagedClusterAddOn c1/a (addon.open-cluster-management.io/v1beta1): json: cannot unmarshal number"},
		{"wrong cluster-scoped field", V1alpha1, []runtime.RawExtension{{Raw: []byte(`{"apiVersion":"addon.open-cluster-management.io/v1beta1","kind":"ClusterManagementAddOn","metadata":{"name":"x"},"spec":{"defaultConfigs":{}}}`)}},
			"ClusterManagementAddOn x (addon.open-cluster-management.io/v1beta1)"},
		{"unknown desired version", "addon.open-cluster-management.io/v2", []runtime.RawExtension{good}, `cannot convert to "addon.open-cluster-management.io/v2"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, review := serve(t, http.MethodPost, reviewOf(t, tt.to, tt.objs...))
			require.Equal(t, http.StatusOK, code, "a conversion failure is an answer, not a transport error")
			resp := review.Response
			require.NotNil(t, resp)
			assert.Equal(t, "req-1", string(resp.UID))
			assert.Equal(t, metav1.StatusFailure, resp.Result.Status)
			assert.Contains(t, resp.Result.Message, tt.want)
			assert.Empty(t, resp.ConvertedObjects, "no partial answer")
		})
	}

	t.Run("transport", func(t *testing.T) {
		code, _ := serve(t, http.MethodGet, nil)
		assert.Equal(t, http.StatusMethodNotAllowed, code)
		code, _ = serve(t, http.MethodPost, []byte("not json"))
		assert.Equal(t, http.StatusBadRequest, code)
		code, _ = serve(t, http.MethodPost, []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`))
		assert.Equal(t, http.StatusBadRequest, code, "a review without request")
	})
}

// errReader fails the test if the handler reads a body it should not.
type errReader struct{ t *testing.T }

func (e errReader) Read([]byte) (int, error) {
	e.t.Error("the body of a request that got no turn was read")
	return 0, errors.New("must not be read")
}

// TestHandlerBoundsConcurrentReviews: an unauthenticated client cannot make
// the hub hold more than a bounded number of (up to MaxReviewBytes) reviews
// in memory at once: while every turn is taken, a request's body is not read,
// and it is answered 503 once its context ends.
func TestHandlerBoundsConcurrentReviews(t *testing.T) {
	for i := 0; i < cap(inflight); i++ {
		inflight <- struct{}{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := httptest.NewRecorder()
	Handler{}.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, errReader{t}).WithContext(ctx))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Contains(t, rec.Body.String(), "busy")

	for i := 0; i < cap(inflight); i++ {
		<-inflight
	}
	code, review := serve(t, http.MethodPost, reviewOf(t, V1beta1, raw(t, mca())))
	require.Equal(t, http.StatusOK, code, "turns are given back")
	assert.Equal(t, metav1.StatusSuccess, review.Response.Result.Status)
}
