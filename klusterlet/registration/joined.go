package registration

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/internal/conditions"
)

// Condition types and reasons the agent writes (OCM's names).
const (
	ConditionCertificateRotated = "ClusterCertificateRotated"
	ReasonCertificateUpdated    = "ClientCertificateUpdated"
	ReasonCertificateFailed     = "ClientCertificateUpdateFailed"
	ReasonJoined                = "ManagedClusterJoined"
	ReasonAvailable             = "ManagedClusterAvailable"
	ReasonAPIServerUnavailable  = "ManagedClusterKubeAPIServerUnavailable"
	LeaseName                   = "managed-cluster-lease"
	// joinedReportWait is how long a newly joined agent waits for its first
	// probe of the managed cluster to report Joined with it, in one write,
	// before it reports Joined alone.
	joinedReportWait = 2 * time.Second
)

// hubClients are the clients of one hub credential.
type hubClients struct {
	kube     kubernetes.Interface
	clusters clusterclient.Interface
}

func newHubClients(cfg *rest.Config) (*hubClients, error) {
	cfg = withTimeout(cfg)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	clusters, err := clusterclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &hubClients{kube: kube, clusters: clusters}, nil
}

// stayJoined renews the lease, reports status and rotates the certificate until
// ctx ends or the credential stops working (errRebootstrap).
func (a *Agent) stayJoined(ctx context.Context, cfg *rest.Config) error {
	hub, err := newHubClients(cfg)
	if err != nil {
		return err
	}
	a.renewed = nil // read the lease afresh on a new credential
	a.log.Info("joined the hub", "agent", a.agentName)
	// Say so at once: with the first full status, in one write, when the
	// managed cluster answers within joinedReportWait; else Joined alone
	// first, as probing can take a moment (an apiserver serves a CRD's first
	// request slowly). The first status round then uses that first probe.
	firstFacts := make(chan facts, 1)
	go func() { firstFacts <- a.observe(ctx) }()
	select {
	case f := <-firstFacts:
		firstFacts <- f
	case <-time.After(joinedReportWait):
		if err := a.updateStatus(ctx, hub, setJoined); err != nil {
			a.log.Error(err, "report ManagedClusterJoined")
		}
	case <-ctx.Done():
		return nil
	}
	lease := time.Duration(a.opts.LeaseDurationSeconds) * time.Second
	var gone goneCount // status rounds in a row without our ManagedCluster
	getOwn := func() error {
		_, err := hub.clusters.ClusterV1().ManagedClusters().Get(ctx, a.opts.ClusterName, metav1.GetOptions{})
		return err
	}
	leaseFails, statusFails := 0, 0 // failed rounds in a row
	var kicks kickSpacing
	kicked := false // a kicked round is due
	leaseTick := time.NewTimer(0)
	statusTick := time.NewTimer(0)
	defer leaseTick.Stop()
	defer statusTick.Stop()
	due, err := a.rotationDue(ctx)
	if err != nil {
		return err
	}
	rotate := time.NewTimer(time.Until(due))
	defer rotate.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-leaseTick.C:
			err = a.renewLease(ctx, hub, lease)
			leaseFails = failures(leaseFails, err)
			leaseTick.Reset(nextRound(leaseFails, lease, a.opts.RetryInterval))
		case <-a.statusKick: // the hub changed something the round answers
			// Not while rounds fail (their backoff holds), and spaced: a hub
			// that keeps overriding the answer (it finds the lease stale
			// while the status writes go through) must not make a write
			// loop at round-trip speed.
			if statusFails == 0 && !kicked {
				statusTick.Reset(kicks.next(time.Now(), a.opts.RetryInterval, a.opts.StatusSyncInterval))
				kicked = true // one kicked round waits; more changes join it
			}
			continue
		case <-statusTick.C:
			kicked = false
			var d time.Duration
			d, err = a.syncStatus(ctx, hub, firstFacts)
			firstFacts = nil
			if d > 0 && d != lease {
				// The hub asks for another period: renew now and at the new
				// period from then on, not after the one already scheduled (a
				// shorter grace would expire before it and mark the cluster
				// Unknown while it runs).
				lease = d
				leaseTick.Reset(0)
			}
			statusFails = failures(statusFails, err)
			statusTick.Reset(nextRound(statusFails, a.opts.StatusSyncInterval, a.opts.RetryInterval))
			if gone = gone.next(time.Now(), err, getOwn); gone.gone(time.Now()) {
				a.log.Info("the hub no longer has this cluster (its ManagedCluster and RBAC are gone); registering again")
				return errRebootstrap
			}
		case <-rotate.C:
			err = a.rotate(ctx, cfg, hub)
			if err == nil {
				return nil // cycle again with the new certificate
			}
			rotate.Reset(a.opts.RetryInterval)
		}
		if err != nil {
			if rejects(err) {
				if ok, werr := a.works(ctx, cfg); werr == nil && !ok {
					return errRebootstrap
				}
			}
			a.log.Error(err, "while joined")
		}
	}
}

