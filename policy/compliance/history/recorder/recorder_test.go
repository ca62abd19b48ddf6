package recorder_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/pgtest"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/history"
	"flotilla.dev/flotilla/policy/compliance/history/recorder"
	"flotilla.dev/flotilla/test/testenv"
)

var hubConfig *rest.Config

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	env, err := testenv.New(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	defer env.Stop()
	hubConfig = env.Hub.Config
	log.SetLogger(logr.Discard())
	return m.Run()
}

// startRecorder runs a hub manager with only the recorder until the returned
// stop is called.
func startRecorder(t *testing.T, s history.Store) (stop func()) {
	t.Helper()
	mgr, err := ctrl.NewManager(hubConfig, ctrl.Options{Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true), UsePriorityQueue: ptr.To(false)}})
	require.NoError(t, err)
	require.NoError(t, recorder.Setup(mgr, recorder.Options{Store: s, Retention: 365 * 24 * time.Hour}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		require.NoError(t, <-done)
	}
}

// The hub records a replica's history as it changes, stops, misses an entry
// while down, and on restart records that entry once with nothing duplicated.
func TestRecordsAcrossRestart(t *testing.T) {
	backends := map[string]func(t *testing.T) func() (history.Store, error){
		"sqlite": func(t *testing.T) func() (history.Store, error) {
			path := filepath.Join(t.TempDir(), "compliance.db")
			return func() (history.Store, error) { return history.Open(context.Background(), path) }
		},
		"postgres": func(t *testing.T) func() (history.Store, error) {
			url := pgtest.Start(t).NewDatabase(t)
			return func() (history.Store, error) { return history.Open(context.Background(), url) }
		},
	}
	for name, backend := range backends {
		t.Run(name, func(t *testing.T) { testRestart(t, name, backend(t)) })
	}
}

func testRestart(t *testing.T, cluster string, open func() (history.Store, error)) {
	ctx := context.Background()
	c, err := client.New(hubConfig, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster}}))
	require.NoError(t, c.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}))
	require.NoError(t, testenv.MarkAccepted(ctx, c, cluster))
	base := time.Now().Add(-time.Hour).Truncate(time.Second).UTC()
	entry := func(minutes int, msg string) policyv1.ComplianceHistory {
		return policyv1.ComplianceHistory{LastTimestamp: metav1.NewTime(base.Add(time.Duration(minutes) * time.Minute)), Message: msg}
	}
	tmpl := &policyv1.PolicyTemplate{}
	tmpl.ObjectDefinition.Raw = []byte(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy","metadata":{"name":"ns-check"},"spec":{"remediationAction":"inform","object-templates":[]}}`)
	replica := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "governance.policy-ns", Labels: map[string]string{
		policyv1.RootPolicyLabel: "governance.policy-ns", policyv1.ClusterNameLabel: cluster, policyv1.ClusterNamespaceLabel: cluster,
	}}, Spec: policyv1.PolicySpec{PolicyTemplates: []*policyv1.PolicyTemplate{tmpl}}}
	require.NoError(t, c.Create(ctx, replica))
	setHistory := func(h ...policyv1.ComplianceHistory) {
		t.Helper()
		replica.Status.Details = []*policyv1.DetailsPerTemplate{{TemplateMeta: metav1.ObjectMeta{Name: "ns-check"}, History: h}}
		require.NoError(t, c.Status().Update(ctx, replica))
	}
	h0 := entry(0, "NonCompliant; violation - namespaces [prod] not found")
	h1 := entry(10, "Compliant; notification - namespaces [prod] found as specified")
	h2 := entry(20, "NonCompliant; violation - namespaces [prod] found but not as specified")
	h3 := entry(30, "Compliant; notification - namespaces [prod] found as specified")
	setHistory(h0)

	s, err := open()
	require.NoError(t, err)
	stop := startRecorder(t, s)
	waitEvents(t, s, cluster, 1)
	setHistory(h1, h0)
	waitEvents(t, s, cluster, 2)
	stop()
	require.NoError(t, s.Close())

	setHistory(h2, h1, h0) // while the hub is down

	s, err = open()
	require.NoError(t, err)
	defer s.Close()
	stop = startRecorder(t, s)
	defer stop()
	waitEvents(t, s, cluster, 3)
	setHistory(h3, h2, h1, h0)
	got := waitEvents(t, s, cluster, 4)
	var states []compliance.State
	for _, e := range got {
		require.Equal(t, "governance/policy-ns", e.Policy)
		require.Equal(t, "ns-check", e.Template)
		states = append(states, e.State)
	}
	require.Equal(t, []compliance.State{compliance.NonCompliant, compliance.Compliant, compliance.NonCompliant, compliance.Compliant}, states)
	rem, err := history.Remediations(ctx, s, history.Query{Cluster: cluster})
	require.NoError(t, err)
	require.Len(t, rem, 2)
	require.Equal(t, 10*time.Minute, rem[1].Duration)
}

