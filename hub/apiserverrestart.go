package hub

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Why the hub watches its apiservers' identities: after the hub's etcd and
// apiserver restarted together, make chaos found the hub's informers holding
// objects that no longer matched the apiserver (a PlacementDecision the hub had
// itself emptied, still cached with its clusters) while the apiserver's own
// watch cache agreed with etcd. No later event corrected them, so the
// placement decided no cluster until a relist, minutes later. Listing every
// cache afresh after an apiserver restart ends that class of staleness.

const (
	// identityLabel marks the lease each kube-apiserver keeps in kube-system
	// (APIServerIdentity); its holderIdentity is new at each apiserver start.
	identityLabel = "apiserver.kubernetes.io/identity=kube-apiserver"
	identityNS    = "kube-system"

	defaultAPIServerCheckInterval = 5 * time.Second
	// minRun is the least time the controllers run before a restart: whoever
	// may rewrite an identity lease cannot make the hub relist everything
	// every few seconds.
	minRun = time.Minute
)

// cacheRestarts counts the hub's restarts of its controllers after an
// apiserver restart.
var cacheRestarts = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "flotilla_hub_cache_restarts_total",
	Help: "Times the hub started its controllers again, with caches listed afresh, because a hub apiserver restarted.",
})

func init() { ctrlmetrics.Registry.MustRegister(cacheRestarts) }

// apiserverRestarted ends a run of the controllers: an apiserver restarted.
type apiserverRestarted struct{ reason string }

func (e *apiserverRestarted) Error() string { return "the hub apiserver restarted: " + e.reason }

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

// apiserverWatch is a manager runnable that reads the identity leases every
// interval (through no cache) and ends the run on a restart.
type apiserverWatch struct {
	client   kubernetes.Interface
	interval time.Duration
	log      logr.Logger
	// minRun: a restart seen earlier in the run waits until the controllers
	// have run this long. Default minRun.
	minRun time.Duration
}

func (w *apiserverWatch) NeedLeaderElection() bool { return false }

func (w *apiserverWatch) Start(ctx context.Context) error {
	if w.minRun == 0 {
		w.minRun = minRun
	}
	notBefore := time.Now().Add(w.minRun)
	var seen map[string]string
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		now, err := w.identities(ctx)
		switch {
		case apierrors.IsForbidden(err):
			w.log.Info("cannot read the apiservers' identity leases: the hub will not notice an apiserver restart by itself", "error", err.Error())
			<-ctx.Done()
			return nil
		case err == nil:
			if reason, ok := restartOf(seen, now); ok {
				if wait := time.Until(notBefore); wait > 0 {
					w.log.Info("an apiserver restarted soon after the last start of the controllers; starting them again once they have run a minute", "apiserver", reason, "in", wait.Round(time.Second).String())
					select {
					case <-ctx.Done():
						return nil
					case <-time.After(wait):
					}
				}
				return &apiserverRestarted{reason: reason}
			}
			if len(now) > 0 {
				seen = now
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (w *apiserverWatch) identities(ctx context.Context) (map[string]string, error) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := w.client.CoordinationV1().Leases(identityNS).List(rctx, metav1.ListOptions{LabelSelector: identityLabel})
	if err != nil {
		return nil, err
	}
	ids := map[string]string{}
	for _, l := range list.Items {
		if l.Spec.HolderIdentity != nil {
			ids[l.Name] = *l.Spec.HolderIdentity
		}
	}
	return ids, nil
}
