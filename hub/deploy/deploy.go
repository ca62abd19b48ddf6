// Package deploy installs the hub into the hub cluster as Pods (`flotilla init
// --deploy`): the serving certificate of its webhooks in Secret
// flotilla-hub-serving (a CA of its own, a certificate for the Service's DNS
// name), then manifests/hub: namespace, ServiceAccount, RBAC, the two-replica
// Deployment with leader election (its --addon-image names the addon agents'
// image), the Service the apiserver calls the webhooks through, and, when
// asked, the rights to approve and sign addons' custom signers. It waits until
// a replica has registered the webhooks. The compliance history goes to
// PostgreSQL (a Secret's URL, by secretKeyRef), to SQLite on a
// PersistentVolumeClaim (one replica), or to an emptyDir (store.go).
package deploy

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hubcsr "flotilla.dev/flotilla/hub/registration/csr"
	"flotilla.dev/flotilla/hub/registration/webhook"
	"flotilla.dev/flotilla/internal/image"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/pki"
	"flotilla.dev/flotilla/manifests"
)

const (
	// Namespace, Name (Deployment and Service) and ServingSecret of the hub.
	Namespace     = ocm.HubNamespace
	Name          = ocm.HubName
	ServingSecret = "flotilla-hub-serving"
)

// Options configure Apply. Every field documents its default.
type Options struct {
	// Config reaches the hub apiserver as an admin. Required.
	Config *rest.Config
	// Image of the hub. Required.
	Image string
	// AddonImage is the image of the shipped addons' agents (the hub's
	// --addon-image). Default Image: one image holds every subcommand.
	AddonImage string
	// AddonSigners are the custom signers (<domain>/<path>, or <domain>/* for
	// all of a domain, outside kubernetes.io) of addons' CustomSigner
	// registrations: the hub may approve and sign their CSRs and keep its
	// addon signer CA (manifests/hub/03-addon-signers.yaml). Default none: the
	// hub approves kube-apiserver-client addon CSRs only.
	AddonSigners []string
	// NilExecutorValidating passes --nil-executor-validating to the hub.
	// Default false.
	NilExecutorValidating bool
	// ComplianceDBSecret names a Secret in Namespace whose key "url"
	// (ComplianceDBKey) holds the compliance history's PostgreSQL URL. The
	// Deployment passes it to the hub as $FLOTILLA_COMPLIANCE_DB by
	// secretKeyRef: the hub's ServiceAccount needs no right on the Secret and
	// the password is on no command line. Both replicas share the history.
	// Apply refuses a missing Secret or key. Default "": see CompliancePVC.
	ComplianceDBSecret string
	// CompliancePVC names a PersistentVolumeClaim in Namespace that holds the
	// history as SQLite. The hub then runs one replica, replaced by Recreate,
	// so that only one Pod ever opens the file. Apply refuses a missing claim
	// unless CompliancePVCSize is set. Default "", with ComplianceDBSecret "":
	// an emptyDir per Pod (the history is lost with the Pod).
	CompliancePVC string
	// CompliancePVCSize, with CompliancePVC, has Apply create the claim when
	// it does not exist (ReadWriteOnce, the default StorageClass), e.g. "1Gi".
	// An existing claim is kept as it is. Default "": the claim must exist.
	CompliancePVCSize string
	// Timeout bounds the wait for the webhooks. Default 3m.
	Timeout time.Duration
	// Progress receives one line per step. Default: discarded.
	Progress io.Writer
}

// signerPath is what an --addon-signers entry may have after its domain.
var signerPath = regexp.MustCompile(`^(\*|[A-Za-z0-9][A-Za-z0-9._-]*)$`)

