package addonagent

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"flotilla.dev/flotilla/internal/ocm"
)

// Keys of the Secret <addon>-hub-kubeconfig (OCM's).
const (
	SecretKeyKubeconfig  = "kubeconfig"
	SecretKeyCert        = "tls.crt"
	SecretKeyKey         = "tls.key"
	SecretKeyClusterName = "cluster-name"
	SecretKeyAgentName   = "agent-name"
)

// HubCredential is an addon agent's hub identity, read from its Secret.
type HubCredential struct {
	Config      *rest.Config
	ClusterName string
	AgentName   string
}

// ReadHubCredential reads Secret <addon>-hub-kubeconfig in namespace on the
// managed cluster. The kubeconfig names tls.crt and tls.key as files next to it
// (for agents that mount the Secret); here the Secret's own keys are used, so
// reading again after a rotation gives the new certificate.
func ReadHubCredential(ctx context.Context, spoke kubernetes.Interface, namespace, addon string) (*HubCredential, error) {
	name := ocm.AddonHubKubeconfigSecret(addon)
	sec, err := spoke.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read hub credential Secret %s/%s (is the addon enabled and registered?): %w", namespace, name, err)
	}
	kc, err := clientcmd.Load(sec.Data[SecretKeyKubeconfig])
	if err != nil {
		return nil, fmt.Errorf("Secret %s/%s: kubeconfig: %w", namespace, name, err)
	}
	kctx := kc.Contexts[kc.CurrentContext]
	if kctx == nil || kc.Clusters[kctx.Cluster] == nil {
		return nil, fmt.Errorf("Secret %s/%s: kubeconfig has no current context", namespace, name)
	}
	cl := kc.Clusters[kctx.Cluster]
	if len(sec.Data[SecretKeyCert]) == 0 || len(sec.Data[SecretKeyKey]) == 0 {
		return nil, fmt.Errorf("Secret %s/%s holds no certificate yet", namespace, name)
	}
	return &HubCredential{
		Config: &rest.Config{Host: cl.Server, TLSClientConfig: rest.TLSClientConfig{
			CAData: cl.CertificateAuthorityData, CertData: sec.Data[SecretKeyCert], KeyData: sec.Data[SecretKeyKey]}},
		ClusterName: string(sec.Data[SecretKeyClusterName]),
		AgentName:   string(sec.Data[SecretKeyAgentName]),
	}, nil
}

// RenewLease creates or renews the Lease named after addon in namespace on the
// managed cluster: the klusterlet reports the addon Available while it is
// fresh (renewed within 5 x duration).
func RenewLease(ctx context.Context, spoke kubernetes.Interface, namespace, addon string, duration time.Duration) error {
	leases := spoke.CoordinationV1().Leases(namespace)
	now := metav1.NowMicro()
	secs := int32(duration / time.Second)
	if secs < 1 {
		secs = 1
	}
	l, err := leases.Get(ctx, addon, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: addon, Namespace: namespace},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &addon, LeaseDurationSeconds: &secs, RenewTime: &now},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return fmt.Errorf("renew Lease %s/%s: %w", namespace, addon, err)
	}
	l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = &now, &secs
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}
