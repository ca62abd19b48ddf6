// Package sartest gives pure unit tests a client whose SubjectAccessReviews
// are answered by a function, for admission webhooks and controllers that ask
// the apiserver who may do what. Only creates are intercepted; the answer
// function sees each review and may count it.
package sartest

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Client answers each SubjectAccessReview it is asked to create with
// allowed(review).
func Client(allowed func(*authorizationv1.SubjectAccessReview) bool) client.Client {
	s := runtime.NewScheme()
	_ = authorizationv1.AddToScheme(s)
	return fake.NewClientBuilder().WithScheme(s).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			sar := obj.(*authorizationv1.SubjectAccessReview)
			sar.Status.Allowed = allowed(sar)
			return nil
		},
	}).Build()
}
