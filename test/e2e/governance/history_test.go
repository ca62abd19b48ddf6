package governance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"flotilla.dev/flotilla/addons/governance"
	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/addonagent"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/policy/agent"
	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/history"
	"flotilla.dev/flotilla/policy/compliance/history/recorder"
)

const historyNs = "history"

// startRecorder runs the hub's compliance recorder (as `flotilla hub
// --compliance-db` does) on a store until the returned stop is called.
func startRecorder(t *testing.T, s history.Store) (stop func()) {
	t.Helper()
	mgr, err := ctrl.NewManager(env.Hub.Config, ctrl.Options{Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	require.NoError(t, err)
	require.NoError(t, recorder.Setup(mgr, recorder.Options{Store: s}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		require.NoError(t, <-done)
	}
}

// spokeHistory is what the store must hold for the replica: every compliance
// event of its template on the managed cluster, once.
func spokeHistory(t *testing.T, k kubernetes.Interface, cluster, replica, template, policy string) []history.Event {
	t.Helper()
	l, err := k.CoreV1().Events(cluster).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var out []history.Event
	for _, e := range l.Items {
		if e.InvolvedObject.Kind != "Policy" || e.InvolvedObject.Name != replica || e.Reason != agent.EventReason(cluster, template) {
			continue
		}
		at := e.LastTimestamp.Time
		if at.IsZero() {
			at = e.EventTime.Time
		}
		rep := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: replica, Labels: map[string]string{policyv1.RootPolicyLabel: replica}}}
		ev, err := history.FromHubEvent(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: e.Name},
			InvolvedObject: corev1.ObjectReference{Kind: "Policy", Namespace: cluster, Name: replica},
			Reason:         e.Reason, Message: e.Message, LastTimestamp: metav1.Unix(at.Unix(), 0),
			EventTime: metav1.NewMicroTime(history.PreciseTime(at, e.Name, e.EventTime.Time))}, rep)
		require.NoError(t, err)
		require.Equal(t, policy, ev.Policy)
		ev.Time = ev.Time.Truncate(time.Microsecond) // as stored
		out = append(out, ev)
	}
	sortEvents(out)
	return out
}

func sortEvents(es []history.Event) {
	sort.Slice(es, func(i, j int) bool {
		if !es[i].Time.Equal(es[j].Time) {
			return es[i].Time.Before(es[j].Time)
		}
		return es[i].Message < es[j].Message
	})
}

