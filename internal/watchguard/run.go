package watchguard

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

const (
	// minGap is the least a run lasts before a Lost starts it again.
	minGap = 10 * time.Second
	// maxGap bounds the gap; a run that lasted that long resets it.
	maxGap = 5 * time.Minute
)

// nextGap is the least the next run lasts: twice the gap after a run that
// ended within maxGap, minGap again after a longer one.
func nextGap(lasted, gap time.Duration) time.Duration {
	if lasted >= maxGap {
		return minGap
	}
	return min(2*gap, maxGap)
}

// restarts counts the runs an agent started again because a tracker said Lost.
var restarts = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "flotilla_agent_watch_restarts_total",
	Help: "Times an agent started again with caches listed afresh because its connection to an apiserver was cut or went silent.",
}, []string{"apiserver", "reason"})

func init() { ctrlmetrics.Registry.MustRegister(restarts) }

// Run runs body with the signs beside it until ctx ends (nil) or body returns
// on its own (its error is returned). When one says Lost, body's context is
// cancelled; once body returned, Run starts it again, so every cache it builds
// is listed afresh. body must return when its context ends.
func Run(ctx context.Context, log logr.Logger, signs []Sign, body func(ctx context.Context) error) error {
	for _, p := range signs {
		if err := p.check(); err != nil {
			return err
		}
	}
	gap := minGap
	for {
		started := time.Now()
		rctx, cancel := context.WithCancel(ctx)
		lost := make(chan *Lost, len(signs))
		var wg sync.WaitGroup
		for _, p := range signs {
			p.reset()
		}
		for _, p := range signs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var l *Lost
				if err := p.follow(rctx); errors.As(err, &l) {
					lost <- l
				}
			}()
		}
		done := make(chan error, 1)
		go func() { done <- body(rctx) }()
		select {
		case err := <-done:
			cancel()
			wg.Wait()
			if ctx.Err() != nil {
				return nil
			}
			return err
		case l := <-lost:
			// A connection that keeps breaking (a flapping load balancer)
			// must not keep every cache relisting: a run lasts at least
			// gap, which doubles while runs end that soon.
			lasted := time.Since(started)
			wait := gap - lasted
			gap = nextGap(lasted, gap)
			log.Info("starting again with caches listed afresh: "+l.Error(), "apiserver", l.Probe, "reason", l.Reason, "in", max(wait, 0).Round(time.Second).String())
			restarts.WithLabelValues(l.Probe, l.Reason).Inc()
			if wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
				case <-t.C:
				}
				t.Stop()
			}
			cancel()
			<-done
			wg.Wait()
			if ctx.Err() != nil {
				return nil
			}
		}
	}
}
