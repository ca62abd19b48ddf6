package hub

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Why the hub watches its apiservers' identities: after the hub's etcd and
// apiserver restarted together, make chaos found the hub's informers holding
// objects that no longer matched the apiserver (a PlacementDecision the hub had
// itself emptied, still cached with its clusters) while the apiserver's own
// watch cache agreed with etcd. No later event corrected them, so the
// placement decided no cluster until a relist, minutes later. Listing every
// cache afresh after the hub's apiserver restarted ends that class of
// staleness (docs/reliability.md).

const (
	// identityLabel marks the lease each kube-apiserver keeps in kube-system
	// (APIServerIdentity); its holderIdentity is new at each apiserver start.
	identityLabel = "apiserver.kubernetes.io/identity=kube-apiserver"
	identityNS    = "kube-system"
	// identityLimit bounds the list: an HA control plane has a handful.
	identityLimit = 100

	defaultAPIServerCheckInterval = 5 * time.Second
	// identityWatchTimeout is the life the hub asks of its identity watch; a
	// watch that ends sooner was cut (its apiserver went away).
	identityWatchTimeout = 5 * time.Minute
	// followerStagger delays a replica that is not the leader, so that the two
	// replicas of a Pod-mode hub do not stop serving webhooks at once.
	followerStagger = 30 * time.Second
	// gracefulStop bounds the stop of one run of the controllers: beyond the
	// 30 s a webhook request body may take (internal/httplimit).
	gracefulStop = 90 * time.Second
)

// cacheRestarts counts the hub's restarts of its controllers after an
// apiserver restart.
var cacheRestarts = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "flotilla_hub_cache_restarts_total",
	Help: "Times the hub started its controllers again, with caches listed afresh, because its apiserver restarted.",
})

func init() { ctrlmetrics.Registry.MustRegister(cacheRestarts) }

// identities is what the hub knows of its apiservers, kept across runs of the
// controllers: lease name -> holder, and whether the hub's connection was cut
// since it last read them.
type identities struct {
	mu      sync.Mutex
	holders map[string]string
	cut     bool
	// restart is the reason the last run ended for, "" when it did not.
	restart string
}

// markRestart records that the run ends for reason (takeRestart reads it).
func (s *identities) markRestart(reason string) {
	s.mu.Lock()
	s.restart = reason
	s.mu.Unlock()
}

// takeRestart returns why the last run ended ("" when not for a restart)
// and clears it for the next run.
func (s *identities) takeRestart() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.restart
	s.restart = ""
	return r
}

// observe records a read of the leases and says whether it shows a restart
// of an apiserver the hub was connected to.
func (s *identities) observe(now map[string]string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	reason, changed := restartOf(s.holders, now)
	restart := changed && s.cut
	if len(now) > 0 {
		s.holders, s.cut = now, false
	}
	return reason, restart
}

func (s *identities) cutOff() {
	s.mu.Lock()
	s.cut = true
	s.mu.Unlock()
}

// restartOf compares the apiservers' identities (lease name -> holder) seen
// before and now. It reports the restart of an apiserver seen before: its
// holder changed, or its lease is gone while another appeared. An apiserver
// added (a new replica) or gone (a replica removed) with the others unchanged
// is no restart of ours.
func restartOf(before, now map[string]string) (string, bool) {
	if len(before) == 0 || len(now) == 0 {
		return "", false
	}
	var changed []string
	for name, holder := range before {
		if h, ok := now[name]; ok && h != holder {
			changed = append(changed, fmt.Sprintf("%s (was %s)", h, holder))
		}
	}
	if len(changed) > 0 {
		slices.Sort(changed)
		return strings.Join(changed, ", "), true
	}
	// A single apiserver whose lease was renamed (its host name changed).
	if len(before) == 1 && len(now) == 1 {
		for name := range now {
			if _, ok := before[name]; !ok {
				return now[name], true
			}
		}
	}
	return "", false
}

