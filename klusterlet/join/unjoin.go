package join

import (
	"context"
	"errors"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/klusterlet/registration"
	"flotilla.dev/flotilla/manifests"
)

// UnjoinOptions configures Unjoin. Every field documents its default.
type UnjoinOptions struct {
	// SpokeConfig reaches the managed cluster as an admin. Required.
	SpokeConfig *rest.Config
	// ClusterName is the cluster's name on the hub. Required with HubConfig.
	ClusterName string
	// AgentNamespace on the managed cluster. Default open-cluster-management-agent.
	AgentNamespace string
	// HubConfig, when set (--cleanup-hub), also deletes the ManagedCluster on the
	// hub, which removes its works, add-ons, RBAC and namespace. Default nil.
	HubConfig *rest.Config
	// Progress receives one line per step. Default: discarded.
	Progress io.Writer
}

// Unjoin removes the klusterlet (namespace, RBAC, secrets, Deployment) from the
// managed cluster and, with HubConfig, the cluster from the hub. Missing objects
// are not an error.
func Unjoin(ctx context.Context, opts UnjoinOptions) error {
	if opts.SpokeConfig == nil {
		return errors.New("unjoin: managed cluster kubeconfig required")
	}
	// Checked before anything is deleted: a refused --cleanup-hub leaves the
	// managed cluster as it was.
	if opts.HubConfig != nil && opts.ClusterName == "" {
		return errors.New("unjoin --cleanup-hub needs --cluster-name (the cluster's name on the hub); nothing was removed")
	}
	if opts.AgentNamespace == "" {
		opts.AgentNamespace = registration.DefaultAgentNamespace
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	objs, err := manifests.Render(manifests.KlusterletManifests, map[string]string{
		"Namespace": opts.AgentNamespace, "ClusterName": opts.ClusterName, "Image": DefaultImage,
	})
	if err != nil {
		return err
	}
	spoke, err := client.New(opts.SpokeConfig, client.Options{})
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.Progress, "==> removing the klusterlet from the managed cluster (namespace %s)\n", opts.AgentNamespace)
	// Reverse order: the Deployment first, the namespace (with the secrets) last.
	for i := len(objs) - 1; i >= 0; i-- {
		if err := spoke.Delete(ctx, objs[i]); err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			return fmt.Errorf("delete %s %s: %w", objs[i].GetKind(), objs[i].GetName(), err)
		}
	}
	if opts.HubConfig == nil {
		return nil
	}
	hub, err := client.New(opts.HubConfig, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.Progress, "==> deleting ManagedCluster %s on the hub (its works, add-ons, RBAC and namespace go with it)\n", opts.ClusterName)
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: opts.ClusterName}}
	if err := hub.Delete(ctx, mc); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ManagedCluster %s: %w", opts.ClusterName, err)
	}
	return nil
}
