// Package deploy installs the hub into the hub cluster as Pods (`flotilla init
// --deploy`): the serving certificate of its webhooks in Secret
// flotilla-hub-serving (a CA of its own, a certificate for the Service's DNS
// name), then manifests/hub: namespace, ServiceAccount, RBAC, the two-replica
// Deployment with leader election, and the Service the apiserver calls the
// webhooks through. It waits until a replica has registered the webhooks.
package deploy

import (
	"context"
	"fmt"
	"io"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/hub/registration/webhook"
	"flotilla.dev/flotilla/internal/pki"
	"flotilla.dev/flotilla/manifests"
)

const (
	// Namespace, Name (Deployment and Service) and ServingSecret of the hub.
	Namespace     = "open-cluster-management-hub"
	Name          = "flotilla-hub"
	ServingSecret = "flotilla-hub-serving"
)

// Options configure Apply. Every field documents its default.
type Options struct {
	// Config reaches the hub apiserver as an admin. Required.
	Config *rest.Config
	// Image of the hub. Required.
	Image string
	// Timeout bounds the wait for the webhooks. Default 3m.
	Timeout time.Duration
	// Progress receives one line per step. Default: discarded.
	Progress io.Writer
}

// Apply installs (or updates) the hub and waits until it serves.
func Apply(ctx context.Context, o Options) error {
	if o.Config == nil || o.Image == "" {
		return fmt.Errorf("deploy: the hub config and image are required")
	}
	if o.Timeout <= 0 {
		o.Timeout = 3 * time.Minute
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	cs, err := kubernetes.NewForConfig(o.Config)
	if err != nil {
		return err
	}
	objs, err := manifests.Render(manifests.HubManifests, map[string]string{"Image": o.Image})
	if err != nil {
		return err
	}
	c, err := client.New(o.Config, client.Options{})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Progress, "==> deploying the hub into %s (image %s)\n", Namespace, o.Image)
	for _, obj := range objs {
		if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner("flotilla-init"), client.ForceOwnership); err != nil { //nolint:staticcheck // unstructured apply
			return fmt.Errorf("apply %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		if obj.GetKind() == "Namespace" {
			if err := ensureServingSecret(ctx, cs); err != nil {
				return err
			}
		}
	}
	fmt.Fprintln(o.Progress, "==> waiting for a hub replica to serve the webhooks through its Service")
	wctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	err = wait.PollUntilContextCancel(wctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(Namespace).Get(ctx, Name, metav1.GetOptions{})
		if err != nil || !available(d) {
			return false, nil
		}
		vwc, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, webhook.ConfigurationName, metav1.GetOptions{})
		if err != nil || webhook.IsPlaceholder(vwc) || len(vwc.Webhooks) == 0 {
			return false, nil
		}
		svc := vwc.Webhooks[0].ClientConfig.Service
		return svc != nil && svc.Namespace == Namespace && svc.Name == Name, nil
	})
	if err != nil {
		return fmt.Errorf("the hub Deployment %s/%s did not serve its webhooks within %s: see `kubectl -n %s logs deploy/%s`", Namespace, Name, o.Timeout, Namespace, Name)
	}
	fmt.Fprintln(o.Progress, "==> the hub runs as Pods and serves its webhooks")
	return nil
}

func available(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return d.Status.ReadyReplicas > 0
		}
	}
	return false
}

// ensureServingSecret makes the webhook serving certificate once: every
// replica serves the same one and the webhook configuration trusts its CA.
func ensureServingSecret(ctx context.Context, cs kubernetes.Interface) error {
	if _, err := cs.CoreV1().Secrets(Namespace).Get(ctx, ServingSecret, metav1.GetOptions{}); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	ca, err := pki.NewCA("flotilla-hub-webhook-ca", 10*365*24*time.Hour)
	if err != nil {
		return err
	}
	host := Name + "." + Namespace + ".svc"
	kp, err := ca.Issue(pki.CertRequest{CommonName: host, DNSNames: []string{host, host + ".cluster.local"}, Validity: 10 * 365 * 24 * time.Hour})
	if err != nil {
		return err
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: ServingSecret, Namespace: Namespace},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"tls.crt": kp.CertPEM, "tls.key": kp.KeyPEM, "ca.crt": ca.CertPEM},
	}
	if _, err := cs.CoreV1().Secrets(Namespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Secret %s/%s: %w", Namespace, ServingSecret, err)
	}
	return nil
}