// apiserverWatch is a manager runnable that follows the identity leases
// through no cache and ends the run when the apiserver the hub was connected
// to restarted: a new holder AND the hub's own watch of the leases cut since
// the last read. A holder that changes while the hub's connection holds (a
// lease rewritten by hand, another replica of an HA set) restarts nothing.
type apiserverWatch struct {
	client   kubernetes.Interface
	interval time.Duration
	log      logr.Logger
	known    *identities
	// elected is closed once this replica leads (at once without leader
	// election); a follower waits stagger before it restarts.
	elected <-chan struct{}
	stagger time.Duration
}

func (w *apiserverWatch) NeedLeaderElection() bool { return false }

func (w *apiserverWatch) Start(ctx context.Context) error {
	failing := false
	for ctx.Err() == nil {
		now, rv, err := w.list(ctx)
		switch {
		case apierrors.IsForbidden(err):
			w.log.Info("cannot list the apiservers' identity leases: the hub will not notice an apiserver restart by itself", "error", err.Error())
			<-ctx.Done()
			return nil
		case err != nil:
			if !failing {
				w.log.Info("cannot read the apiservers' identity leases; trying again", "error", err.Error())
			}
			failing = true
			w.known.cutOff()
			w.pause(ctx)
			continue
		}
		failing = false
		if reason, restart := w.known.observe(now); restart {
			return w.restart(ctx, reason)
		} else if reason != "" {
			w.log.Info("an apiserver identity changed while the hub's connection held: no restart", "apiserver", reason)
		}
		if w.follow(ctx, rv) {
			w.known.cutOff()
		}
	}
	return nil
}

// follow watches the leases from rv until the watch ends; true when it ended
// before its time (the connection was cut), false when it ran out or ctx ended.
func (w *apiserverWatch) follow(ctx context.Context, rv string) bool {
	timeout := int64(identityWatchTimeout / time.Second)
	started := time.Now()
	wi, err := w.client.CoordinationV1().Leases(identityNS).Watch(ctx, metav1.ListOptions{
		LabelSelector: identityLabel, ResourceVersion: rv, TimeoutSeconds: &timeout})
	if err != nil {
		w.pause(ctx)
		return ctx.Err() == nil
	}
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return time.Since(started) < identityWatchTimeout-10*time.Second
			}
			if ev.Type == watch.Error {
				return true
			}
			// ADDED, MODIFIED, DELETED on a live connection: read them all
			// again (the next list compares).
			return false
		}
	}
}

func (w *apiserverWatch) restart(ctx context.Context, reason string) error {
	select {
	case <-w.elected:
	default:
		w.log.Info("the hub apiserver restarted; this replica does not lead: starting its controllers again after the leader's", "apiserver", reason, "in", w.stagger.String())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(w.stagger):
		}
	}
	w.known.markRestart(reason)
	return &apiserverRestarted{reason: reason}
}

func (w *apiserverWatch) pause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(w.interval):
	}
}

func (w *apiserverWatch) list(ctx context.Context) (map[string]string, string, error) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := w.client.CoordinationV1().Leases(identityNS).List(rctx, metav1.ListOptions{LabelSelector: identityLabel, Limit: identityLimit})
	if err != nil {
		return nil, "", err
	}
	ids := map[string]string{}
	for _, l := range list.Items {
		if l.Spec.HolderIdentity != nil {
			ids[l.Name] = *l.Spec.HolderIdentity
		}
	}
	return ids, list.ResourceVersion, nil
}

// apiserverRestarted ends a run of the controllers: the hub's apiserver restarted.
type apiserverRestarted struct{ reason string }

func (e *apiserverRestarted) Error() string { return "the hub apiserver restarted: " + e.reason }

// unwaited tells whether a manager's error means it returned while its
// reconcilers may still run. controller-runtime (v0.23, manager/internal.go)
// says so only in words: on a lost leader lease it skips the graceful stop
// ("leader election lost"), and a stop past GracefulShutdownTimeout ends with
// "failed waiting for all runnables to end within grace period".
func unwaited(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "leader election lost") || strings.Contains(msg, "within grace period")
}
