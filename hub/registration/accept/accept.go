// Package accept is `flotilla accept`: the hub admin's half of the double opt-in.
// For each named cluster it sets spec.hubAcceptsClient=true on the ManagedCluster
// and approves the cluster's pending CSRs, but only those made by the bootstrap
// identity that pass the hub's CSR checks, and only when a single CSR asks for the
// cluster: two mean someone else wants the name (see decidePending). A cluster
// that already joined keeps its certificate: accepting it again (after a deny)
// approves no CSR and reports the pending ones; Force approves its one new
// bootstrap CSR.
package accept

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
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
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/hub/registration/csr"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/scheme"
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
	// Force approves a new bootstrap CSR of a cluster that already joined (its
	// agent lost its credential and asks again). Without it accept refuses, since
	// anyone with a bootstrap token can ask under a joined cluster's name. It never
	// overrides the refusal of several pending CSRs. Default false.
	Force bool
	// Progress receives one line per step. Default: discarded.
	Progress io.Writer
}

// IsBootstrapRequester reports whether a CSR requester is a bootstrap identity:
// a bootstrap token user or group, or the bootstrap ServiceAccount.
func IsBootstrapRequester(username string, groups []string) bool {
	return strings.HasPrefix(username, "system:bootstrap:") ||
		username == ocm.BootstrapServiceAccountUser() ||
		slices.Contains(groups, ocm.BootstrapGroup)
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
	c, err := client.NewWithWatch(opts.Config, client.Options{Scheme: scheme.New(), Mapper: mapper})
	if err != nil {
		return err
	}
	// All or nothing: every cluster is looked at (and its CSRs decided on)
	// before anything is written, so a typo in one name accepts nobody.
	var errs []error
	plans := make([]*plan, 0, len(opts.Clusters))
	for _, name := range opts.Clusters {
		p, err := planOne(ctx, c, name, opts)
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", name, err))
			continue
		}
		plans = append(plans, p)
	}
	if len(errs) > 0 {
		if len(opts.Clusters) > 1 {
			errs = append(errs, errors.New("no cluster was accepted"))
		}
		return errors.Join(errs...)
	}
	for _, p := range plans {
		if err := p.do(ctx, c, opts); err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", p.cluster.Name, err))
		}
	}
	return errors.Join(errs...)
}

// plan is what accepting one cluster will do.
type plan struct {
	cluster *clusterv1.ManagedCluster
	pending []*certificatesv1.CertificateSigningRequest
	approve []*certificatesv1.CertificateSigningRequest
	report  string
	joined  bool
}

func planOne(ctx context.Context, c client.Client, name string, opts Options) (*plan, error) {
	cluster := &clusterv1.ManagedCluster{}
	var pending, allCSRs []*certificatesv1.CertificateSigningRequest
	find := func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, cluster); err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, err
		}
		var err error
		pending, allCSRs, err = pendingCSRs(ctx, c, name)
		if err != nil {
			return false, err
		}
		return len(pending) > 0 || cluster.Spec.HubAcceptsClient || joinedBefore(cluster, allCSRs), nil
	}
	if opts.Wait {
		fmt.Fprintf(opts.Progress, "==> waiting for cluster %s to ask to join\n", name)
		wctx, cancel := context.WithTimeout(ctx, opts.Timeout)
		err := wait.PollUntilContextCancel(wctx, 250*time.Millisecond, true, find)
		cancel()
		if err != nil && cluster.Name == "" {
			return nil, fmt.Errorf("no ManagedCluster appeared within %s: did its agent run `flotilla join`?", opts.Timeout)
		}
	} else if _, err := find(ctx); err != nil {
		return nil, err
	}
	if cluster.Name == "" {
		return nil, fmt.Errorf("ManagedCluster %s not found on the hub: has its agent run `flotilla join` yet? (use --wait to wait for it)", name)
	}
	joined := joinedBefore(cluster, allCSRs)
	approve, report, err := decidePending(cluster, pending, joined, opts.Force)
	if err != nil {
		return nil, err
	}
	return &plan{cluster: cluster, pending: pending, approve: approve, report: report, joined: joined}, nil
}

