package placement_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"flotilla.dev/flotilla/hub/placement"
	"flotilla.dev/flotilla/internal/pki"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/test/testenv"
)

// One hub for the package; every test isolates itself with its own namespace and
// cluster set.
var (
	hubConfig *rest.Config
	hub       client.Client
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	env, err := testenv.New(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	defer env.Stop()
	hubConfig = env.Hub.Config
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := startHub(ctx, hubConfig); err != nil {
		fmt.Fprintln(os.Stderr, "start placement controllers:", err)
		return 1
	}
	return m.Run()
}

// startHub runs placement.Setup on a manager with a webhook server on 127.0.0.1 and
// registers placement.Webhooks() the way the hub does.
func startHub(ctx context.Context, cfg *rest.Config) error {
	log.SetLogger(logr.Discard())
	if os.Getenv("TEST_VERBOSE_LOGS") != "" {
		log.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{}))
	}
	ca, err := pki.NewCA("placement-test-webhook-ca", time.Hour)
	if err != nil {
		return err
	}
	kp, err := ca.Issue(pki.CertRequest{CommonName: "127.0.0.1", IPs: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "placement-webhook-")
	if err != nil {
		return err
	}
	if err := pki.WriteFiles(dir, "tls", kp.CertPEM, kp.KeyPEM); err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:        scheme.New(),
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir}),
	})
	if err != nil {
		return err
	}
	if err := placement.Setup(mgr, placement.Options{}); err != nil {
		return err
	}
	hub = mgr.GetClient()
	go func() { _ = mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("cache did not sync")
	}
	// Register the webhooks once the server answers.
	base := "https://127.0.0.1:" + strconv.Itoa(port)
	var hooks []admissionregistrationv1.ValidatingWebhook
	for _, h := range placement.Webhooks() {
		url := base + *h.ClientConfig.URL
		h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca.CertPEM}
		hooks = append(hooks, h)
	}
	started := mgr.GetWebhookServer().StartedChecker()
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return started(nil) == nil, nil
	}); err != nil {
		return fmt.Errorf("webhook server did not start: %w", err)
	}
	direct, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	hub = direct
	return direct.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "placement-test"}, Webhooks: hooks})
}

// fixture helpers ---------------------------------------------------------------

// scope is one test's namespace and exclusive cluster set, bound there.
type scope struct {
	t   *testing.T
	ctx context.Context
	ns  string
	set string
}

func newScope(t *testing.T, name string) *scope {
	t.Helper()
	s := &scope{t: t, ctx: context.Background(), ns: name, set: name}
	require.NoError(t, hub.Create(s.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	require.NoError(t, hub.Create(s.ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	require.NoError(t, hub.Create(s.ctx, &clusterv1beta2.ManagedClusterSetBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: name}, Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: name}}))
	return s
}

// cluster creates a ManagedCluster in the scope's set, accepted by the hub
// (testenv.MarkAccepted: no registration controller runs here).
func (s *scope) cluster(name string, labels map[string]string) *clusterv1.ManagedCluster {
	s.t.Helper()
	c := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: s.set}},
		Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
	for k, v := range labels {
		c.Labels[k] = v
	}
	require.NoError(s.t, hub.Create(s.ctx, c))
	require.NoError(s.t, testenv.MarkAccepted(s.ctx, hub, name))
	return c
}

func (s *scope) placement(p *clusterv1beta1.Placement) {
	s.t.Helper()
	p.Namespace = s.ns
	require.NoError(s.t, hub.Create(s.ctx, p))
}

// patchCluster applies mutate to the cluster (spec/metadata, then status).
func (s *scope) patchCluster(name string, mutate func(*clusterv1.ManagedCluster), status bool) {
	s.t.Helper()
	require.Eventually(s.t, func() bool {
		var c clusterv1.ManagedCluster
		if err := hub.Get(s.ctx, client.ObjectKey{Name: name}, &c); err != nil {
			return false
		}
		mutate(&c)
		if status {
			return hub.Status().Update(s.ctx, &c) == nil
		}
		return hub.Update(s.ctx, &c) == nil
	}, 10*time.Second, 50*time.Millisecond)
}

// decided returns the clusters in the placement's decisions, sorted.
func (s *scope) decided(placement string) []string {
	var list clusterv1beta1.PlacementDecisionList
	if err := hub.List(s.ctx, &list, client.InNamespace(s.ns), client.MatchingLabels{clusterv1beta1.PlacementLabel: placement}); err != nil {
		return nil
	}
	out := []string{}
	for _, d := range list.Items {
		for _, cd := range d.Status.Decisions {
			out = append(out, cd.ClusterName)
		}
	}
	sort.Strings(out)
	return out
}

const timeout = 30 * time.Second
const tick = 100 * time.Millisecond

func (s *scope) eventuallyDecided(placement string, want ...string) {
	s.t.Helper()
	if want == nil {
		want = []string{}
	}
	require.EventuallyWithT(s.t, func(c *assert.CollectT) {
		assert.Equal(c, want, s.decided(placement))
	}, timeout, tick, "decisions of %s/%s", s.ns, placement)
}

func (s *scope) getPlacement(name string) *clusterv1beta1.Placement {
	var p clusterv1beta1.Placement
	if err := hub.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &p); err != nil {
		return &clusterv1beta1.Placement{}
	}
	return &p
}
