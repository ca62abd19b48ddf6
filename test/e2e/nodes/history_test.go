//go:build nodes

package nodes_test

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/addons/governance"
	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	hubpkg "flotilla.dev/flotilla/hub"
	"flotilla.dev/flotilla/hub/deploy"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/pgtest"
	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/apigroup"
	"flotilla.dev/flotilla/policy/compliance/document"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// TestComplianceHistoryFailover: `init --deploy --compliance-db-secret`
// points both hub Pods at one PostgreSQL (a throwaway server on the nodes'
// bridge address, password authentication), by secretKeyRef: the password is
// in no Pod spec, argument or log. An inform policy on cluster1 goes
// NonCompliant and Compliant as the test creates and deletes a ConfigMap;
// the leader hub Pod (the Lease holder) is deleted between two changes and
// one change is made while it goes. Read through the store's API, the
// history holds every transition the cluster forwarded, each once, in order,
// across the failover, in one window.
//
// The same history through the hub apiserver: the hub Pods serve the
// aggregated API compliance.flotilla.dev behind their Service, and its
// APIService turns Available. The CLI, with nothing but a ServiceAccount
// token kubeconfig that may list policies in the policy's namespace, reads
// `compliance history` and `compliance report --since` before and after the
// failover and sees exactly the recorded transitions; a user with no rights
// sees nothing of that namespace; `compliance verify` is refused (403) to the
// limited user and, as the admin, finds the whole chain and the head the
// report carried before the failover.
func TestComplianceHistoryFailover(t *testing.T) {
	ctx := context.Background()
	env := startEnv(t, "fh-", 1)
	hubKubeconfig := filepath.Join(env.dataDir, "hub.kubeconfig")
	hub := config(t, hubKubeconfig)
	cs := kubernetes.NewForConfigOrDie(hub)
	hubc := hubClient(t, hub)
	spoke := kubernetes.NewForConfigOrDie(config(t, filepath.Join(env.dataDir, "clusters", "cluster1.kubeconfig")))

	// The hub apiserver's address is the host's on the nodes' bridge: the
	// Pods reach a server listening there.
	u, err := url.Parse(hub.Host)
	require.NoError(t, err)
	pg := pgtest.StartWith(t, pgtest.Options{Listen: u.Hostname()})
	dbURL := pg.NewDatabase(t)
	store, err := history.Open(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })

	const secret = "compliance-db"
	deployWith := func(args ...string) (string, error) {
		return flotillaRun(t, append([]string{"init", "--deploy", "--kubeconfig", hubKubeconfig, "--image", image, "--timeout", "3m"}, args...)...)
	}
	t.Run("a missing Secret or key is refused, naming it", func(t *testing.T) {
		out, err := deployWith("--compliance-db-secret", secret)
		require.Error(t, err)
		assert.Contains(t, out, "Secret open-cluster-management-hub/compliance-db not found")
		assert.NotContains(t, out, "==> deploying", "refused before anything changes")
		_, err = cs.CoreV1().Secrets(deploy.Namespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret},
			StringData: map[string]string{"dsn": dbURL}}, metav1.CreateOptions{})
		require.NoError(t, err)
		out, err = deployWith("--compliance-db-secret", secret)
		require.Error(t, err)
		assert.Contains(t, out, `Secret open-cluster-management-hub/compliance-db has no key "url" (its keys: [dsn])`)
		assert.NotContains(t, out, pg.Password())
	})

	t.Run("the hub Pods record into PostgreSQL, the URL by secretKeyRef", func(t *testing.T) {
		_, err := cs.CoreV1().Secrets(deploy.Namespace).Update(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: deploy.Namespace},
			StringData: map[string]string{"url": dbURL}}, metav1.UpdateOptions{})
		require.NoError(t, err)
		start := time.Now()
		out, err := deployWith("--compliance-db-secret", secret)
		require.NoError(t, err, out)
		t.Logf("init --deploy --compliance-db-secret rolled the hub out in %s", time.Since(start).Round(100*time.Millisecond))
		assert.NotContains(t, out, pg.Password())
		assert.Contains(t, out, "compliance history: PostgreSQL, URL from Secret open-cluster-management-hub/compliance-db")

		pods := hubPods(t, cs)
		require.Len(t, pods, 2, "both replicas share the database")
		for _, p := range pods {
			c := p.Spec.Containers[0]
			assert.NotContains(t, strings.Join(c.Args, " "), pg.Password())
			var ref *corev1.SecretKeySelector
			for _, e := range c.Env {
				assert.NotContains(t, e.Value, pg.Password())
				if e.Name == deploy.ComplianceDBEnv && e.ValueFrom != nil {
					ref = e.ValueFrom.SecretKeyRef
				}
			}
			require.NotNil(t, ref, "pod %s takes the URL from the Secret", p.Name)
			assert.Equal(t, secret, ref.Name)
			assert.Equal(t, deploy.ComplianceDBKey, ref.Key)
		}
		// The leader is a Pod of this rollout (the old ones released the Lease).
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.Contains(c, podNames(hubPods(t, cs)), hubLeader(ctx, cs))
		}, timeout, tick)
	})

	t.Run("the hub Pods serve the aggregated API: its APIService is Available", func(t *testing.T) {
		apis := aggregator.NewForConfigOrDie(hub).ApiregistrationV1().APIServices()
		serving, err := cs.CoreV1().Secrets(deploy.Namespace).Get(ctx, deploy.ServingSecret, metav1.GetOptions{})
		require.NoError(t, err)
		start := time.Now()
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			s, err := apis.Get(ctx, apigroup.APIServiceName, metav1.GetOptions{})
			require.NoError(c, err)
			require.NotNil(c, s.Spec.Service)
			assert.Equal(c, deploy.Namespace+"/"+deploy.Name, s.Spec.Service.Namespace+"/"+s.Spec.Service.Name, "the hub Pods' Service")
			assert.Equal(c, ptr.To[int32](hubpkg.DefaultAPIPort), s.Spec.Service.Port)
			assert.Equal(c, string(serving.Data["ca.crt"]), string(s.Spec.CABundle), "the serving certificate's CA")
			var available *apiregistrationv1.APIServiceCondition
			for i := range s.Status.Conditions {
				if s.Status.Conditions[i].Type == apiregistrationv1.Available {
					available = &s.Status.Conditions[i]
				}
			}
			require.NotNil(c, available, "no Available condition yet")
			assert.Equal(c, apiregistrationv1.ConditionTrue, available.Status, "%s: %s", available.Reason, available.Message)
		}, timeout, tick)
		t.Logf("APIService %s Available %s after the rollout", apigroup.APIServiceName, time.Since(start).Round(100*time.Millisecond))
		// Every replica serves it and registers it, the follower as well as the leader.
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			pods := hubPods(t, cs)
			require.Len(c, pods, 2)
			for _, p := range pods {
				logs := podLogs(t, cs, p.Name)
				assert.Contains(c, logs, `"aggregated API served"`, p.Name)
				assert.Contains(c, logs, `"aggregated API registered"`, p.Name)
			}
		}, timeout, tick)
	})

	enableAddons(t, env.dataDir, hubc, spoke, governance.FrameworkName, governance.ConfigPolicyName)
	const ns, name = "history-e2e", "history-probe"
	placeInformPolicy(t, hubc, ns, name)
	policy := ns + "/" + name
	replica := ns + "." + name

	// The CLI's users: tokens of ServiceAccounts, no certificate. auditor may
	// list policies in ns only; nobody may do nothing.
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "compliance-users"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	limited, limitedCfg := serviceAccountUser(t, cs, hub, "compliance-users", "auditor", ns)
	nobody, _ := serviceAccountUser(t, cs, hub, "compliance-users", "nobody", "")
	// throughHub reads the report and the history with the CLI as the user of
	// kubeconfig (no --compliance-db) and returns the transitions of the
	// policy on cluster1 that each holds, and the report's chain head.
	// The chain head folds every namespace's rows, so only a reader of every
	// namespace gets it: head is "" for anyone else.
	throughHub := func(c require.TestingT, kubeconfig string) (report, hist []string, head string) {
		var doc document.Document
		out, err := flotillaJSON(&doc, "compliance", "report", "--since", "1h", "-o", "json", "--kubeconfig", kubeconfig)
		require.NoError(c, err, out)
		require.NotNil(c, doc.Report, out)
		require.NotNil(c, doc.History, "the report has the history")
		if doc.HistoryHead != nil {
			head = doc.HistoryHead.Hash
		}
		var h document.HistoryDocument
		out, err = flotillaJSON(&h, "compliance", "history", "--since", "1h", "-o", "json", "--kubeconfig", kubeconfig)
		require.NoError(c, err, out)
		require.NotNil(c, h.Summary, out)
		return transitionKeys(doc.History.Changes, policy), transitionKeys(h.Changes, policy), head
	}
	recorded := func(c require.TestingT) []string {
		evs, err := store.Events(ctx, history.Query{Policy: policy, Cluster: "cluster1"})
		require.NoError(c, err)
		return transitionKeys(history.Transitions(evs), policy)
	}

	rows := func(c require.TestingT) []history.Event {
		evs, err := store.Events(ctx, history.Query{Policy: policy, Cluster: "cluster1"})
		require.NoError(c, err)
		return evs
	}
	var want []compliance.State
	// step makes a change on cluster1 and waits until the transition it
	// causes is recorded, as the only new row.
	step := func(state compliance.State, change func()) {
		t.Helper()
		if n := len(want); n > 0 {
			// The store names an event by its whole second (as OCM's history
			// does): a transition back in the same second would be that row.
			last := rows(t)[n-1].Time
			require.Eventually(t, func() bool { return time.Now().Truncate(time.Second).After(last) }, 2*time.Second, 10*time.Millisecond)
		}
		change()
		want = append(want, state)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			got := rows(c)
			require.Len(c, got, len(want), "rows: %v", states(got))
			assert.Equal(c, state, got[len(got)-1].State)
		}, timeout, tick, "transition %d (%s) recorded", len(want), state)
	}
	cms := spoke.CoreV1().ConfigMaps("default")
	create := func() {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	remove := func() { require.NoError(t, cms.Delete(ctx, name, metav1.DeleteOptions{})) }

	begin := time.Now().Add(-time.Minute)
	step(compliance.NonCompliant, func() {}) // placed: the ConfigMap is missing
	step(compliance.Compliant, create)
	step(compliance.NonCompliant, remove)
	before := len(want)

	var headBefore string
	t.Run("through the hub apiserver, the limited user reads the history, and nobody nothing", func(t *testing.T) {
		want := recorded(t)
		require.Len(t, want, before)
		report, hist, head := throughHub(t, limited)
		assert.Equal(t, want, report, "compliance report --since 1h")
		assert.Equal(t, want, hist, "compliance history --since 1h")
		assert.Empty(t, head, "a reader of one namespace gets no fleet-wide chain head")
		// The admin reads every namespace, so the report carries the head.
		report, _, head = throughHub(t, hubKubeconfig)
		assert.Equal(t, want, report, "compliance report --since 1h, as the admin")
		require.Len(t, head, 64, "the admin's report carries the chain head")
		headBefore = head

		for _, args := range [][]string{{"report", "--since", "1h"}, {"history", "--since", "1h"}} {
			stdout, stderr, code, err := flotillaSplit(append([]string{"compliance"}, append(args, "-o", "json", "--kubeconfig", nobody)...)...)
			require.NoError(t, err)
			require.Zero(t, code, stderr)
			assert.NotContains(t, stdout, ns+"/", "compliance %s: nothing of namespace %s for a user with no rights", args[0], ns)
			assert.NotContains(t, stdout, replica, "compliance %s: nothing of namespace %s for a user with no rights", args[0], ns)
		}
	})

	first := hubLeader(ctx, cs)
	require.NotEmpty(t, first)
	logs := podLogs(t, cs, first)
	assert.Contains(t, logs, `history="postgres"`, "the leader records into PostgreSQL")
	assert.NotContains(t, logs, pg.Password(), "the URL's password is in no log")
	failoverAt := time.Now()
	require.NoError(t, cs.CoreV1().Pods(deploy.Namespace).Delete(ctx, first, metav1.DeleteOptions{}))
	// A change while the leader goes: whoever leads records it, once.
	step(compliance.Compliant, create)
	var second string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		second = hubLeader(ctx, cs)
		assert.NotEmpty(c, second)
		assert.NotEqual(c, first, second, "another replica took the Lease over")
	}, timeout, tick)
	tookOver := time.Now()
	t.Logf("leader %s deleted; %s leads %s later", first, second, tookOver.Sub(failoverAt).Round(100*time.Millisecond))
	step(compliance.NonCompliant, remove)
	step(compliance.Compliant, create)

	t.Run("nothing lost or duplicated, in order, across the failover", func(t *testing.T) {
		// Every transition the cluster forwarded to the hub (the Events the
		// governance framework Pod writes) is a row, and nothing else is.
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			var rep policyv1.Policy
			require.NoError(c, hubc.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: replica}, &rep))
			evs, err := cs.CoreV1().Events("cluster1").List(ctx, metav1.ListOptions{LabelSelector: ocm.HistoryLabel + "=true"})
			require.NoError(c, err)
			var forwarded []string
			for i := range evs.Items {
				if evs.Items[i].InvolvedObject.Name != replica {
					continue
				}
				e, err := history.FromHubEvent(&evs.Items[i], &rep)
				require.NoError(c, err)
				forwarded = append(forwarded, eventKey(e))
			}
			var recorded []string
			for _, e := range rows(c) {
				recorded = append(recorded, eventKey(e))
			}
			slices.Sort(forwarded)
			slices.Sort(recorded)
			assert.Equal(c, forwarded, recorded, "the recorded rows are the forwarded transitions, each once")
		}, timeout, tick)
		got := rows(t)
		assert.Equal(t, want, states(got), "each transition once, in order")

		w, err := store.Window(ctx, history.Query{Policy: policy, Cluster: "cluster1", Since: begin})
		require.NoError(t, err)
		require.Len(t, w.Events, len(want), "one window holds the whole history")
		for i, e := range w.Events[:before] {
			assert.False(t, e.Time.After(failoverAt), "transition %d at %s came before the leader was deleted (%s)", i+1, e.Time, failoverAt)
		}
		for i, e := range w.Events[len(want)-2:] {
			assert.False(t, e.Time.Before(tookOver.Truncate(time.Second)), "transition %d at %s came after the takeover (%s)", len(want)-1+i, e.Time, tookOver)
		}
	})

	t.Run("through the hub apiserver, the history spans the failover", func(t *testing.T) {
		want := recorded(t)
		require.Len(t, want, len(states(rows(t))))
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			report, hist, _ := throughHub(c, limited)
			assert.Equal(c, want, report, "compliance report --since 1h")
			assert.Equal(c, want, hist, "compliance history --since 1h")
		}, timeout, tick)
		var h document.HistoryDocument
		out, err := flotillaJSON(&h, "compliance", "history", "--since", "1h", "-o", "json", "--kubeconfig", limited)
		require.NoError(t, err, out)
		var beforeFailover, afterTakeover int
		for _, c := range h.Changes {
			if c.Policy != policy {
				continue
			}
			if !c.Time.After(failoverAt) {
				beforeFailover++
			}
			if !c.Time.Before(tookOver.Truncate(time.Second)) {
				afterTakeover++
			}
		}
		assert.Equal(t, before, beforeFailover, "the transitions before the leader was deleted")
		assert.GreaterOrEqual(t, afterTakeover, 2, "the transitions after the takeover")
	})

	t.Run("compliance verify: refused to the limited user, the whole chain and the old head for the admin", func(t *testing.T) {
		_, stderr, code, err := flotillaSplit("compliance", "verify", "--kubeconfig", limited)
		require.NoError(t, err)
		assert.Equal(t, 1, code, stderr)
		assert.Contains(t, stderr, "system:serviceaccount:compliance-users:auditor may not list policies.policy.open-cluster-management.io in all namespaces")
		c, err := apigroup.NewClient(limitedCfg)
		require.NoError(t, err)
		_, err = c.Verify(ctx, "")
		assert.True(t, apierrors.IsForbidden(err), "403: %v", err)

		stdout, stderr, code, err := flotillaSplit("compliance", "verify", "--kubeconfig", hubKubeconfig, "--head", headBefore)
		require.NoError(t, err)
		require.Zero(t, code, "%s%s", stdout, stderr)
		assert.Contains(t, stdout, "Chain:       whole")
		assert.Contains(t, stdout, "Head given:  found at event")
		var v history.Verification
		out, err := flotillaJSON(&v, "compliance", "verify", "--kubeconfig", hubKubeconfig, "--head", headBefore, "-o", "json")
		require.NoError(t, err, out)
		assert.Contains(t, v.Found, headBefore, "the head the report carried before the failover")
		assert.True(t, v.OK(), "%+v", v)
		assert.Zero(t, v.BrokenLinks)
		assert.GreaterOrEqual(t, v.Events, len(want), "every recorded transition checked")
		direct, err := store.Verify(ctx, headBefore)
		require.NoError(t, err)
		assert.Equal(t, direct.Head, v.Head, "the store's head, read through the hub")
		assert.Contains(t, direct.Found, headBefore)
	})

	t.Run("the new leader logs no password either", func(t *testing.T) {
		for _, p := range hubPods(t, cs) {
			assert.NotContains(t, podLogs(t, cs, p.Name), pg.Password(), p.Name)
		}
	})
}

