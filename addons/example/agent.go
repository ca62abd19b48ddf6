package example

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"flotilla.dev/flotilla/internal/addonagent"
	"flotilla.dev/flotilla/internal/ocm"
)

// AgentOptions configures the example agent. Every field documents its default.
type AgentOptions struct {
	// SpokeConfig reaches the managed cluster. Required.
	SpokeConfig *rest.Config
	// ClusterName is the managed cluster's name on the hub. Required.
	ClusterName string
	// Namespace is the install namespace. Default open-cluster-management-agent-addon.
	Namespace string
	// Interval between rounds (lease renewal, copy). Default 10s.
	Interval time.Duration
	// LeaseDuration written on the Lease. Default 60s.
	LeaseDuration time.Duration
}

// RunAgent runs the example agent until ctx ends.
func RunAgent(ctx context.Context, opts AgentOptions) error {
	if opts.SpokeConfig == nil || opts.ClusterName == "" {
		return errors.New("example agent: SpokeConfig and ClusterName are required")
	}
	if opts.Namespace == "" {
		opts.Namespace = ocm.DefaultAddonInstallNamespace
	}
	if opts.Interval <= 0 {
		opts.Interval = 10 * time.Second
	}
	if opts.LeaseDuration <= 0 {
		opts.LeaseDuration = 60 * time.Second
	}
	spoke, err := kubernetes.NewForConfig(opts.SpokeConfig)
	if err != nil {
		return err
	}
	log := klog.FromContext(ctx).WithValues("addon", Name, "cluster", opts.ClusterName)
	tick := time.NewTicker(opts.Interval)
	defer tick.Stop()
	for {
		// Until the addon is enabled on the cluster its namespace and credential
		// do not exist: say so quietly (a hosted agent starts before that).
		if err := addonagent.RenewLease(ctx, spoke, opts.Namespace, Name, opts.LeaseDuration); apierrors.IsNotFound(err) {
			log.V(2).Info("not enabled yet: no install namespace", "namespace", opts.Namespace)
		} else if err != nil {
			log.Error(err, "renew lease")
		}
		if err := copyOnce(ctx, spoke, opts); apierrors.IsNotFound(err) {
			log.V(2).Info("not enabled yet: no hub credential", "error", err.Error())
		} else if err != nil {
			log.Error(err, "copy ConfigMaps from the hub")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// copyOnce mirrors the labelled ConfigMaps of the cluster namespace on the hub.
func copyOnce(ctx context.Context, spoke kubernetes.Interface, opts AgentOptions) error {
	cred, err := addonagent.ReadHubCredential(ctx, spoke, opts.Namespace, Name)
	if err != nil {
		return err
	}
	cred.Config.Timeout = 15 * time.Second
	hub, err := kubernetes.NewForConfig(cred.Config)
	if err != nil {
		return err
	}
	sel := metav1.ListOptions{LabelSelector: CopyLabel + "=true"}
	src, err := hub.CoreV1().ConfigMaps(opts.ClusterName).List(ctx, sel)
	if err != nil {
		return fmt.Errorf("list ConfigMaps in %s on the hub: %w", opts.ClusterName, err)
	}
	cms := spoke.CoreV1().ConfigMaps(opts.Namespace)
	want := map[string]bool{}
	for _, cm := range src.Items {
		want[cm.Name] = true
		cp := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Namespace: opts.Namespace, Labels: map[string]string{CopyLabel: "true"}}, Data: cm.Data}
		cur, err := cms.Get(ctx, cm.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = cms.Create(ctx, cp, metav1.CreateOptions{})
		case err == nil:
			cur.Data, cur.Labels = cp.Data, cp.Labels
			_, err = cms.Update(ctx, cur, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("write ConfigMap %s/%s: %w", opts.Namespace, cm.Name, err)
		}
	}
	have, err := cms.List(ctx, sel)
	if err != nil {
		return err
	}
	for _, cm := range have.Items {
		if !want[cm.Name] {
			if err := cms.Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	return nil
}