// do accepts the cluster and approves the CSRs the plan chose.
func (p *plan) do(ctx context.Context, c client.WithWatch, opts Options) error {
	cluster, name, approve, report := p.cluster, p.cluster.Name, p.approve, p.report
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
	if report != "" {
		fmt.Fprintln(opts.Progress, report)
	}
	if len(approve) > 0 {
		// Approve only once the hub has granted the cluster its RBAC, so the new
		// certificate works from its first request.
		if err := waitAccepted(ctx, c, name, opts.Timeout); err != nil {
			return err
		}
	}
	for _, r := range approve {
		if err := csr.SetApproved(ctx, c, r, "Approved by "+who(opts.Config)+" with flotilla accept"); err != nil {
			return fmt.Errorf("approve CSR %s: %w", r.Name, err)
		}
		fmt.Fprintf(opts.Progress, "==> approved CSR %s of cluster %s\n", r.Name, name)
	}
	if len(p.pending) == 0 && !p.joined {
		fmt.Fprintf(opts.Progress, "cluster %s has no pending CSR from its bootstrap identity yet; its agent will be approved when it asks (or run accept again)\n", name)
	}
	return nil
}

// pendingCSRs are the cluster's undecided CSRs from bootstrap identities that pass
// the hub's checks (a CSR that fails a check is never approved); all are every
// CSR labelled for the cluster.
func pendingCSRs(ctx context.Context, c client.Client, cluster string) (pending, all []*certificatesv1.CertificateSigningRequest, err error) {
	list := &certificatesv1.CertificateSigningRequestList{}
	if err := c.List(ctx, list, client.MatchingLabels{ocm.ClusterNameLabel: cluster}); err != nil {
		return nil, nil, fmt.Errorf("list CSRs: %w", err)
	}
	for i := range list.Items {
		r := &list.Items[i]
		all = append(all, r)
		if csr.Decided(r) || !IsBootstrapRequester(r.Spec.Username, r.Spec.Groups) {
			continue
		}
		if v := csr.Validate(r); v.Decision != "" {
			continue
		}
		pending = append(pending, r)
	}
	return pending, all, nil
}

// decidePending says which pending bootstrap CSRs accept approves, and what it
// reports instead of approving. Every cluster shares the bootstrap identity and
// anyone holding a token can read a pending CSR's subject, so an impostor can
// copy the real agent's name exactly: only the key tells them apart, and an
// agent keeps one pending CSR (it reuses it across restarts). So:
//   - a cluster that already joined holds its certificate: accepting it (again,
//     after a deny) needs no CSR, and pending bootstrap CSRs under its name are
//     only reported. Its agent asks with the bootstrap identity again only after
//     losing its credential: force approves that one CSR;
//   - more than one pending bootstrap CSR to approve: refuse, listing them.
func decidePending(cluster *clusterv1.ManagedCluster, pending []*certificatesv1.CertificateSigningRequest, joined, force bool) (approve []*certificatesv1.CertificateSigningRequest, report string, err error) {
	name := cluster.Name
	if joined && !force {
		if len(pending) == 0 {
			return nil, "", nil
		}
		return nil, fmt.Sprintf("cluster %s has already joined and keeps its certificate, so no CSR was approved; %d pending bootstrap CSR(s) ask for its name: %s. "+
			"An agent asks again only after losing its credential, and anyone with a bootstrap token can copy its name: if the cluster's owner confirms the requester and key, run accept again with --force; otherwise delete them (kubectl delete csr NAME)",
			name, len(pending), describe(pending)), nil
	}
	if len(pending) > 1 {
		keys := map[string]bool{}
		for _, r := range pending {
			keys[keyFingerprint(r)] = true
		}
		return nil, "", fmt.Errorf("%d pending bootstrap CSRs (%d distinct keys) ask for cluster %s: %s; refusing to guess which is the real agent: delete the wrong ones (kubectl delete csr NAME) and run accept again",
			len(pending), len(keys), name, describe(pending))
	}
	return pending, "", nil
}

