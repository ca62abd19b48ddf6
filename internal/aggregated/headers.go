package aggregated

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
)

// The ConfigMap where the apiserver publishes its front-proxy settings.
const (
	AuthenticationConfigMapNamespace = "kube-system"
	AuthenticationConfigMapName      = "extension-apiserver-authentication"
	caKey                            = "requestheader-client-ca-file"
)

// requestHeaders follows the front-proxy CA and header names the hub
// apiserver publishes (as k8s.io/apiserver's DynamicRequestHeaderController,
// which is internal to its options package).
type requestHeaders struct {
	ca      *dynamiccertificates.ConfigMapCAController
	headers *headerrequest.RequestHeaderAuthRequestController
}

func newRequestHeaders(kube kubernetes.Interface) (*requestHeaders, error) {
	ca, err := dynamiccertificates.NewDynamicCAFromConfigMapController("front-proxy-ca", AuthenticationConfigMapNamespace, AuthenticationConfigMapName, caKey, kube)
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

// start reads the ConfigMap, then follows it until ctx ends. It fails when
// the apiserver publishes no front-proxy CA (it runs without
// --requestheader-client-ca-file).
func (r *requestHeaders) start(ctx context.Context, kube kubernetes.Interface) error {
	cm, err := kube.CoreV1().ConfigMaps(AuthenticationConfigMapNamespace).Get(ctx, AuthenticationConfigMapName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("aggregated API: read the front-proxy settings in %s/%s: %w", AuthenticationConfigMapNamespace, AuthenticationConfigMapName, err)
	}
	if cm.Data[caKey] == "" {
		return errors.New("aggregated API: the hub apiserver publishes no front-proxy CA (requestheader-client-ca-file in kube-system/extension-apiserver-authentication): start it with --requestheader-client-ca-file and the other --requestheader-* flags")
	}
	if err := r.headers.RunOnce(ctx); err != nil {
		return fmt.Errorf("aggregated API: read the front-proxy settings: %w", err)
	}
	go r.ca.Run(ctx, 1)
	go r.headers.Run(ctx, 1)
	// The CA controller reads through its informer: wait for its first read.
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return len(r.ca.CurrentCABundleContent()) > 0, nil
	})
}
