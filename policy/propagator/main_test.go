package propagator_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	policyv1beta1 "flotilla.dev/flotilla/api/policy/v1beta1"
	"flotilla.dev/flotilla/hub/placement"
	"flotilla.dev/flotilla/internal/pki"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/policy/propagator"
	"flotilla.dev/flotilla/test/testenv"
)

// One hub for the package, running the placement controllers and the
// propagator; every test isolates itself with its own namespace, cluster set
// and cluster names. The tests write replica status themselves, as the spoke's
// status sync would.
var (
	hubConfig *rest.Config
	hub       client.Client
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	env, err := testenv.New(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	defer env.Stop()
	hubConfig = env.Hub.Config
	if os.Getenv("TEST_VERBOSE_LOGS") != "" {
		log.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{Verbosity: 1}))
	} else {
		log.SetLogger(logr.Discard())
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	certDir, err := webhookCert()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(certDir)
	// placement.Setup serves webhooks; they are not registered with the apiserver here.
	mgr, err := ctrl.NewManager(hubConfig, ctrl.Options{Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: 0, CertDir: certDir})})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := placement.Setup(mgr, placement.Options{DisableManifestWorkReplicaSet: true}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := propagator.Setup(mgr, propagator.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		fmt.Fprintln(os.Stderr, "cache did not sync")
		return 1
	}
	if hub, err = client.New(hubConfig, client.Options{Scheme: scheme.New()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

func webhookCert() (string, error) {
	ca, err := pki.NewCA("propagator-test-webhook-ca", time.Hour)
	if err != nil {
		return "", err
	}
	kp, err := ca.Issue(pki.CertRequest{CommonName: "127.0.0.1", IPs: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "propagator-webhook-")
	if err != nil {
		return "", err
	}
	return dir, pki.WriteFiles(dir, "tls", kp.CertPEM, kp.KeyPEM)
}

const (
	timeout = 30 * time.Second
	tick    = 100 * time.Millisecond
)

// scope is one test's policy namespace and cluster set.
type scope struct {
	t   *testing.T
	ctx context.Context
	ns  string
}

func newScope(t *testing.T, name string) *scope {
	t.Helper()
	s := &scope{t: t, ctx: context.Background(), ns: name}
	s.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	s.create(&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}})
	s.create(&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: name},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: name}})
	return s
}

func (s *scope) create(o client.Object) {
	s.t.Helper()
	require.NoError(s.t, hub.Create(s.ctx, o))
}

// clusters creates accepted ManagedClusters in the scope's set, with their
// namespaces, labelled env=<env>.
func (s *scope) clusters(env string, names ...string) {
	s.t.Helper()
	for _, n := range names {
		s.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})
		s.create(&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: n,
			Labels: map[string]string{clusterv1beta2.ClusterSetLabel: s.ns, "env": env}},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}})
		require.NoError(s.t, testenv.MarkAccepted(s.ctx, hub, n))
	}
}

func (s *scope) relabel(cluster, env string) {
	s.t.Helper()
	require.Eventually(s.t, func() bool {
		var c clusterv1.ManagedCluster
		if hub.Get(s.ctx, client.ObjectKey{Name: cluster}, &c) != nil {
			return false
		}
		c.Labels["env"] = env
		return hub.Update(s.ctx, &c) == nil
	}, timeout, tick)
}

