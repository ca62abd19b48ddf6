package apigroup_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/internal/aggregated/aggregatedtest"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/pki"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/search/apigroup"
	"flotilla.dev/flotilla/search/index"
	"flotilla.dev/flotilla/test/testenv"
)

// One hub apiserver and one aggregated server with the search group. The
// fixture: ManagedClusters east (env=prod) and west (env=dev), each with
// its search ManagedClusterAddOn and the search agent's right to post Syncs in its namespace (as the addon's
// registration grants it). Users (ServiceAccounts in namespace users):
// carol may get every ManagedCluster, alice only east, bob none; dave may
// create syncs in east's namespace but is no agent.
var (
	hubConfig *rest.Config
	cs        *kubernetes.Clientset
	hubCA     *pki.CA
	store     *index.Store
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
	if hubCA, err = pki.LoadCA(filepath.Join(env.Hub.Dir, "pki", "ca.crt"), filepath.Join(env.Hub.Dir, "pki", "ca.key")); err != nil {
		fmt.Fprintln(os.Stderr, "hub CA:", err)
		return 1
	}
	if cs, err = kubernetes.NewForConfig(hubConfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := client.New(hubConfig, client.Options{Scheme: scheme.New()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := fixture(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "fixture:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "search-apigroup-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if store, err = index.Open(ctx, filepath.Join(dir, "search.db")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stopped, err := serve(ctx, c, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "aggregated server:", err)
		return 1
	}
	code := m.Run()
	cancel()
	if err := <-stopped; err != nil {
		fmt.Fprintln(os.Stderr, "aggregated server:", err)
		return 1
	}
	return code
}

func fixture(ctx context.Context, c client.Client) error {
	for _, ns := range []string{"east", "west", "users"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
	}
	for name, env := range map[string]string{"east": "prod", "west": "dev"} {
		if err := c.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"env": env}},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}); err != nil {
			return err
		}
		// The addon, enabled.
		if err := c.Create(ctx, &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: ocm.SearchAddon}}); err != nil {
			return err
		}
		// The agent's right, as addons/search registers it.
		if err := c.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "search-agent"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{apigroup.Group}, Resources: []string{apigroup.Syncs}, Verbs: []string{"create"}}}}); err != nil {
			return err
		}
		if err := c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "search-agent"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "search-agent"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: ocm.AddonClusterGroup(name, ocm.SearchAddon)}}}); err != nil {
			return err
		}
	}
	if err := c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "east", Name: "dave"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "search-agent"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "users", Name: "dave"}}}); err != nil {
		return err
	}
	roles := map[string][]string{"carol": nil, "alice": {"east"}}
	for who, names := range roles {
		if err := c.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "clusters-" + who},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{clusterv1.GroupName}, Resources: []string{"managedclusters"}, ResourceNames: names, Verbs: []string{"get"}}}}); err != nil {
			return err
		}
		if err := c.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "clusters-" + who},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "clusters-" + who},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "users", Name: who}}}); err != nil {
			return err
		}
	}
	for _, sa := range []string{"alice", "bob", "carol", "dave"} {
		if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "users", Name: sa}}); err != nil {
			return err
		}
	}
	return nil
}

// serve starts the aggregated server with the search group and waits until
// the APIService is Available.
func serve(ctx context.Context, c client.Client, dir string) (<-chan error, error) {
	group, err := apigroup.New(apigroup.Options{Index: store, Reader: c, Access: apigroup.NewAccess(cs)})
	if err != nil {
		return nil, err
	}
	_, stopped, err := aggregatedtest.Serve(ctx, hubConfig, dir, types.NamespacedName{Namespace: "flotilla-test", Name: "search-api"}, group)
	return stopped, err
}

// userConfig is the hub's config with a token of ServiceAccount users/<sa>.
func userConfig(t testing.TB, sa string) *rest.Config {
	t.Helper()
	exp := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts("users").CreateToken(context.Background(), sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := rest.AnonymousClientConfig(hubConfig)
	cfg.BearerToken = tr.Status.Token
	return cfg
}

// agentConfig is the hub's config with a client certificate of cluster's
// search agent, as the addon's registration signs it.
func agentConfig(t testing.TB, cluster string) *rest.Config {
	t.Helper()
	kp, err := hubCA.Issue(pki.CertRequest{CommonName: ocm.AddonAgentUser(cluster, ocm.SearchAddon, "agent1"), Client: true, Validity: time.Hour,
		Organizations: []string{ocm.AddonClusterGroup(cluster, ocm.SearchAddon), ocm.AddonGroupName(ocm.SearchAddon), "system:authenticated"}})
	require.NoError(t, err)
	cfg := rest.AnonymousClientConfig(hubConfig)
	cfg.CertData, cfg.KeyData = kp.CertPEM, kp.KeyPEM
	return cfg
}
