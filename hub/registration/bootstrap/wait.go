package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"flotilla.dev/flotilla/hub/registration/webhook"
)

// WaitForHub (`flotilla init --wait`) waits until a Flotilla hub serves the
// apiserver cfg reaches: the hub's ValidatingWebhookConfiguration is registered
// and is no longer init's fail-closed placeholder. It checks every second and
// gives up after timeout (must be > 0) with an error saying so. progress
// (nil: discarded) gets a line when it starts and when the hub is there.
func WaitForHub(ctx context.Context, cfg *rest.Config, timeout time.Duration, progress io.Writer) error {
	if cfg == nil {
		return errors.New("bootstrap: WaitForHub needs the hub config")
	}
	if timeout <= 0 {
		return fmt.Errorf("--timeout %s: must be positive", timeout)
	}
	if progress == nil {
		progress = io.Discard
	}
	fmt.Fprintln(progress, "==> waiting for the Flotilla hub to serve (start it with `flotilla hub`)")
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = wait.PollUntilContextCancel(wctx, time.Second, true, func(ctx context.Context) (bool, error) {
		vwc, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, webhook.ConfigurationName, metav1.GetOptions{})
		return err == nil && !webhook.IsPlaceholder(vwc), nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("no Flotilla hub registered its webhooks on %s within %s: is `flotilla hub` running against this apiserver?", cfg.Host, timeout)
	}
	fmt.Fprintln(progress, "==> the Flotilla hub is serving")
	return nil
}
