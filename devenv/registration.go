package devenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/hub"
	"flotilla.dev/flotilla/hub/deploy"
	"flotilla.dev/flotilla/hub/registration/accept"
	"flotilla.dev/flotilla/hub/registration/bootstrap"
	"flotilla.dev/flotilla/klusterlet/join"
	"flotilla.dev/flotilla/klusterlet/registration"
)

// registrationTimeout bounds each wait of the registration steps.
const registrationTimeout = 3 * time.Minute

// registerClusters starts `flotilla hub` and one `flotilla klusterlet` per
// cluster, and registers every cluster through the real path: `init` (bootstrap
// identity and token), `join` (bootstrap secret), the klusterlet's CSR, then
// `accept`. Every step is a no-op when already done.
func registerClusters(ctx context.Context, opts *Options, rec *record) error {
	hubCfg, err := clientcmd.BuildConfigFromFlags("", opts.HubKubeconfig())
	if err != nil {
		return err
	}
	since := time.Now().Add(-time.Second)
	opts.progress("preparing the hub for registration (flotilla init)")
	tok, err := bootstrap.Init(ctx, bootstrap.Options{Config: hubCfg})
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if opts.Nodes {
		// The hub runs as Pods on the hub's node, installed as `flotilla init
		// --deploy` does; the addon agents its works deliver run the same
		// locally imported image (the addons' hosted processes are off).
		if err := deploy.Apply(ctx, deploy.Options{Config: hubCfg, Image: opts.Image, AddonImage: opts.Image,
			ComplianceDBSecret: opts.HubDBSecret, Timeout: registrationTimeout, Progress: opts.Out}); err != nil {
			return err
		}
	} else {
		// The hub keeps its compliance history (SQLite) in <data dir>/hub.
		hubData, err := filepath.Abs(filepath.Join(opts.DataDir, "hub"))
		if err != nil {
			return err
		}
		apiAddress, err := hubAPIAddress(opts)
		if err != nil {
			return err
		}
		if err := ensureProcess(opts, "hub", append([]string{"hub", "--kubeconfig", opts.HubKubeconfig(), "--data-dir", hubData, "--api-address", apiAddress}, opts.HubArgs...)); err != nil {
			return err
		}
		opts.progress("waiting for the hub to serve its webhooks")
		if err := waitHubServing(ctx, hubCfg); err != nil {
			return err
		}
	}
	for _, name := range rec.Clusters {
		spokeCfg, err := clientcmd.BuildConfigFromFlags("", opts.ClusterKubeconfig(name))
		if err != nil {
			return err
		}
		if opts.Nodes {
			// The klusterlet runs as a Pod on the cluster's node, installed the
			// way a user installs it; join applies it again on every run (a
			// no-op when unchanged) so a new image reaches it.
			opts.progress("%s: joining the hub (flotilla join: klusterlet Deployment, image %s)", name, opts.Image)
			if err := join.Join(ctx, join.Options{
				SpokeConfig: spokeCfg, HubAPIServer: hubCfg.Host, HubToken: tok.Token, ClusterName: name, Image: opts.Image,
			}); err != nil {
				return fmt.Errorf("%s: join: %w", name, err)
			}
			continue
		}
		if !hasCredential(ctx, spokeCfg) {
			opts.progress("%s: joining the hub (flotilla join)", name)
			if err := join.Join(ctx, join.Options{
				SpokeConfig: spokeCfg, HubAPIServer: hubCfg.Host, HubToken: tok.Token, ClusterName: name, NoDeployment: true,
			}); err != nil {
				return fmt.Errorf("%s: join: %w", name, err)
			}
		}
		args := append([]string{"klusterlet", "--cluster-name", name,
			"--kubeconfig", opts.ClusterKubeconfig(name),
			"--hub-kubeconfig-dir", filepath.Join(opts.DataDir, "klusterlets", name)}, opts.KlusterletArgs...)
		if err := ensureProcess(opts, "klusterlet-"+name, args); err != nil {
			return err
		}
		if err := startAddonAgents(opts, name); err != nil {
			return err
		}
	}
	clusters, err := clusterclient.NewForConfig(hubCfg)
	if err != nil {
		return err
	}
	// dev up never overrides an admin's decision: a cluster denied on the hub
	// stays denied (and is not waited for).
	var toAccept []string
	for _, name := range rec.Clusters {
		mc, err := clusters.ClusterV1().ManagedClusters().Get(ctx, name, metav1.GetOptions{})
		if err == nil && AcceptanceOf(mc) == AcceptanceDenied {
			opts.progress("%s: denied on the hub (spec.hubAcceptsClient=false); dev up leaves it denied: `flotilla accept --clusters %s` accepts it again", name, name)
			continue
		}
		toAccept = append(toAccept, name)
	}
	if len(toAccept) == 0 {
		return nil
	}
	opts.progress("accepting %v (flotilla accept)", toAccept)
	// Force: on a resumed environment a klusterlet that lost its credential asks
	// again with a new bootstrap CSR, which `accept` otherwise refuses for a cluster
	// that already joined. dev up started every klusterlet here itself, from tokens
	// it minted, so it vouches for them; accept still refuses several requesters.
	if err := accept.Accept(ctx, accept.Options{Config: hubCfg, Clusters: toAccept, Wait: true, Force: true, Timeout: registrationTimeout}); err != nil {
		return err
	}
	hubKube, err := kubernetes.NewForConfig(hubCfg)
	if err != nil {
		return err
	}
	for _, name := range toAccept {
		opts.progress("%s: waiting until joined and available", name)
		wctx, cancel := context.WithTimeout(ctx, registrationTimeout)
		err := wait.PollUntilContextCancel(wctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			mc, err := clusters.ClusterV1().ManagedClusters().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			if !meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined) ||
				!meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable) {
				return false, nil
			}
			// A resumed environment still shows the Available of before: wait
			// for a heartbeat from this run.
			lease, err := hubKube.CoordinationV1().Leases(name).Get(ctx, registration.LeaseName, metav1.GetOptions{})
			return err == nil && lease.Spec.RenewTime != nil && lease.Spec.RenewTime.After(since), nil
		})
		cancel()
		if err != nil {
			where := filepath.Join(opts.DataDir, "logs", "klusterlet-"+name+".log")
			if opts.Nodes {
				where = fmt.Sprintf("`kubectl --kubeconfig %s -n %s logs deploy/klusterlet`", opts.ClusterKubeconfig(name), registration.DefaultAgentNamespace)
			}
			return fmt.Errorf("%s did not join within %s: see %s", name, registrationTimeout, where)
		}
	}
	return nil
}