// flap records n compliance transitions of template on the managed cluster's
// copy of replica, a second apart from start, as the config-policy-controller
// would.
func flap(t *testing.T, k kubernetes.Interface, cluster, replica, template string, start time.Time, from, n int) {
	t.Helper()
	var local policyv1.Policy
	require.Eventually(t, func() bool {
		return spokeCli(t, 0).Get(context.Background(), clientKey(cluster, replica), &local) == nil
	}, timeout, tick, "the copy of %s on %s", replica, cluster)
	for i := from; i < from+n; i++ {
		at := metav1.NewTime(start.Add(time.Duration(i) * time.Second))
		msg, typ := fmt.Sprintf("NonCompliant; violation - flap %d", i), corev1.EventTypeWarning
		if i%2 == 1 {
			msg, typ = fmt.Sprintf("Compliant; notification - flap %d", i), corev1.EventTypeNormal
		}
		_, err := k.CoreV1().Events(cluster).Create(context.Background(), &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.flap%02d", replica, i), Namespace: cluster},
			InvolvedObject: corev1.ObjectReference{APIVersion: policyv1.GroupVersion.String(), Kind: "Policy", Namespace: cluster, Name: replica, UID: local.UID},
			Reason:         agent.EventReason(cluster, template), Message: msg, Type: typ,
			Source:         corev1.EventSource{Component: governance.ConfigPolicyName},
			FirstTimestamp: at, LastTimestamp: at, Count: 1,
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// storedHistory waits until the store holds want's number of events of the
// policy on the cluster and returns them.
func storedHistory(t *testing.T, s history.Store, policy, cluster string, want int) []history.Event {
	t.Helper()
	var got []history.Event
	require.Eventually(t, func() bool {
		var err error
		got, err = s.Events(context.Background(), history.Query{Policy: policy, Cluster: cluster})
		return err == nil && len(got) >= want
	}, timeout, tick, "want %d recorded events", want)
	for i := range got {
		got[i].Seq = 0 // the store's numbering, not the cluster's
	}
	sortEvents(got)
	return got
}

// TestHistoryFromSpokeEvents: twelve compliance transitions on a managed
// cluster while the hub's recorder is stopped (the replica's history keeps
// ten) are all recorded once it starts again, each exactly once, and a
// further restart adds nothing.
func TestHistoryFromSpokeEvents(t *testing.T) {
	ctx := context.Background()
	policyNamespace(t, historyNs)
	bindPolicy(t, historyNs, "policy-flap", policyv1.Inform, `{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy",
 "metadata":{"name":"flap-check"},"spec":{"remediationAction":"inform","object-templates":[
  {"complianceType":"musthave","objectDefinition":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}}]}}`)
	const cluster, replica, template, policy = "cluster1", historyNs + ".policy-flap", "flap-check", historyNs + "/policy-flap"
	k := kubernetes.NewForConfigOrDie(env.Clusters[0].Config)
	path := filepath.Join(t.TempDir(), "compliance.db")
	open := func() history.Store {
		s, err := history.Open(ctx, path)
		require.NoError(t, err)
		return s
	}

	// The hub's recorder is down while the cluster flaps twelve times (an
	// hour ago, so the engine's own event stays the newest).
	flap(t, k, cluster, replica, template, time.Now().Add(-time.Hour).Truncate(time.Second), 0, 12)
	var want []history.Event
	require.Eventually(t, func() bool {
		want = spokeHistory(t, k, cluster, replica, template, policy)
		if len(want) < 13 { // the twelve and the engine's evaluation
			return false
		}
		l, err := kubernetes.NewForConfigOrDie(env.Hub.Config).CoreV1().Events(cluster).List(ctx, metav1.ListOptions{LabelSelector: ocm.HistoryLabel + "=true"})
		n := 0
		for _, e := range l.Items {
			if e.InvolvedObject.Name == replica {
				n++
			}
		}
		return err == nil && n == len(want)
	}, timeout, tick, "every compliance event forwarded to the hub")
	var rep policyv1.Policy
	require.NoError(t, hubCli.Get(ctx, clientKey(cluster, replica), &rep))
	for _, d := range rep.Status.Details {
		assert.LessOrEqual(t, len(d.History), agent.MaxHistory, "the replica keeps the newest ten only")
	}

	s := open()
	stop := startRecorder(t, s)
	got := storedHistory(t, s, policy, cluster, len(want))
	assert.Equal(t, want, got, "every transition recorded exactly once")
	stop()
	require.NoError(t, s.Close())

	// Restarted again, with two more transitions: those two are added, nothing else.
	flap(t, k, cluster, replica, template, time.Now().Add(-time.Hour).Truncate(time.Second), 12, 2)
	s = open()
	defer s.Close()
	stop = startRecorder(t, s)
	defer stop()
	got = storedHistory(t, s, policy, cluster, len(want)+2)
	assert.Equal(t, spokeHistory(t, k, cluster, replica, template, policy), got, "the new transitions once, the old ones not again")
}

// TestForwardedHistoryIdentity: a cluster's framework credential cannot put
// history in another cluster's namespace, and what it puts in its own
// namespace is recorded for its own cluster only, about its own replicas only.
func TestForwardedHistoryIdentity(t *testing.T) {
	ctx := context.Background()
	sk := kubernetes.NewForConfigOrDie(env.Clusters[0].Config)
	var cred *addonagent.HubCredential
	require.Eventually(t, func() bool {
		var err error
		cred, err = addonagent.ReadHubCredential(ctx, sk, ocm.DefaultAddonInstallNamespace, governance.FrameworkName)
		return err == nil
	}, timeout, tick)
	c, err := client.New(cred.Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	require.NoError(t, hubCli.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "history-only2"}}))
	// A replica that exists in cluster2's namespace only.
	only2 := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster2", Name: "history-only2.p", Labels: map[string]string{
		policyv1.RootPolicyLabel: "history-only2.p", policyv1.ClusterNameLabel: "cluster2", policyv1.ClusterNamespaceLabel: "cluster2"}},
		Spec: policyv1.PolicySpec{PolicyTemplates: []*policyv1.PolicyTemplate{}}}
	require.NoError(t, hubCli.Create(ctx, only2))

	at := metav1.NewTime(time.Now().Add(-30 * time.Minute).Truncate(time.Second))
	event := func(ns, name, replica, reason string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{ocm.HistoryLabel: "true"}},
			InvolvedObject: corev1.ObjectReference{APIVersion: policyv1.GroupVersion.String(), Kind: "Policy", Namespace: ns, Name: replica},
			Reason:         reason, Message: "NonCompliant; violation - forged", Type: corev1.EventTypeWarning,
			FirstTimestamp: at, LastTimestamp: at, Count: 1}
	}
	// Another cluster's namespace: refused by the hub.
	err = c.Create(ctx, event("cluster2", "forged.1", only2.Name, "policy: cluster2/x"))
	assert.True(t, apierrors.IsForbidden(err), "cluster1's agent creates an event in cluster2's namespace: want 403, got %v", err)

	s, err := history.Open(ctx, filepath.Join(t.TempDir(), "compliance.db"))
	require.NoError(t, err)
	defer s.Close()
	stop := startRecorder(t, s)
	defer stop()
	// Its own namespace, about cluster2's replica or naming cluster2: not recorded.
	require.NoError(t, c.Create(ctx, event("cluster1", "forged.2", only2.Name, "policy: cluster1/x")))
	var own policyv1.PolicyList
	require.Eventually(t, func() bool {
		return hubCli.List(ctx, &own, client.InNamespace("cluster1"), client.HasLabels{policyv1.RootPolicyLabel}) == nil && len(own.Items) > 0
	}, timeout, tick, "a replica in cluster1's namespace")
	mine := own.Items[0]
	require.NoError(t, c.Create(ctx, event("cluster1", "forged.3", mine.Name, "policy: cluster2/x")))
	// Its own replica, a template the replica does not carry: not recorded,
	// as such an entry in the replica's status is not.
	require.NoError(t, c.Create(ctx, event("cluster1", "forged.4", mine.Name, "policy: cluster1/invented")))
	// Then a genuine one, about a template of its replica, recorded for
	// cluster1; the queue is in order, so the ones before it were decided
	// first.
	require.NotEmpty(t, mine.Spec.PolicyTemplates)
	var meta struct {
		Metadata struct{ Name string } `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(mine.Spec.PolicyTemplates[0].ObjectDefinition.Raw, &meta))
	// About a template of its own replica, but backdated two days (a
	// cluster holds its events an hour): not recorded.
	backdated := event("cluster1", "forged.5", mine.Name, "policy: cluster1/"+meta.Metadata.Name)
	backdated.LastTimestamp = metav1.NewTime(time.Now().Add(-48 * time.Hour).Truncate(time.Second))
	backdated.FirstTimestamp = backdated.LastTimestamp
	backdated.Message = "Compliant; notification - backdated"
	require.NoError(t, c.Create(ctx, backdated))
	genuine := event("cluster1", "genuine.1", mine.Name, "policy: cluster1/"+meta.Metadata.Name)
	genuine.Message = "NonCompliant; violation - genuine"
	require.NoError(t, c.Create(ctx, genuine))
	var got []history.Event
	require.Eventually(t, func() bool {
		all, err := s.Events(ctx, history.Query{Template: meta.Metadata.Name, Cluster: "cluster1"})
		got = nil
		for _, e := range all {
			if e.Message == genuine.Message {
				got = append(got, e)
			}
		}
		return err == nil && len(got) == 1
	}, timeout, tick)
	assert.Equal(t, "cluster1", got[0].Cluster)
	forged, err := s.Events(ctx, history.Query{Template: "x"})
	require.NoError(t, err)
	assert.Empty(t, forged, "events about another cluster's replica or naming another cluster are not recorded")
	invented, err := s.Events(ctx, history.Query{Template: "invented"})
	require.NoError(t, err)
	assert.Empty(t, invented, "an event about a template the replica does not carry is not recorded")
	all, err := s.Events(ctx, history.Query{Cluster: "cluster1"})
	require.NoError(t, err)
	for _, e := range all {
		assert.NotEqual(t, backdated.Message, e.Message, "a backdated forwarded event is not recorded")
	}
	only2Events, err := s.Events(ctx, history.Query{Policy: "history-only2/p"})
	require.NoError(t, err)
	assert.Empty(t, only2Events)
}

// TestHistoryDemoSequence is the demo's sequence end to end, recorded as it
// happens: an inform policy NonCompliant on both clusters, then enforced,
// which the engine remediates at once (often within the same second). The
// history reads NonCompliant then Compliant on each cluster, its newest state
// is the replica's, it counts one remediation per cluster, and the store's
// chain verifies.
func TestHistoryDemoSequence(t *testing.T) {
	ctx := context.Background()
	const ns, name, template = "history-demo", "policy-demo", "demo-ns"
	policyNamespace(t, ns)
	s, err := history.Open(ctx, filepath.Join(t.TempDir(), "compliance.db"))
	require.NoError(t, err)
	defer s.Close()
	stop := startRecorder(t, s)
	defer stop()
	bindPolicy(t, ns, name, policyv1.Inform, `{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy",
 "metadata":{"name":"`+template+`"},"spec":{"remediationAction":"inform","object-templates":[
  {"complianceType":"musthave","objectDefinition":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"history-demo-governance"}}}]}}`)
	clusters := []string{"cluster1", "cluster2"}
	for _, c := range clusters {
		eventuallyReplica(t, c, ns+"."+name, policyv1.NonCompliant)
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"remediationAction":"enforce"}}`))
	require.NoError(t, hubCli.Patch(ctx, &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}, patch))
	for _, c := range clusters {
		eventuallyReplica(t, c, ns+"."+name, policyv1.Compliant)
		var got []string
		require.Eventually(t, func() bool {
			evs, err := s.Events(ctx, history.Query{Policy: ns + "/" + name, Cluster: c})
			if err != nil || len(evs) == 0 {
				return false
			}
			got = nil
			for _, x := range history.Transitions(evs) {
				got = append(got, string(x.From)+"->"+string(x.State))
			}
			return evs[len(evs)-1].State == compliance.Compliant
		}, timeout, tick, "the newest recorded state of %s on %s is the replica's (Compliant)", name, c)
		assert.Equal(t, []string{"->NonCompliant", "NonCompliant->Compliant"}, got, "transitions on %s", c)
		rem, err := history.Remediations(ctx, s, history.Query{Policy: ns + "/" + name, Cluster: c})
		require.NoError(t, err)
		assert.Len(t, rem, 1, "one remediation on %s", c)
	}
	v, err := s.Verify(ctx)
	require.NoError(t, err)
	assert.True(t, v.OK(), "the chain verifies: %+v", v.Broken)
}