// rejects: err is the hub refusing the credential itself (401, or a TLS
// failure such as a changed hub CA). After a failed round it is what makes a
// joined agent ask the hub whether its credential still works (works, whose
// own answer it reads the same way); any other failure (429 from a loaded
// hub, a timeout, 5xx, 403 from a deny) says nothing about the credential:
// asking then doubled the requests of every agent of a fleet on a hub already
// refusing them (at 5,000 clusters joining, 18,578 SelfSubjectReviews
// answered 429 in 20 minutes).
func rejects(err error) bool {
	return apierrors.IsUnauthorized(err) || isCertificateError(err)
}

// rotationDue reads the current certificate from the secret and returns when to renew it.
func (a *Agent) rotationDue(ctx context.Context) (time.Time, error) {
	sec, err := a.loadSecret(ctx)
	if err != nil {
		return time.Time{}, err
	}
	cert, err := parseCert(sec.Data[KeyCert])
	if err != nil {
		return time.Time{}, errRebootstrap
	}
	return RotationDue(cert, a.opts.RotationFraction), nil
}

// rotate renews the certificate with the current credential (a renewal CSR the
// hub approves automatically) and records the outcome on the ManagedCluster.
func (a *Agent) rotate(ctx context.Context, cfg *rest.Config, hub *hubClients) error {
	server, ca := a.hubServerCA()
	a.log.Info("rotating the hub client certificate")
	rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	data, rerr := a.requestCertificate(rctx, withTimeout(cfg), server, ca)
	cond := metav1.Condition{Type: ConditionCertificateRotated, Status: metav1.ConditionTrue, Reason: ReasonCertificateUpdated,
		Message: "Client certificate rotated"}
	if rerr != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonCertificateFailed, "Client certificate rotation failed: "+rerr.Error()
	} else if err := writeCredentialFiles(a.opts.HubKubeconfigDir, data); err != nil {
		return err
	}
	if err := a.updateStatus(ctx, hub, func(st *clusterv1.ManagedClusterStatus) {
		meta.SetStatusCondition(&st.Conditions, cond)
	}); err != nil {
		a.log.Error(err, "record certificate rotation")
	}
	return rerr
}

func (a *Agent) renewLease(ctx context.Context, hub *hubClients, duration time.Duration) error {
	leases := hub.kube.CoordinationV1().Leases(a.opts.ClusterName)
	now := metav1.NowMicro()
	secs := int32(duration / time.Second)
	holder := a.subject().CommonName
	// The lease as this agent last wrote it: renewing it is one write, not a
	// read and a write (at 5,000 clusters, 83 reads a second fewer). Should
	// anyone else have written it since, the write conflicts and the agent
	// reads it afresh.
	l := a.renewed
	if l == nil {
		got, err := leases.Get(ctx, LeaseName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			// The hub creates it when it accepts the cluster (as OCM's does); the
			// agent may only read and renew it.
			return fmt.Errorf("renew lease: %s/%s does not exist yet (the hub creates it on acceptance)", a.opts.ClusterName, LeaseName)
		}
		if err != nil {
			return fmt.Errorf("renew lease: %w", err)
		}
		l = got
	}
	l = l.DeepCopy()
	l.Spec.RenewTime, l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = &now, &holder, &secs
	renewed, err := leases.Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			// The lease is not as last renewed: read it afresh, once.
			cached := a.renewed != nil
			a.renewed = nil
			if cached {
				return a.renewLease(ctx, hub, duration)
			}
		}
		// Any other failure (a 429 from a hub at its limit, a timeout, a
		// dropped connection) says nothing about the lease: the next round is
		// one write again, not a read first. Dropping it there doubled the
		// renewals of a fleet whose hub was already refusing them (at 5,000
		// clusters, 75 lease reads a second answered 429).
		return fmt.Errorf("renew lease: %w", err)
	}
	a.renewed = renewed
	a.log.V(4).Info("renewed the lease", "renewTime", now.UTC().Format(time.RFC3339Nano), "resourceVersion", renewed.ResourceVersion)
	return nil
}

