// Package hubtest starts the whole hub (hub.Run, webhooks included) for a
// test package's TestMain, as the e2e suites do.
package hubtest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"flotilla.dev/flotilla/hub"
)

// Start runs hub.Run(ctx, opts) in the background and returns once the hub
// serves (opts.Ready is called), or with the error that stopped it, or when it
// is not ready within timeout. done receives hub.Run's result when the hub
// stops (cancel ctx, then wait on done). opts.Ready is Start's own.
func Start(ctx context.Context, opts hub.Options, timeout time.Duration) (done <-chan error, err error) {
	ready := make(chan struct{})
	stopped := make(chan error, 1)
	opts.Ready = func() { close(ready) }
	go func() { stopped <- hub.Run(ctx, opts) }()
	select {
	case <-ready:
		return stopped, nil
	case err := <-stopped:
		if err == nil {
			err = errors.New("stopped before it was ready")
		}
		return nil, fmt.Errorf("hub: %w", err)
	case <-time.After(timeout):
		return stopped, fmt.Errorf("hub did not become ready within %s", timeout)
	}
}
