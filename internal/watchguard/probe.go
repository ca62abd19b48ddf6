package watchguard

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

const (
	// DefaultSilence: three bookmarks missed (the apiserver sends one about
	// every minute on a live watch).
	DefaultSilence = 3 * time.Minute
	// DefaultTimeout is what each watch asks of the server.
	DefaultTimeout = 5 * time.Minute
	// DefaultInterval is the pause between attempts while the apiserver does
	// not answer.
	DefaultInterval = 2 * time.Second
	// listTimeout bounds one list.
	listTimeout = 15 * time.Second
)

// Probe follows one resource an agent already reads on one apiserver.
type Probe struct {
	// Name says which apiserver, for logs and the Lost error ("hub",
	// "cluster"). Required.
	Name string
	// Config reaches the apiserver with the agent's own credential. Its
	// Timeout is not applied to the watch (an http.Client timeout would cut
	// every watch). Required.
	Config *rest.Config
	// Resource is followed by its metadata only. Required.
	Resource schema.GroupVersionResource
	// Namespace to follow; "" for a cluster-scoped resource.
	Namespace string
	// FieldSelector narrows what is followed (for a credential that may read
	// one object). Default: none.
	FieldSelector string
	// Silence is how long nothing may arrive before the watch counts as dead.
	// Default DefaultSilence.
	Silence time.Duration
	// Timeout is asked of each watch (whole seconds). Default DefaultTimeout.
	Timeout time.Duration
	// Interval between attempts while the apiserver does not answer.
	// Default DefaultInterval.
	Interval time.Duration
	// opened and onVerdict, when set, see each watch opened and every
	// verdict (tests).
	opened    func()
	onVerdict func(verdict)
}

// Lost says that a probe's apiserver connection was cut or went silent: the
// agent's caches may have missed changes.
type Lost struct {
	// Probe is the probe's Name.
	Probe string
	// Resource is what it followed.
	Resource string
	// Reason is "cut" or "silent".
	Reason string
}

func (l *Lost) Error() string {
	if l.Reason == dead.String() {
		return fmt.Sprintf("the watch of %s on the %s apiserver delivered nothing, not even a bookmark: it is dead", l.Resource, l.Probe)
	}
	return fmt.Sprintf("the connection to the %s apiserver (watching %s) was cut", l.Probe, l.Resource)
}

func (p Probe) withDefaults() (Probe, error) {
	if p.Name == "" || p.Config == nil || p.Resource.Resource == "" {
		return p, errors.New("watchguard: a probe needs a Name, a Config and a Resource")
	}
	if p.Silence <= 0 {
		p.Silence = DefaultSilence
	}
	if p.Timeout <= 0 {
		p.Timeout = DefaultTimeout
	}
	p.Timeout = max(p.Timeout.Truncate(time.Second), time.Second)
	if p.Interval <= 0 {
		p.Interval = DefaultInterval
	}
	return p, nil
}

// follow runs until ctx ends (nil) or the connection is lost (*Lost).
func (p Probe) follow(ctx context.Context) error {
	p, err := p.withDefaults()
	if err != nil {
		return err
	}
	cfg := rest.CopyConfig(p.Config)
	cfg.Timeout = 0
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("watchguard %s: %w", p.Name, err)
	}
	res := mc.Resource(p.Resource).Namespace(p.Namespace)
	lost := func(v verdict) *Lost {
		what := p.Resource.Resource
		if p.Namespace != "" {
			what += " in " + p.Namespace
		}
		return &Lost{Probe: p.Name, Resource: what, Reason: v.String()}
	}
	var rv string
	established, cut := false, false
	for ctx.Err() == nil {
		if rv == "" {
			lctx, cancel := context.WithTimeout(ctx, listTimeout)
			list, err := res.List(lctx, metav1.ListOptions{FieldSelector: p.FieldSelector, Limit: 1})
			cancel()
			if err != nil {
				p.pause(ctx)
				continue
			}
			if cut {
				// The apiserver answers again after a cut.
				return lost(cutOff)
			}
			rv = list.ResourceVersion
		}
		e, early, latest, opened := p.watchOnce(ctx, res, rv)
		if ctx.Err() != nil {
			return nil
		}
		established = established || opened
		rv = latest
		v := decide(e, early, established)
		if p.onVerdict != nil {
			p.onVerdict(v)
		}
		switch v {
		case again:
		case relist:
			rv = ""
			if e == openFailed {
				p.pause(ctx)
			}
		case cutOff:
			cut, rv = true, ""
		case dead:
			return lost(dead)
		}
	}
	return nil
}

// watchOnce opens one watch from rv and follows it until it ends. It returns
// how it ended, whether it ended before its time, the last resourceVersion
// seen and whether it was opened at all.
func (p Probe) watchOnce(ctx context.Context, res metadata.ResourceInterface, rv string) (e ending, early bool, latest string, opened bool) {
	secs := int64(p.Timeout / time.Second)
	started := time.Now()
	w, err := res.Watch(ctx, metav1.ListOptions{FieldSelector: p.FieldSelector, ResourceVersion: rv,
		AllowWatchBookmarks: true, TimeoutSeconds: &secs})
	if err != nil {
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return expired, false, rv, false
		}
		return openFailed, false, rv, false
	}
	defer w.Stop()
	if p.opened != nil {
		p.opened()
	}
	silence := time.NewTimer(p.Silence)
	defer silence.Stop()
	latest = rv
	for {
		select {
		case <-ctx.Done():
			return closed, false, latest, true
		case <-silence.C:
			return quiet, false, latest, true
		case ev, ok := <-w.ResultChan():
			if !ok {
				return closed, endedEarly(time.Since(started), p.Timeout), latest, true
			}
			silence.Reset(p.Silence)
			if ev.Type == watch.Error {
				if err := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					return expired, false, latest, true
				}
				return errorEvent, false, latest, true
			}
			if m, ok := ev.Object.(metav1.Object); ok && m.GetResourceVersion() != "" {
				latest = m.GetResourceVersion()
			}
		}
	}
}

func (p Probe) pause(ctx context.Context) {
	t := time.NewTimer(p.Interval)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