// hasCredential reports whether the cluster's agent already holds a hub certificate.
func hasCredential(ctx context.Context, spokeCfg *rest.Config) bool {
	cs, err := kubernetes.NewForConfig(spokeCfg)
	if err != nil {
		return false
	}
	sec, err := cs.CoreV1().Secrets(registration.DefaultAgentNamespace).Get(ctx, registration.HubKubeconfigSecret, metav1.GetOptions{})
	return err == nil && len(sec.Data[registration.KeyCert]) > 0
}

// waitHubServing waits until the hub's webhook configuration exists and its
// server accepts connections (a configuration left by a killed hub does not count).
func waitHubServing(ctx context.Context, hubCfg *rest.Config) error {
	cs, err := kubernetes.NewForConfig(hubCfg)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, registrationTimeout)
	defer cancel()
	err = wait.PollUntilContextCancel(wctx, 300*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		vwc, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, hub.WebhookConfigurationName, metav1.GetOptions{})
		if err != nil || len(vwc.Webhooks) == 0 || vwc.Webhooks[0].ClientConfig.URL == nil {
			return false, nil
		}
		u, err := url.Parse(*vwc.Webhooks[0].ClientConfig.URL)
		if err != nil {
			return false, nil
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", u.Host, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a liveness probe only
		if err != nil {
			return false, nil
		}
		conn.Close()
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the hub did not start serving within %s: see its log in logs/hub.log", registrationTimeout)
	}
	return nil
}

// Acceptance is a managed cluster's standing on the hub, as `dev status` shows it.
type Acceptance string

const (
	AcceptanceAccepted Acceptance = "accepted"
	// AcceptanceDenied: the hub accepted the cluster once and an admin set
	// spec.hubAcceptsClient=false since.
	AcceptanceDenied Acceptance = "denied"
	// AcceptancePending: never accepted yet.
	AcceptancePending Acceptance = "pending"
)

// AcceptanceOf reads a ManagedCluster's standing: the hub writes the
// HubAcceptedManagedCluster condition once it has accepted a cluster, so a
// false spec with that condition present is an admin's deny.
func AcceptanceOf(mc *clusterv1.ManagedCluster) Acceptance {
	switch {
	case mc.Spec.HubAcceptsClient:
		return AcceptanceAccepted
	case meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted) != nil:
		return AcceptanceDenied
	default:
		return AcceptancePending
	}
}

// hubAcceptance reads every cluster's standing from the hub; nil when the hub
// cannot be read (not running).
func hubAcceptance(hubKubeconfig string) map[string]Acceptance {
	cfg, err := clientcmd.BuildConfigFromFlags("", hubKubeconfig)
	if err != nil {
		return nil
	}
	cfg.Timeout = 5 * time.Second
	cs, err := clusterclient.NewForConfig(cfg)
	if err != nil {
		return nil
	}
	list, err := cs.ClusterV1().ManagedClusters().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil
	}
	out := make(map[string]Acceptance, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = AcceptanceOf(&list.Items[i])
	}
	return out
}