// Render returns the objects of manifests/hub for o (Config is not needed):
// the checks of Apply on the images and signers apply.
func Render(o Options) ([]*unstructured.Unstructured, error) {
	if o.AddonImage == "" {
		o.AddonImage = o.Image
	}
	if err := image.CheckRef(o.Image); err != nil {
		return nil, fmt.Errorf("deploy: hub image: %w", err)
	}
	if err := image.CheckRef(o.AddonImage); err != nil {
		return nil, fmt.Errorf("deploy: addon image: %w", err)
	}
	for _, s := range o.AddonSigners {
		_, path, _ := strings.Cut(s, "/")
		if !hubcsr.IsCustomSigner(s) || !signerPath.MatchString(path) {
			return nil, fmt.Errorf("deploy: addon signer %q is not a custom signer: want <domain>/<path> (path: letters, digits, '.', '_', '-') or <domain>/*, outside kubernetes.io", s)
		}
	}
	if err := checkStoreOptions(o); err != nil {
		return nil, err
	}
	return manifests.Render(manifests.HubManifests, map[string]any{"Image": o.Image, "AddonImage": o.AddonImage, "AddonSigners": o.AddonSigners,
		"NilExecutorValidating": o.NilExecutorValidating, "ComplianceDBSecret": o.ComplianceDBSecret, "CompliancePVC": o.CompliancePVC})
}

// Check refuses what Apply would refuse before it changes anything: the
// images, signers and store options (Render), and a missing or unusable
// Secret or claim of the compliance history. `init --deploy` runs it before
// its other steps.
func Check(ctx context.Context, o Options) error {
	if o.Config == nil {
		return fmt.Errorf("deploy: the hub config is required")
	}
	if _, err := Render(o); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(o.Config)
	if err != nil {
		return err
	}
	_, err = checkStore(ctx, cs, o)
	return err
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
	objs, err := Render(o)
	if err != nil {
		return err
	}
	c, err := client.New(o.Config, client.Options{})
	if err != nil {
		return err
	}
	createClaimToo, err := checkStore(ctx, cs, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Progress, "==> deploying the hub into %s (image %s)\n", Namespace, o.Image)
	fmt.Fprintln(o.Progress, storeLine(o))
	if len(o.AddonSigners) == 0 {
		// Rights an earlier --addon-signers gave are taken back.
		if err := removeAddonSigners(ctx, c); err != nil {
			return err
		}
	}
	for _, obj := range objs {
		if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner("flotilla-init"), client.ForceOwnership); err != nil { //nolint:staticcheck // unstructured apply
			return fmt.Errorf("apply %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		if obj.GetKind() == "Namespace" {
			if err := ensureServingSecret(ctx, cs); err != nil {
				return err
			}
			if createClaimToo {
				if err := createClaim(ctx, cs, o); err != nil {
					return err
				}
			}
		}
	}
	fmt.Fprintln(o.Progress, "==> waiting for the hub's rollout and a replica serving the webhooks through its Service")
	wctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	err = wait.PollUntilContextCancel(wctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(Namespace).Get(ctx, Name, metav1.GetOptions{})
		if err != nil || !rolledOut(d) {
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
		return fmt.Errorf("the hub Deployment %s/%s did not roll out and serve its webhooks within %s: see `kubectl -n %s describe deploy/%s` and `kubectl -n %s logs deploy/%s`", Namespace, Name, o.Timeout, Namespace, Name, Namespace, Name)
	}
	fmt.Fprintln(o.Progress, "==> the hub runs as Pods and serves its webhooks")
	return nil
}

// removeAddonSigners deletes what manifests/hub/03-addon-signers.yaml makes.
func removeAddonSigners(ctx context.Context, c client.Client) error {
	name := "open-cluster-management:flotilla-hub:addon-signers"
	ca := "open-cluster-management:flotilla-hub:addon-signer-ca"
	for _, o := range []client.Object{
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ca, Namespace: Namespace}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: ca, Namespace: Namespace}},
	} {
		if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("remove %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// rolledOut: the Deployment controller saw the current spec, every Pod runs
// it (the old ones are gone, so none of them still writes the history) and
// one is available.
func rolledOut(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != want || s.Replicas != want || s.AvailableReplicas < 1 {
		return false
	}
	if s.TerminatingReplicas != nil && *s.TerminatingReplicas > 0 {
		return false
	}
	for _, c := range s.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return true
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
