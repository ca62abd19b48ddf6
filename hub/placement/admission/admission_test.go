package admission

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func request(op admissionv1.Operation, obj, old string) admission.Request {
	r := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op, Namespace: "apps",
		Object: runtime.RawExtension{Raw: []byte(obj)}}}
	if old != "" {
		r.OldObject = runtime.RawExtension{Raw: []byte(old)}
	}
	return r
}

func TestHandle(t *testing.T) {
	v := &Validator{}
	const bad = `{"metadata":{"name":"p"},"spec":{"prioritizerPolicy":{"configurations":[{"scoreCoordinate":{"type":"BuiltIn","builtIn":"Fastest"},"weight":1}]}}}`
	const good = `{"metadata":{"name":"p"},"spec":{"numberOfClusters":2}}`
	for _, tc := range []struct {
		name    string
		req     admission.Request
		allowed bool
		message string
	}{
		{"good create", request(admissionv1.Create, good, ""), true, ""},
		{"bad create is 422 naming the field", request(admissionv1.Create, bad, ""), false, `Placement apps/p is invalid: spec.prioritizerPolicy.configurations[0].scoreCoordinate.builtIn: unknown prioritizer "Fastest"`},
		{"bad spec change", request(admissionv1.Update, bad, good), false, "unknown prioritizer"},
		{"a stored bad Placement's labels may change", request(admissionv1.Update,
			`{"metadata":{"name":"p","labels":{"a":"b"}},"spec":{"prioritizerPolicy":{"configurations":[{"scoreCoordinate":{"type":"BuiltIn","builtIn":"Fastest"},"weight":1}]}}}`, bad), true, ""},
		{"being deleted", request(admissionv1.Update, `{"metadata":{"name":"p","deletionTimestamp":"2026-01-01T00:00:00Z"},"spec":{"numberOfClusters":-1}}`, bad), true, ""},
		{"undecodable: left to the admission policy", request(admissionv1.Create, `{"metadata":{"name":"p"},"spec":{"numberOfClusters":2147483648}}`, ""), true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := v.Handle(context.Background(), tc.req)
			assert.Equal(t, tc.allowed, resp.Allowed, resp.Result)
			if !tc.allowed {
				assert.EqualValues(t, 422, resp.Result.Code)
				assert.Contains(t, resp.Result.Message, tc.message)
			}
		})
	}
}
