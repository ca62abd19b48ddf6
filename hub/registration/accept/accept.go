// Package accept is `flotilla accept`: the hub admin's half of the double opt-in.
// For each named cluster it sets spec.hubAcceptsClient=true on the ManagedCluster
// and approves the cluster's pending CSRs, but only those made by the bootstrap
// identity that pass the hub's CSR checks, and only when a single requester (user
// and agent) asks for the cluster: two means someone else wants the name.
package accept

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/hub/registration/csr"
	"flotilla.dev/flotilla/hub/registration/rbac"
	"flotilla.dev/flotilla/hub/scheme"
)

// Options configures Accept. Every field documents its default.
type Options struct {
	// Config reaches the hub as a user allowed to accept clusters. Required.
	Config *rest.Config
	// Clusters to accept. Required.
	Clusters []string
	// Wait for each cluster's ManagedCluster and CSR to appear. Default false.
	Wait bool
	// Timeout bounds the wait. Default 5m.
	Timeout time.Duration
	// Progress receives one line per step. Default: discarded.
	Progress io.Writer
}

// IsBootstrapRequester reports whether a CSR requester is a bootstrap identity:
// a bootstrap token user or group, or the bootstrap ServiceAccount.
func IsBootstrapRequester(username string, groups []string) bool {
	return strings.HasPrefix(username, "system:bootstrap:") ||
		username == rbac.BootstrapServiceAccountUser() ||
		slices.Contains(groups, rbac.BootstrapGroup)
}

// Accept accepts each cluster; it returns an error naming every cluster it could not accept.
func Accept(ctx context.Context, opts Options) error {
	if opts.Config == nil || len(opts.Clusters) == 0 {
		return errors.New("accept: a hub config and at least one cluster name are required")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Minute
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	// A fixed mapping of the two kinds accept touches: no discovery round trips
	// (hundreds of milliseconds on a busy hub) before the first request.
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(clusterv1.SchemeGroupVersion.WithKind("ManagedCluster"), meta.RESTScopeRoot)
	mapper.Add(certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), meta.RESTScopeRoot)
	c, err := client.New(opts.Config, client.Options{Scheme: scheme.New(), Mapper: mapper})
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range opts.Clusters {
		if err := acceptOne(ctx, c, name, opts); err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func acceptOne(ctx context.Context, c client.Client, name string, opts Options) error {
	cluster := &clusterv1.ManagedCluster{}
	var pending []*certificatesv1.CertificateSigningRequest
	find := func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, cluster); err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, err
		}
		var err error
		pending, err = pendingCSRs(ctx, c, name)
		if err != nil {
			return false, err
		}
		return len(pending) > 0 || cluster.Spec.HubAcceptsClient, nil
	}
	if opts.Wait {
		fmt.Fprintf(opts.Progress, "==> waiting for cluster %s to ask to join\n", name)
		wctx, cancel := context.WithTimeout(ctx, opts.Timeout)
		err := wait.PollUntilContextCancel(wctx, 250*time.Millisecond, true, find)
		cancel()
		if err != nil && cluster.Name == "" {
			return fmt.Errorf("no ManagedCluster appeared within %s: did its agent run `flotilla join`?", opts.Timeout)
		}
	} else if _, err := find(ctx); err != nil {
		return err
	}
	if cluster.Name == "" {
		return fmt.Errorf("ManagedCluster %s not found on the hub: has its agent run `flotilla join` yet? (use --wait to wait for it)", name)
	}
	requesters := map[string]bool{}
	for _, r := range pending {
		// Every cluster shares the bootstrap ServiceAccount, so the agent's
		// subject tells requesters apart too.
		requesters[r.Spec.Username+" as "+csr.Validate(r).Agent] = true
	}
	if len(requesters) > 1 {
		names := make([]string, 0, len(requesters))
		for u := range requesters {
			names = append(names, u)
		}
		sort.Strings(names)
		return fmt.Errorf("pending CSRs come from %d requesters (%s): refusing to guess which is the real cluster; delete the wrong CSRs (kubectl get csr -l %s=%s)",
			len(names), strings.Join(names, ", "), rbac.ClusterNameLabel, name)
	}
	if cluster.Spec.HubAcceptsClient {
		fmt.Fprintf(opts.Progress, "cluster %s is already accepted\n", name)
	} else {
		// A merge patch of the one field: no conflict with the hub's own writes.
		patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"hubAcceptsClient":true}}`))
		if err := c.Patch(ctx, cluster, patch); err != nil {
			return fmt.Errorf("set spec.hubAcceptsClient: %w", err)
		}
		fmt.Fprintf(opts.Progress, "==> accepted cluster %s (spec.hubAcceptsClient=true)\n", name)
	}
	if len(pending) > 0 {
		// Approve only once the hub has granted the cluster its RBAC, so the new
		// certificate works from its first request.
		if err := waitAccepted(ctx, c, name, opts.Timeout); err != nil {
			return err
		}
	}
	for _, r := range pending {
		if err := csr.SetApproved(ctx, c, r, "Approved by "+who(opts.Config)+" with flotilla accept"); err != nil {
			return fmt.Errorf("approve CSR %s: %w", r.Name, err)
		}
		fmt.Fprintf(opts.Progress, "==> approved CSR %s of cluster %s\n", r.Name, name)
	}
	if len(pending) == 0 && !hasJoined(cluster) {
		fmt.Fprintf(opts.Progress, "cluster %s has no pending CSR from its bootstrap identity yet; its agent will be approved when it asks (or run accept again)\n", name)
	}
	return nil
}

// pendingCSRs are the cluster's undecided CSRs from bootstrap identities that pass
// the hub's checks. A CSR that fails a check is reported and never approved.
func pendingCSRs(ctx context.Context, c client.Client, cluster string) ([]*certificatesv1.CertificateSigningRequest, error) {
	list := &certificatesv1.CertificateSigningRequestList{}
	if err := c.List(ctx, list, client.MatchingLabels{rbac.ClusterNameLabel: cluster}); err != nil {
		return nil, fmt.Errorf("list CSRs: %w", err)
	}
	var out []*certificatesv1.CertificateSigningRequest
	for i := range list.Items {
		r := &list.Items[i]
		if csr.Decided(r) || !IsBootstrapRequester(r.Spec.Username, r.Spec.Groups) {
			continue
		}
		if v := csr.Validate(r); v.Decision != "" {
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

func hasJoined(cluster *clusterv1.ManagedCluster) bool {
	for _, cond := range cluster.Status.Conditions {
		if cond.Type == clusterv1.ManagedClusterConditionJoined && cond.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}

func who(cfg *rest.Config) string {
	if cfg.Username != "" {
		return cfg.Username
	}
	return "the hub admin"
}

// waitAccepted waits until the hub reports HubAcceptedManagedCluster=True.
func waitAccepted(ctx context.Context, c client.Client, name string, timeout time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := wait.PollUntilContextCancel(wctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		mc := &clusterv1.ManagedCluster{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted), nil
	})
	if err != nil {
		return fmt.Errorf("the hub did not confirm the acceptance within %s (is `flotilla hub` running?)", timeout)
	}
	return nil
}