// describe lists CSRs as "name (requester, agent, key sha256:...)".
func describe(rs []*certificatesv1.CertificateSigningRequest) string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s (requester %s, agent %s, key %s)", r.Name, r.Spec.Username, csr.Validate(r).Agent, keyFingerprint(r)))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// keyFingerprint is sha256 of the request's SubjectPublicKeyInfo (first 16 hex digits).
func keyFingerprint(r *certificatesv1.CertificateSigningRequest) string {
	block, _ := pem.Decode(r.Spec.Request)
	if block == nil {
		return "unreadable"
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return "unreadable"
	}
	der, err := x509.MarshalPKIXPublicKey(req.PublicKey)
	if err != nil {
		return "unreadable"
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:8])
}

// joinedBefore: the cluster has reported Joined (any status), or a CSR of it was
// approved since this ManagedCluster was created.
func joinedBefore(cluster *clusterv1.ManagedCluster, all []*certificatesv1.CertificateSigningRequest) bool {
	if meta.FindStatusCondition(cluster.Status.Conditions, clusterv1.ManagedClusterConditionJoined) != nil {
		return true
	}
	for _, r := range all {
		for _, c := range r.Status.Conditions {
			if c.Type == certificatesv1.CertificateApproved && !c.LastUpdateTime.Before(&cluster.CreationTimestamp) {
				return true
			}
		}
	}
	return false
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

// waitAccepted waits until the hub reports HubAcceptedManagedCluster=True. It
// watches the one ManagedCluster: polling it, 50 accepts at once made 800 GETs
// in two seconds, a third of the hub apiserver's requests while it was busy
// granting those clusters their RBAC (test/bench/registration).
func waitAccepted(ctx context.Context, c client.WithWatch, name string, timeout time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	timedOut := fmt.Errorf("the hub did not confirm the acceptance within %s (is `flotilla hub` running?)", timeout)
	var pause time.Duration
	for {
		// No resourceVersion: the watch starts with the cluster as it is now.
		started := time.Now()
		w, err := c.Watch(wctx, &clusterv1.ManagedClusterList{}, client.MatchingFields{"metadata.name": name})
		if apierrors.IsForbidden(err) {
			// An accepter who may get but not watch ManagedClusters polls.
			if err := pollAccepted(wctx, c, name); err != nil {
				return timedOut
			}
			return nil
		}
		if err != nil {
			if wctx.Err() != nil {
				return timedOut
			}
			return fmt.Errorf("watch ManagedCluster %s: %w", name, err)
		}
		accepted := hubAccepted(wctx, w)
		w.Stop()
		switch {
		case accepted:
			return nil
		case wctx.Err() != nil:
			return timedOut
		}
		// The watch ended (apiserver timeout, restart): watch again, after a
		// pause that grows while the apiserver keeps closing it at once.
		pause = rewatchPause(pause, time.Since(started))
		select {
		case <-wctx.Done():
			return timedOut
		case <-time.After(pause):
		}
	}
}

// Pauses before watching again: none after a watch that lasted, growing from
// minRewatchPause to maxRewatchPause while watches end at once.
const (
	minRewatchPause = 100 * time.Millisecond
	maxRewatchPause = 5 * time.Second
	longWatch       = 30 * time.Second
)

// rewatchPause is the pause before the next watch, given the last pause and
// how long the watch that just ended lasted.
func rewatchPause(last, lasted time.Duration) time.Duration {
	switch {
	case lasted >= longWatch:
		return 0
	case last == 0:
		return minRewatchPause
	default:
		return min(2*last, maxRewatchPause)
	}
}

func pollAccepted(ctx context.Context, c client.Client, name string) error {
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		mc := &clusterv1.ManagedCluster{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted), nil
	})
}

// hubAccepted reads w until the cluster is HubAccepted (true), or the watch or
// ctx ends (false).
func hubAccepted(ctx context.Context, w watch.Interface) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false
			}
			if mc, isMC := ev.Object.(*clusterv1.ManagedCluster); isMC && ev.Type != watch.Deleted &&
				meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted) {
				return true
			}
		}
	}
}