// placement creates a Placement selecting env=<env> in the scope's set.
func (s *scope) placement(name, env string) {
	s.t.Helper()
	s.create(&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
		Spec: clusterv1beta1.PlacementSpec{Predicates: []clusterv1beta1.ClusterPredicate{{RequiredClusterSelector: clusterv1beta1.ClusterSelector{
			LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": env}}}}}}})
}

// configPolicy is a policy-collection-style ConfigurationPolicy template.
func configPolicy(name string) runtime.RawExtension {
	return runtime.RawExtension{Raw: []byte(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy",` +
		`"metadata":{"name":"` + name + `"},"spec":{"remediationAction":"inform","severity":"low",` +
		`"object-templates":[{"complianceType":"musthave","objectDefinition":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"prod"}}}]}}`)}
}

func (s *scope) policy(name string, mutate ...func(*policyv1.Policy)) *policyv1.Policy {
	s.t.Helper()
	p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns,
		Annotations: map[string]string{policyv1.StandardsAnnotation: "NIST SP 800-53"}},
		Spec: policyv1.PolicySpec{RemediationAction: "inform",
			PolicyTemplates: []*policyv1.PolicyTemplate{{ObjectDefinition: configPolicy(name + "-cfg")}}}}
	for _, m := range mutate {
		m(p)
	}
	s.create(p)
	return p
}

func (s *scope) binding(name, placementName string, subjects []policyv1.Subject, mutate ...func(*policyv1.PlacementBinding)) {
	s.t.Helper()
	b := &policyv1.PlacementBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
		PlacementRef: policyv1.PlacementSubject{APIGroup: "cluster.open-cluster-management.io", Kind: "Placement", Name: placementName},
		Subjects:     subjects}
	for _, m := range mutate {
		m(b)
	}
	s.create(b)
}

func policies(names ...string) []policyv1.Subject {
	var out []policyv1.Subject
	for _, n := range names {
		out = append(out, policyv1.Subject{APIGroup: policyv1.GroupName, Kind: "Policy", Name: n})
	}
	return out
}

// replicas returns the clusters holding a replica of the scope's root policy
// name, sorted.
func (s *scope) replicas(name string) []string {
	var list policyv1.PolicyList
	if err := hub.List(s.ctx, &list); err != nil {
		return nil
	}
	out := []string{}
	for _, p := range list.Items {
		if p.Labels[policyv1.RootPolicyLabel] == s.ns+"."+name {
			out = append(out, p.Namespace)
		}
	}
	sort.Strings(out)
	return out
}

func (s *scope) eventuallyReplicas(name string, want ...string) {
	s.t.Helper()
	if want == nil {
		want = []string{}
	}
	require.EventuallyWithT(s.t, func(c *assert.CollectT) {
		assert.Equal(c, want, s.replicas(name))
	}, timeout, tick, "replicas of %s/%s (placements: %s)", s.ns, name, s.placements())
}

// placements describes the scope's placements and decisions, for failure messages.
func (s *scope) placements() string {
	var ps clusterv1beta1.PlacementList
	_ = hub.List(s.ctx, &ps, client.InNamespace(s.ns))
	var ds clusterv1beta1.PlacementDecisionList
	_ = hub.List(s.ctx, &ds, client.InNamespace(s.ns))
	out := ""
	for _, p := range ps.Items {
		out += fmt.Sprintf("%s gen=%d selected=%d conditions=%v; ", p.Name, p.Generation, p.Status.NumberOfSelectedClusters, p.Status.Conditions)
	}
	for _, d := range ds.Items {
		out += fmt.Sprintf("%s %v; ", d.Name, d.Status.Decisions)
	}
	return out
}

func (s *scope) replica(name, cluster string) *policyv1.Policy {
	var p policyv1.Policy
	if err := hub.Get(s.ctx, client.ObjectKey{Namespace: cluster, Name: s.ns + "." + name}, &p); err != nil {
		return nil
	}
	return &p
}

func (s *scope) root(name string) *policyv1.Policy {
	var p policyv1.Policy
	if err := hub.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &p); err != nil {
		return &policyv1.Policy{}
	}
	return &p
}

// update applies mutate to a fresh copy of the object until the write succeeds.
func update[T client.Object](s *scope, key client.ObjectKey, obj T, mutate func(T), status bool) {
	s.t.Helper()
	require.Eventually(s.t, func() bool {
		if err := hub.Get(s.ctx, key, obj); err != nil {
			return false
		}
		mutate(obj)
		if status {
			return hub.Status().Update(s.ctx, obj) == nil
		}
		return hub.Update(s.ctx, obj) == nil
	}, timeout, tick)
}

// report writes a replica's compliance as the spoke's status sync would.
func (s *scope) report(name, cluster string, state policyv1.ComplianceState, msg string) {
	s.t.Helper()
	update(s, client.ObjectKey{Namespace: cluster, Name: s.ns + "." + name}, &policyv1.Policy{}, func(p *policyv1.Policy) {
		p.Status.ComplianceState = state
		p.Status.Details = []*policyv1.DetailsPerTemplate{{TemplateMeta: metav1.ObjectMeta{Name: name + "-cfg"}, ComplianceState: state,
			History: []policyv1.ComplianceHistory{{LastTimestamp: metav1.Now(), Message: string(state) + "; " + msg, EventName: name + ".1"}}}}
	}, true)
}

// warnings returns the messages of Warning events on the object with reason.
func (s *scope) warnings(name, reason string) []string {
	var list corev1.EventList
	if err := hub.List(s.ctx, &list, client.InNamespace(s.ns)); err != nil {
		return nil
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason && e.Type == corev1.EventTypeWarning {
			out = append(out, e.Message)
		}
	}
	return out
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

var _ = policyv1beta1.PolicySet{}