// syncStatus reports Joined, Available, version, resources and claims, from
// the probe pending delivers when it is not nil, else from a new one. It
// returns the cluster's lease duration from its spec.
func (a *Agent) syncStatus(ctx context.Context, hub *hubClients, pending <-chan facts) (time.Duration, error) {
	var facts facts
	if pending != nil {
		select {
		case facts = <-pending:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	} else {
		facts = a.observe(ctx)
	}
	var lease time.Duration
	err := a.updateStatus(ctx, hub, func(st *clusterv1.ManagedClusterStatus) {
		setJoined(st)
		meta.SetStatusCondition(&st.Conditions, facts.available)
		if facts.version != "" {
			st.Version.Kubernetes = facts.version
		}
		if facts.capacity != nil {
			st.Capacity, st.Allocatable = facts.capacity, facts.allocatable
		}
		if facts.claimsKnown {
			st.ClusterClaims = facts.claims
		}
	}, func(mc *clusterv1.ManagedCluster) {
		if mc.Spec.LeaseDurationSeconds > 0 {
			lease = time.Duration(mc.Spec.LeaseDurationSeconds) * time.Second
		}
		// What this round reports, recorded before its write: the write's
		// echo can come before the write returns.
		a.reportMu.Lock()
		a.reported = reported{available: facts.available.Status, lease: mc.Spec.LeaseDurationSeconds}
		a.reportMu.Unlock()
	})
	return lease, err
}

// updateStatus applies mutate to the ManagedCluster status and writes it when it
// changed; seen (optional) observes the fresh object.
func (a *Agent) updateStatus(ctx context.Context, hub *hubClients, mutate func(*clusterv1.ManagedClusterStatus), seen ...func(*clusterv1.ManagedCluster)) error {
	api := hub.clusters.ClusterV1().ManagedClusters()
	// The first try starts from the hub view (the agent's watch of its
	// ManagedCluster: no read at all) or, before that has listed, from the
	// hub apiserver's watch cache (resourceVersion "0"), not etcd. A copy a
	// moment stale makes the write conflict, and the retry reads from etcd.
	cached, _ := a.view.ownCluster(a.transport())
	read := metav1.GetOptions{ResourceVersion: "0"}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mc := cached.DeepCopy() // nil stays nil
		if mc == nil {
			got, err := api.Get(ctx, a.opts.ClusterName, read)
			if err != nil {
				return err
			}
			mc = got
		}
		cached, read = nil, metav1.GetOptions{} // a retry reads from etcd
		for _, f := range seen {
			f(mc)
		}
		before := mc.Status.DeepCopy()
		mutate(&mc.Status)
		// Messages quoting errors are cut to fit; the full text is logged. (No
		// Event: the ManagedCluster is cluster-scoped and the agent may record
		// Events only in its cluster namespace.)
		conditions.Fit(klog.NewContext(ctx, a.log), nil, mc)
		if equality.Semantic.DeepEqual(before, &mc.Status) {
			return nil
		}
		_, err := api.UpdateStatus(ctx, mc, metav1.UpdateOptions{})
		return err
	})
}

func setJoined(st *clusterv1.ManagedClusterStatus) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionJoined,
		Status: metav1.ConditionTrue, Reason: ReasonJoined, Message: "Managed cluster joined"})
}

// nextRound is when a periodic round (lease renewal, status report) runs
// again, after fails failed rounds in a row: after its period when the last
// one succeeded; after a failure, after retry, doubled with every further
// failure, never longer than the period. A cluster's certificate can be
// signed a moment before the hub has written its RBAC and lease (an
// auto-approved CSR, an accept that approves at once): the first report and
// renewal fail, and must not then wait a whole period (test/bench/scale: with
// a 60s status period, 200 clusters joining at once showed Joined after
// 67-72s instead of seconds). The doubling keeps a denied cluster, whose
// writes fail until an admin accepts it again, from asking every few seconds.
func nextRound(fails int, period, retry time.Duration) time.Duration {
	if fails == 0 || retry <= 0 {
		return period
	}
	d := retry
	for i := 1; i < fails && d < period; i++ {
		d *= 2
	}
	return min(d, period)
}

// failures counts failed rounds in a row.
func failures(fails int, err error) int {
	if err != nil {
		return fails + 1
	}
	return 0
}

// goneAfter is how many status rounds in a row must find the cluster's own
// ManagedCluster out of reach, and goneFor how long since the first of them,
// before the agent concludes it was deleted. Rounds alone are not enough: a
// failed round is retried after the retry interval (nextRound), and a hub
// apiserver that has just restarted answers 403 for a few seconds while its
// authorizer loads RBAC.
const (
	goneAfter = 3
	goneFor   = 30 * time.Second
)

// goneCount counts consecutive status rounds whose failure comes with the
// agent's own ManagedCluster unreadable (403 or 404), and since when. A denied
// cluster can still read it, so that count stays 0; so it does when the round
// succeeded.
type goneCount struct {
	rounds int
	since  time.Time
}

func (g goneCount) next(now time.Time, statusErr error, getOwn func() error) goneCount {
	if statusErr == nil {
		return goneCount{}
	}
	if err := getOwn(); apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
		if g.rounds == 0 {
			g.since = now
		}
		g.rounds++
		return g
	}
	return goneCount{}
}

// gone: the cluster has been out of reach for goneAfter rounds and goneFor.
func (g goneCount) gone(now time.Time) bool {
	return g.rounds >= goneAfter && now.Sub(g.since) >= goneFor
}

// kickSpacing spaces status rounds started by a change on the hub: the first
// runs at once, each further one within the status period of the last waits
// twice as long as the one before (from retry, at most the period), and a
// period without one starts over.
type kickSpacing struct {
	last time.Time     // when the last kicked round was due
	gap  time.Duration // the wait after it
}

// next is how long from now the kicked round waits, and records it.
func (k *kickSpacing) next(now time.Time, retry, period time.Duration) time.Duration {
	if k.last.IsZero() || now.Sub(k.last) >= period || retry <= 0 {
		k.last, k.gap = now, retry
		return 0
	}
	due := k.last.Add(k.gap)
	wait := max(due.Sub(now), 0)
	k.last, k.gap = now.Add(wait), min(2*k.gap, period)
	return wait
}