// placeInformPolicy places on every cluster (the environment has cluster1
// only) an inform policy that wants ConfigMap name in namespace default.
func placeInformPolicy(t *testing.T, hubc client.Client, ns, name string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, hubc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	require.NoError(t, hubc.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "global", Namespace: ns},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "global"}}))
	require.NoError(t, hubc.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "all", Namespace: ns},
		Spec: clusterv1beta1.PlacementSpec{ClusterSets: []string{"global"}}}))
	tmpl := fmt.Sprintf(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy",
 "metadata":{"name":%[1]q},
 "spec":{"remediationAction":"inform","severity":"low",
  "object-templates":[{"complianceType":"musthave","objectDefinition":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%[1]q,"namespace":"default"}}}]}}`, name)
	require.NoError(t, hubc.Create(ctx, &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: policyv1.PolicySpec{RemediationAction: policyv1.Inform, PolicyTemplates: []*policyv1.PolicyTemplate{
			{ObjectDefinition: runtime.RawExtension{Raw: []byte(tmpl)}}}}}))
	require.NoError(t, hubc.Create(ctx, &policyv1.PlacementBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		PlacementRef: policyv1.PlacementSubject{APIGroup: "cluster.open-cluster-management.io", Kind: "Placement", Name: "all"},
		Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: "Policy", Name: name}}}))
}

// hubLeader is the hub Pod holding the Lease flotilla-hub ("" when none).
func hubLeader(ctx context.Context, cs kubernetes.Interface) string {
	l, err := cs.CoordinationV1().Leases(deploy.Namespace).Get(ctx, deploy.Name, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	pod, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
	return pod
}

// hubPods are the hub's Pods that are not being deleted.
func hubPods(t *testing.T, cs kubernetes.Interface) []corev1.Pod {
	t.Helper()
	list, err := cs.CoreV1().Pods(deploy.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + deploy.Name})
	require.NoError(t, err)
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func podLogs(t *testing.T, cs kubernetes.Interface, pod string) string {
	t.Helper()
	b, err := cs.CoreV1().Pods(deploy.Namespace).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(context.Background())
	if apierrors.IsNotFound(err) {
		return ""
	}
	require.NoError(t, err)
	return string(b)
}

func states(evs []history.Event) []compliance.State {
	var out []compliance.State
	for _, e := range evs {
		out = append(out, e.State)
	}
	return out
}

// eventKey is an event's identity (all its fields), comparable as a string.
func eventKey(e history.Event) string {
	return strings.Join([]string{e.Policy, e.Template, e.Cluster, string(e.State), e.Message, e.Time.UTC().Format(time.RFC3339Nano)}, "|")
}

// transitionKeys are the keys of the transitions of policy on cluster1, with
// the state each came from.
func transitionKeys(ts []history.Transition, policy string) []string {
	var out []string
	for _, tr := range ts {
		if tr.Policy == policy && tr.Cluster == "cluster1" {
			out = append(out, string(tr.From)+">"+eventKey(tr.Event))
		}
	}
	return out
}
