package apigroup_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
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
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/internal/aggregated"
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
	ip, err := aggregated.HostIP()
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	svc := types.NamespacedName{Namespace: "flotilla-test", Name: "search-api"}
	ca, err := pki.NewCA("test-serving-ca", time.Hour)
	if err != nil {
		return nil, err
	}
	kp, err := ca.Issue(pki.CertRequest{CommonName: "search-api", DNSNames: []string{svc.Name + "." + svc.Namespace + ".svc"}})
	if err != nil {
		return nil, err
	}
	if err := pki.WriteFiles(dir, "serving", kp.CertPEM, kp.KeyPEM); err != nil {
		return nil, err
	}
	group, err := apigroup.New(apigroup.Options{Index: store, Reader: c, Access: apigroup.NewAccess(cs)})
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(ip.String(), strconv.Itoa(port))
	srv, err := aggregated.New(aggregated.Options{Config: hubConfig, Groups: []aggregated.Group{group}, BindAddress: addr,
		CertFile: filepath.Join(dir, "serving.crt"), KeyFile: filepath.Join(dir, "serving.key"), CABundle: ca.CertPEM,
		Service: svc, Endpoint: addr, RemoveOnStop: true})
	if err != nil {
		return nil, err
	}
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Start(ctx) }()
	apis, err := aggregator.NewForConfig(hubConfig)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		s, err := apis.ApiregistrationV1().APIServices().Get(ctx, apigroup.APIServiceName, metav1.GetOptions{})
		if err == nil {
			for _, cond := range s.Status.Conditions {
				if cond.Type == apiregistrationv1.Available && cond.Status == apiregistrationv1.ConditionTrue {
					return stopped, nil
				}
			}
		}
		select {
		case err := <-stopped:
			return nil, fmt.Errorf("stopped: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("APIService %s not Available within a minute: %+v (%v)", apigroup.APIServiceName, s, err)
		}
	}
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
