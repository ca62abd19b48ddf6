package registration

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"flotilla.dev/flotilla/hub/registration/cluster"
	"flotilla.dev/flotilla/hub/registration/csr"
	"flotilla.dev/flotilla/hub/registration/health"
	"flotilla.dev/flotilla/hub/registration/signer"
	"flotilla.dev/flotilla/hub/registration/webhook"
	"flotilla.dev/flotilla/internal/admissionclient"
)

// Options configures the hub side of registration. Every field documents its default.
type Options struct {
	// AutoApproveUsers are requesters whose first CSRs are approved without an
	// admin: for a cluster nobody decided on (the hub accepts it), or for an
	// accepted cluster whose lease is stale (LeaseGraceMultiplier); never for a
	// denied cluster nor a live accepted one. Default: none (double opt-in).
	AutoApproveUsers []string
	// LeaseGraceMultiplier: a cluster whose lease is older than this many
	// leaseDurationSeconds becomes Available=Unknown (and, for auto-approve,
	// stale). Default 5.
	LeaseGraceMultiplier int
	// SignerCertFile and SignerKeyFile enable the built-in signer for hubs whose
	// controller-manager does not sign kubernetes.io/kube-apiserver-client CSRs.
	// The CA must be trusted by the hub apiserver (--client-ca-file). Default: off.
	SignerCertFile, SignerKeyFile string
	// Admission is the client the ManagedCluster webhook asks
	// SubjectAccessReviews with. Default: one of its own (admissionclient.New).
	Admission client.Client
}

// Setup registers the registration controllers and the ManagedCluster admission
// handler with mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	c := mgr.GetClient()
	if err := (&cluster.Reconciler{Client: c, Reader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("managedcluster-acceptance")}).SetupWithManager(mgr); err != nil {
		return err
	}
	// The shared ClusterRoles must exist before any RoleBinding refers to them.
	// They carry no cluster label, so the hub's cache never holds them
	// (rbac.Labelled): they are read from the apiserver.
	// `flotilla init` writes them first, as an admin. A hub deployed as Pods
	// may not change them (RegistrationRole grants lease rights it holds in
	// cluster namespaces only, and RBAC checks a ClusterRole against the
	// writer's cluster-wide rights): when they differ from this hub's, it says
	// so and runs on with them.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		err := cluster.EnsureSharedRoles(ctx, readThrough{Client: c, reader: mgr.GetAPIReader()})
		if apierrors.IsForbidden(err) {
			ctrl.Log.WithName("hub").Error(err, "the shared cluster ClusterRoles differ from this hub's and it may not update them: run `flotilla init` as a cluster admin to update them")
			return nil
		}
		return err
	})); err != nil {
		return err
	}
	if err := (&health.Reconciler{Client: c, Reader: mgr.GetAPIReader(), GraceMultiplier: opts.LeaseGraceMultiplier}).SetupWithManager(mgr); err != nil {
		return err
	}
	approver := &csr.Reconciler{Client: c, Reader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("flotilla-csr-approver"),
		AutoApproveUsers: opts.AutoApproveUsers, LeaseGraceMultiplier: opts.LeaseGraceMultiplier}
	if err := approver.SetupWithManager(mgr); err != nil {
		return err
	}
	if opts.SignerCertFile != "" || opts.SignerKeyFile != "" {
		ca, err := signer.Load(opts.SignerCertFile, opts.SignerKeyFile)
		if err != nil {
			return fmt.Errorf("built-in signer: %w", err)
		}
		if err := (&signer.Reconciler{Client: c, CA: ca}).SetupWithManager(mgr); err != nil {
			return err
		}
	}
	live := opts.Admission
	if live == nil {
		var err error
		if live, err = admissionclient.New(mgr); err != nil {
			return err
		}
	}
	v := &webhook.Validator{Client: live, Decoder: admission.NewDecoder(mgr.GetScheme())}
	mgr.GetWebhookServer().Register(webhook.Path, &crwebhook.Admission{Handler: v})
	d := &webhook.Defaulter{}
	mgr.GetWebhookServer().Register(webhook.MutatePath, &crwebhook.Admission{Handler: d})
	return nil
}

// Webhooks returns the registration webhooks; ClientConfig.URL holds only the path.
func Webhooks() []admissionregistrationv1.ValidatingWebhook { return webhook.Webhooks() }

// MutatingWebhooks returns the registration mutating webhooks (new clusters
// are tainted unreachable); ClientConfig.URL holds only the path.
func MutatingWebhooks() []admissionregistrationv1.MutatingWebhook { return webhook.MutatingWebhooks() }

// readThrough writes through Client and reads from the apiserver.
type readThrough struct {
	client.Client
	reader client.Reader
}

func (c readThrough) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.reader.Get(ctx, key, obj, opts...)
}

func (c readThrough) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.reader.List(ctx, list, opts...)
}
