package aggregated

import (
	"context"
	"errors"
	"fmt"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
)

// The ConfigMap where the apiserver publishes its front-proxy settings.
const (
	AuthenticationConfigMapNamespace = "kube-system"
	AuthenticationConfigMapName      = "extension-apiserver-authentication"
)

// requestHeaders follows the front-proxy CA and header names the hub
// apiserver publishes (as k8s.io/apiserver's DynamicRequestHeaderController,
// which is internal to its options package).
type requestHeaders struct {
	ca      *dynamiccertificates.ConfigMapCAController
	headers *headerrequest.RequestHeaderAuthRequestController
}

func newRequestHeaders(kube kubernetes.Interface) (*requestHeaders, error) {
	ca, err := dynamiccertificates.NewDynamicCAFromConfigMapController("front-proxy-ca", AuthenticationConfigMapNamespace, AuthenticationConfigMapName, "requestheader-client-ca-file", kube)
	if err != nil {
		return nil, err
	}
	headers := headerrequest.NewRequestHeaderAuthRequestController(AuthenticationConfigMapName, AuthenticationConfigMapNamespace, kube,
		"requestheader-username-headers", "requestheader-uid-headers", "requestheader-group-headers", "requestheader-extra-headers-prefix", "requestheader-allowed-names")
	return &requestHeaders{ca: ca, headers: headers}, nil
}

func (r *requestHeaders) config() *authenticatorfactory.RequestHeaderConfig {
	return &authenticatorfactory.RequestHeaderConfig{
		UsernameHeaders:     headerrequest.StringSliceProviderFunc(r.headers.UsernameHeaders),
		UIDHeaders:          headerrequest.StringSliceProviderFunc(r.headers.UIDHeaders),
		GroupHeaders:        headerrequest.StringSliceProviderFunc(r.headers.GroupHeaders),
		ExtraHeaderPrefixes: headerrequest.StringSliceProviderFunc(r.headers.ExtraHeaderPrefixes),
		AllowedClientNames:  headerrequest.StringSliceProviderFunc(r.headers.AllowedClientNames),
		CAContentProvider:   r.ca,
	}
}

// runOnce reads the ConfigMap; it fails when the apiserver publishes no
// front-proxy CA (it runs without --requestheader-client-ca-file).
func (r *requestHeaders) runOnce(ctx context.Context) error {
	if err := utilerrors.NewAggregate([]error{r.ca.RunOnce(ctx), r.headers.RunOnce(ctx)}); err != nil {
		return fmt.Errorf("aggregated API: read the front-proxy settings in %s/%s: %w", AuthenticationConfigMapNamespace, AuthenticationConfigMapName, err)
	}
	if len(r.ca.CurrentCABundleContent()) == 0 {
		return errors.New("aggregated API: the hub apiserver publishes no front-proxy CA (requestheader-client-ca-file in kube-system/extension-apiserver-authentication): start it with --requestheader-client-ca-file and the other --requestheader-* flags")
	}
	return nil
}

// run follows changes until ctx ends.
func (r *requestHeaders) run(ctx context.Context) {
	go r.ca.Run(ctx, 1)
	go r.headers.Run(ctx, 1)
	<-ctx.Done()
}
