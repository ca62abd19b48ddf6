package watchguard

import (
	"context"
	"errors"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// restarts counts the runs an agent started again because a probe said Lost.
var restarts = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "flotilla_agent_watch_restarts_total",
	Help: "Times an agent started again with caches listed afresh because its connection to an apiserver was cut or went silent.",
}, []string{"apiserver", "reason"})

func init() { ctrlmetrics.Registry.MustRegister(restarts) }

// Run runs body with the probes beside it until ctx ends (nil) or body returns
// on its own (its error is returned). When a probe says Lost, body's context is
// cancelled; once body returned, Run starts it again, so every cache it builds
// is listed afresh. body must return when its context ends.
func Run(ctx context.Context, log logr.Logger, probes []Probe, body func(ctx context.Context) error) error {
	for _, p := range probes {
		if _, err := p.withDefaults(); err != nil {
			return err
		}
	}
	for {
		rctx, cancel := context.WithCancel(ctx)
		lost := make(chan *Lost, len(probes))
		var wg sync.WaitGroup
		for _, p := range probes {
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
			log.Info("starting again with caches listed afresh: "+l.Error(), "apiserver", l.Probe, "reason", l.Reason)
			restarts.WithLabelValues(l.Probe, l.Reason).Inc()
			cancel()
			<-done
			wg.Wait()
			if ctx.Err() != nil {
				return nil
			}
		}
	}
}
