package addonconversion

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"

	"flotilla.dev/flotilla/internal/httplimit"
)

// Path is where the hub's webhook server answers the addon CRDs' ConversionReviews.
const Path = "/convert-addon"

// MaxReviewBytes bounds a ConversionReview body: a list of many addons comes in one
// review, so this is far above one object's limit. (The hub's webhook server
// refuses a larger declared Content-Length before reading: internal/httplimit.)
const MaxReviewBytes = 256 << 20

// inflight bounds how many reviews are read and converted at once. The
// webhook port takes requests from anyone who reaches it (the apiserver sends
// no client certificate), and each review may hold MaxReviewBytes several
// times over while it is decoded: without a bound, a few concurrent large
// bodies from any network client would exhaust the hub's memory. A request
// waits for a turn until its own context ends (the apiserver's timeout).
var inflight = make(chan struct{}, 2)

// converter converts one kind's JSON from one version to the other.
type converter func(data []byte, to string) (any, error)

// converters is the conversion of each kind this package serves.
var converters = map[string]converter{
	"ManagedClusterAddOn": func(data []byte, to string) (any, error) {
		if to == V1beta1 {
			in := &addonv1alpha1.ManagedClusterAddOn{}
			if err := json.Unmarshal(data, in); err != nil {
				return nil, err
			}
			return ManagedClusterAddOnToV1beta1(in), nil
		}
		in := &addonv1beta1.ManagedClusterAddOn{}
		if err := json.Unmarshal(data, in); err != nil {
			return nil, err
		}
		return ManagedClusterAddOnToV1alpha1(in), nil
	},
	"ClusterManagementAddOn": func(data []byte, to string) (any, error) {
		if to == V1beta1 {
			in := &addonv1alpha1.ClusterManagementAddOn{}
			if err := json.Unmarshal(data, in); err != nil {
				return nil, err
			}
			return ClusterManagementAddOnToV1beta1(in), nil
		}
		in := &addonv1beta1.ClusterManagementAddOn{}
		if err := json.Unmarshal(data, in); err != nil {
			return nil, err
		}
		return ClusterManagementAddOnToV1alpha1(in), nil
	},
}

// Handler answers apiextensions.k8s.io/v1 ConversionReviews for the addon CRDs.
// A review it cannot read gets HTTP 400; an object it cannot convert fails the
// whole review with a message naming the object and what is wrong with it.
type Handler struct{}

var _ http.Handler = Handler{}

func (Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "conversion webhook: only POST", http.StatusMethodNotAllowed)
		return
	}
	select {
	case inflight <- struct{}{}:
		defer func() { <-inflight }()
	case <-r.Context().Done():
		http.Error(w, "conversion webhook: busy with other reviews, try again", http.StatusServiceUnavailable)
		return
	}
	if r.ContentLength > MaxReviewBytes {
		http.Error(w, "conversion webhook: "+httplimit.TooLarge(r.URL.Path, r.ContentLength, MaxReviewBytes), http.StatusRequestEntityTooLarge)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxReviewBytes))
	if httplimit.IsTooLarge(err) {
		http.Error(w, "conversion webhook: "+httplimit.TooLarge(r.URL.Path, -1, MaxReviewBytes), http.StatusRequestEntityTooLarge)
		return
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("conversion webhook: read body: %v", err), http.StatusBadRequest)
		return
	}
	review := &apiextensionsv1.ConversionReview{}
	if err := json.Unmarshal(body, review); err != nil {
		http.Error(w, fmt.Sprintf("conversion webhook: body is not a ConversionReview: %v", err), http.StatusBadRequest)
		return
	}
	if review.Request == nil {
		http.Error(w, "conversion webhook: ConversionReview has no request", http.StatusBadRequest)
		return
	}
	review.Response = Review(review.Request)
	review.Request = nil
	review.APIVersion, review.Kind = apiextensionsv1.SchemeGroupVersion.String(), "ConversionReview"
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(review); err != nil {
		ctrl.Log.WithName("addonconversion").Error(err, "write ConversionReview response")
	}
}

// Review converts every object of req to req.DesiredAPIVersion. It fails the
// whole review (no partial answer) on the first object it cannot convert.
func Review(req *apiextensionsv1.ConversionRequest) *apiextensionsv1.ConversionResponse {
	resp := &apiextensionsv1.ConversionResponse{UID: req.UID}
	fail := func(format string, args ...any) *apiextensionsv1.ConversionResponse {
		resp.ConvertedObjects = nil
		resp.Result = metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonBadRequest, Message: fmt.Sprintf(format, args...)}
		return resp
	}
	to := req.DesiredAPIVersion
	if to != V1alpha1 && to != V1beta1 {
		return fail("cannot convert to %q: this webhook serves %s and %s", to, V1alpha1, V1beta1)
	}
	for i, raw := range req.Objects {
		out, err := convertOne(raw.Raw, to)
		if err != nil {
			return fail("object %d of %d: %v", i+1, len(req.Objects), err)
		}
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: out})
	}
	resp.Result = metav1.Status{Status: metav1.StatusSuccess}
	return resp
}

// convertOne converts one object's JSON to version to.
func convertOne(data []byte, to string) ([]byte, error) {
	var head struct {
		metav1.TypeMeta
		Metadata struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	what := head.Kind
	if what == "" {
		what = "object"
	}
	if head.Metadata.Name != "" {
		what += " " + head.Metadata.Name
		if head.Metadata.Namespace != "" {
			what = fmt.Sprintf("%s %s/%s", head.Kind, head.Metadata.Namespace, head.Metadata.Name)
		}
	}
	convert, ok := converters[head.Kind]
	if !ok {
		return nil, fmt.Errorf("%s: kind %q is not converted here (only ManagedClusterAddOn and ClusterManagementAddOn)", what, head.Kind)
	}
	if head.APIVersion != V1alpha1 && head.APIVersion != V1beta1 {
		return nil, fmt.Errorf("%s: apiVersion %q is not %s or %s", what, head.APIVersion, V1alpha1, V1beta1)
	}
	if head.APIVersion == to {
		return data, nil
	}
	out, err := convert(data, to)
	if err != nil {
		return nil, fmt.Errorf("%s (%s): %v", what, head.APIVersion, err)
	}
	return json.Marshal(out)
}
