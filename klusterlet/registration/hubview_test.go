package registration

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/test/testenv"
)

// TestHubViewOnARealHub: the agent's watch of its own ManagedCluster tells
// its followers "none" when it starts and finds none (a cluster deleted while
// the watch was down fires no event on the first list), follows a creation,
// an acceptance and a deletion; a change the status round must answer (the
// hub marking the cluster Available Unknown) starts the round, the echo of
// the agent's own report does not; the addons of the cluster namespace are
// listed from the watch, and an addon added starts an addon round.
func TestHubViewOnARealHub(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := &Agent{opts: Options{ClusterName: "c1"}, statusKick: make(chan struct{}, 1), addonKick: make(chan struct{}, 1)}
	seen := make(chan *clusterv1.ManagedCluster, 64)
	a.FollowOwnCluster(func(mc *clusterv1.ManagedCluster) { seen <- mc })
	done := make(chan error, 1)
	go func() { done <- a.watchHub(ctx, env.Hub.Config, logr.Discard()) }()
	next := func() *clusterv1.ManagedCluster {
		t.Helper()
		select {
		case mc := <-seen:
			return mc
		case <-time.After(time.Minute):
			t.Fatal("nothing followed within a minute")
			return nil
		}
	}
	kicked := func(c chan struct{}) bool {
		select {
		case <-c:
			return true
		case <-time.After(30 * time.Second):
			return false
		}
	}
	require.Nil(t, next(), "no ManagedCluster at the start: none")

	// The addons of the namespace come from the watch once it has listed.
	require.True(t, kicked(a.addonKick), "the first list starts an addon round")
	list, known := a.view.addonList()
	require.True(t, known)
	assert.Empty(t, list)

	cs := clusterclient.NewForConfigOrDie(env.Hub.Config)
	mc, err := cs.ClusterV1().ManagedClusters().Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"},
		Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true, LeaseDurationSeconds: 60}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NotNil(t, next(), "created")
	require.True(t, kicked(a.statusKick), "not Joined yet: the status round answers")

	// The agent reports Joined and Available; the echo starts no round.
	a.reportMu.Lock()
	a.reported = reported{available: metav1.ConditionTrue, lease: 60}
	a.reportMu.Unlock()
	meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionJoined,
		Status: metav1.ConditionTrue, Reason: ReasonJoined, Message: "joined"})
	meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable,
		Status: metav1.ConditionTrue, Reason: ReasonAvailable, Message: "available"})
	mc, err = cs.ClusterV1().ManagedClusters().UpdateStatus(ctx, mc, metav1.UpdateOptions{})
	require.NoError(t, err)
	for got := next(); got.ResourceVersion != mc.ResourceVersion; got = next() {
	}
	select {
	case <-a.statusKick:
		t.Fatal("the echo of the agent's own report started a status round")
	default:
	}
	// The hub marks it Unknown (its lease went stale): the round answers.
	meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable,
		Status: metav1.ConditionUnknown, Reason: "ManagedClusterLeaseUpdateStopped", Message: "stale"})
	_, err = cs.ClusterV1().ManagedClusters().UpdateStatus(ctx, mc, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.True(t, kicked(a.statusKick), "Available Unknown starts the status round")
	cached, known := a.view.ownCluster(nil)
	require.True(t, known)
	assert.Equal(t, metav1.ConditionUnknown, meta.FindStatusCondition(cached.Status.Conditions, clusterv1.ManagedClusterConditionAvailable).Status,
		"the status round starts from the view, no read")

	// An addon enabled on the hub starts an addon round and is listed.
	_, err = kubernetes.NewForConfigOrDie(env.Hub.Config).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = addonclient.NewForConfigOrDie(env.Hub.Config).AddonV1alpha1().ManagedClusterAddOns("c1").Create(ctx,
		&addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "c1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.True(t, kicked(a.addonKick), "an addon added starts an addon round")
	require.Eventually(t, func() bool { l, _ := a.view.addonList(); return len(l) == 1 && l[0].Name == "demo" }, time.Minute, 50*time.Millisecond)

	// Deleted: none.
	require.NoError(t, cs.ClusterV1().ManagedClusters().Delete(ctx, "c1", metav1.DeleteOptions{}))
	for got := next(); got != nil; got = next() {
	}
	cancel()
	require.NoError(t, <-done)
	_, known = a.view.ownCluster(nil)
	assert.False(t, known, "a view whose watch has ended is not the hub's: the status round reads the hub")
	_, known = a.view.ownCluster(&hubTransport{})
	assert.False(t, known, "nor is one of another hub transport")
}

func TestAnswerNeeded(t *testing.T) {
	cluster := func(lease int32, conds ...metav1.Condition) *clusterv1.ManagedCluster {
		return &clusterv1.ManagedCluster{Spec: clusterv1.ManagedClusterSpec{LeaseDurationSeconds: lease},
			Status: clusterv1.ManagedClusterStatus{Conditions: conds}}
	}
	cond := func(t string, s metav1.ConditionStatus) metav1.Condition { return metav1.Condition{Type: t, Status: s} }
	joined := cond(clusterv1.ManagedClusterConditionJoined, metav1.ConditionTrue)
	avail := func(s metav1.ConditionStatus) metav1.Condition {
		return cond(clusterv1.ManagedClusterConditionAvailable, s)
	}
	up := reported{available: metav1.ConditionTrue, lease: 60}
	down := reported{available: metav1.ConditionFalse, lease: 60}
	for _, tc := range []struct {
		name string
		mc   *clusterv1.ManagedCluster
		r    reported
		want bool
	}{
		{"the echo of the agent's own report", cluster(60, joined, avail(metav1.ConditionTrue)), up, false},
		{"the hub marked it Unknown", cluster(60, joined, avail(metav1.ConditionUnknown)), up, true},
		{"not Joined yet", cluster(60), up, true},
		{"no Available yet", cluster(60, joined), up, true},
		{"the lease duration changed", cluster(30, joined, avail(metav1.ConditionTrue)), up, true},
		{"no lease duration in the spec", cluster(0, joined, avail(metav1.ConditionTrue)), up, false},
		{"the agent reported the cluster unavailable, and so it reads", cluster(60, joined, avail(metav1.ConditionFalse)), down, false},
		{"nothing reported yet", cluster(60, joined, avail(metav1.ConditionTrue)), reported{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, answerNeeded(tc.mc, tc.r)) })
	}
}

func TestKickSpacing(t *testing.T) {
	const retry, period = 5 * time.Second, 10 * time.Second
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	var k kickSpacing
	for _, step := range []struct {
		at   time.Duration // since t0
		want time.Duration
	}{
		{0, 0},                              // the first change: at once
		{1 * time.Second, 4 * time.Second},  // again soon: retry after the first
		{6 * time.Second, 9 * time.Second},  // and again: twice that, from the last
		{16 * time.Second, 9 * time.Second}, // at most a period apart from then on
		{25 * time.Second, 10 * time.Second},
		{60 * time.Second, 0}, // a quiet period: at once again
	} {
		assert.Equal(t, step.want, k.next(t0.Add(step.at), retry, period), "a change at %s", step.at)
	}
}