// waitEvents waits until the store holds want events of the cluster (never
// more) and returns them.
func waitEvents(t *testing.T, s history.Store, cluster string, want int) []history.Event {
	t.Helper()
	var got []history.Event
	var err error
	require.Eventually(t, func() bool {
		got, err = s.Events(context.Background(), history.Query{Cluster: cluster})
		return err != nil || len(got) >= want
	}, time.Minute, 50*time.Millisecond, "want %d events of %s", want, cluster)
	require.NoError(t, err)
	require.Len(t, got, want, "more events than history entries: %+v", got)
	return got
}

// TestForgedReplicasNotRecorded: a Policy labelled as a replica is recorded
// only when it is shaped as one and sits in a ManagedCluster's namespace. A
// user who may write Policies and their status in a namespace of their own, or
// in one cluster's namespace, cannot put history into another root's or
// another cluster's record.
func TestForgedReplicasNotRecorded(t *testing.T) {
	ctx := context.Background()
	c, err := client.New(hubConfig, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	for _, ns := range []string{"team-a", "east", "west", "team-c"} {
		require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	for _, mc := range []string{"east", "west"} {
		require.NoError(t, c.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: mc}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}))
		require.NoError(t, testenv.MarkAccepted(ctx, c, mc))
	}
	// A pending cluster (anyone with the bootstrap credential may create
	// one) named after a namespace a tenant writes Policies in.
	require.NoError(t, c.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "team-c"}}))
	s, err := history.Open(ctx, filepath.Join(t.TempDir(), "compliance.db"))
	require.NoError(t, err)
	defer s.Close()
	stop := startRecorder(t, s)
	defer stop()

	when := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	withHistory := func(ns, name string, labels map[string]string, msg string) {
		t.Helper()
		tmpl := &policyv1.PolicyTemplate{}
		tmpl.ObjectDefinition.Raw = []byte(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy","metadata":{"name":"encryption"},"spec":{"remediationAction":"inform","object-templates":[]}}`)
		p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: policyv1.PolicySpec{PolicyTemplates: []*policyv1.PolicyTemplate{tmpl}}}
		require.NoError(t, c.Create(ctx, p))
		p.Status.Details = []*policyv1.DetailsPerTemplate{{TemplateMeta: metav1.ObjectMeta{Name: "encryption"},
			History: []policyv1.ComplianceHistory{{LastTimestamp: when, Message: msg}}}}
		require.NoError(t, c.Status().Update(ctx, p))
	}
	replicaLabels := func(root, cluster string) map[string]string {
		return map[string]string{policyv1.RootPolicyLabel: root, policyv1.ClusterNameLabel: cluster, policyv1.ClusterNamespaceLabel: cluster}
	}
	forged := "Compliant; notification - forged"
	// In a namespace that is no cluster's, shaped as a replica of team-b's root for cluster team-a.
	withHistory("team-a", "team-b.policy-encryption", replicaLabels("team-b.policy-encryption", "team-a"), forged)
	// The same, claiming to be west's.
	withHistory("team-a", "team-b.policy-encryption-2", map[string]string{policyv1.RootPolicyLabel: "team-b.policy-encryption-2", policyv1.ClusterNameLabel: "west"}, forged)
	// In east's namespace, claiming to be west's replica.
	withHistory("east", "team-b.policy-encryption", replicaLabels("team-b.policy-encryption", "west"), forged)
	// In east's namespace, named otherwise than the root it claims.
	withHistory("east", "innocent", replicaLabels("team-b.policy-encryption", "east"), forged)
	// A root label without a namespace.
	withHistory("west", "policy-encryption", replicaLabels("policy-encryption", "west"), forged)
	// Shaped as a replica, in the namespace of a cluster the hub has not accepted.
	withHistory("team-c", "team-b.policy-encryption", replicaLabels("team-b.policy-encryption", "team-c"), forged)

	// West's real replica, written last: once it is recorded, the forged
	// ones (queued before it) have been seen.
	withHistory("west", "team-b.policy-encryption", replicaLabels("team-b.policy-encryption", "west"), "NonCompliant; violation - real")
	got := waitEvents(t, s, "west", 1)
	require.Equal(t, "NonCompliant; violation - real", got[0].Message)
	require.Equal(t, "team-b/policy-encryption", got[0].Policy)
	all, err := s.Events(ctx, history.Query{})
	require.NoError(t, err)
	for _, e := range all {
		require.NotEqual(t, forged, e.Message, "a forged entry was recorded: %+v", e)
	}
}
