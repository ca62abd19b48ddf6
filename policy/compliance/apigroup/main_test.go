package apigroup_test

import (
	"context"
	"crypto/tls"
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
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/aggregated/aggregatedtest"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/apigroup"
	"flotilla.dev/flotilla/policy/compliance/history"
	"flotilla.dev/flotilla/policy/compliance/web"
	"flotilla.dev/flotilla/test/testenv"
)

// One hub apiserver (with the front-proxy flags of every local control
// plane) and one aggregated server on a non-loopback address of this host,
// registered as APIService v1alpha1.compliance.flotilla.dev. The fixture:
// ns1 and ns2 hold one policy each, NonCompliant on east; alice may list
// policies in ns1 only, bob nowhere.
var (
	hubConfig *rest.Config
	cs        *kubernetes.Clientset
	direct    string // https://<ip>:<port> of the aggregated server
	hubPKI    string // the hub control plane's certificates
	now       = time.Now().UTC().Truncate(time.Second)
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
	hubPKI = filepath.Join(env.Hub.Dir, "pki")
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
	dir, err := os.MkdirTemp("", "apigroup-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
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
	for _, ns := range []string{"ns1", "ns2", "east", "users"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
	}
	tmpl := &policyv1.PolicyTemplate{}
	tmpl.ObjectDefinition.Raw = []byte(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy","metadata":{"name":"check"},"spec":{"remediationAction":"inform","object-templates":[]}}`)
	for ns, control := range map[string]string{"ns1": "CM-2", "ns2": "SC-28"} {
		p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "policy-" + ns, Annotations: map[string]string{
			policyv1.StandardsAnnotation: "NIST SP 800-53", policyv1.ControlsAnnotation: control,
		}}, Spec: policyv1.PolicySpec{PolicyTemplates: []*policyv1.PolicyTemplate{tmpl}}}
		if err := c.Create(ctx, p); err != nil {
			return err
		}
		p.Status.Status = []*policyv1.CompliancePerClusterStatus{{ClusterName: "east", ClusterNamespace: "east", ComplianceState: policyv1.NonCompliant}}
		if err := c.Status().Update(ctx, p); err != nil {
			return err
		}
		replica := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "east", Name: ns + ".policy-" + ns, Labels: map[string]string{
			policyv1.RootPolicyLabel: ns + ".policy-" + ns, policyv1.ClusterNameLabel: "east", policyv1.ClusterNamespaceLabel: "east",
		}}, Spec: p.Spec}
		if err := c.Create(ctx, replica); err != nil {
			return err
		}
		replica.Status.ComplianceState = policyv1.NonCompliant
		replica.Status.Details = []*policyv1.DetailsPerTemplate{{TemplateMeta: metav1.ObjectMeta{Name: "check"}, ComplianceState: policyv1.NonCompliant,
			History: []policyv1.ComplianceHistory{{LastTimestamp: metav1.NewTime(now.Add(-time.Hour)), Message: "NonCompliant; violation - secret of " + ns}}}}
		if err := c.Status().Update(ctx, replica); err != nil {
			return err
		}
	}
	rule := []rbacv1.PolicyRule{{APIGroups: []string{policyv1.GroupVersion.Group}, Resources: []string{"policies"}, Verbs: []string{"get", "list"}}}
	if err := c.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "policy-reader"}, Rules: rule}); err != nil {
		return err
	}
	if err := c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "alice"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "policy-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "users", Name: "alice"}}}); err != nil {
		return err
	}
	for _, sa := range []string{"alice", "bob"} {
		if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "users", Name: sa}}); err != nil {
			return err
		}
	}
	return nil
}

// serve starts the aggregated server with the compliance group, and waits
// until the APIService is Available.
func serve(ctx context.Context, c client.Client, dir string) (<-chan error, error) {
	store, err := history.OpenSQLite(ctx, filepath.Join(dir, "compliance.db"))
	if err != nil {
		return nil, err
	}
	day := 24 * time.Hour
	ev := func(policy string, state compliance.State, ago time.Duration) history.Event {
		return history.Event{Policy: policy, Template: "check", Cluster: "east", State: state, Message: string(state) + "; test", Time: now.Add(-ago)}
	}
	if _, err := store.Record(ctx,
		ev("ns1/policy-ns1", compliance.Compliant, 20*day), ev("ns1/policy-ns1", compliance.NonCompliant, 2*day),
		ev("ns2/policy-ns2", compliance.Compliant, 20*day), ev("ns2/policy-ns2", compliance.NonCompliant, 10*day), ev("ns2/policy-ns2", compliance.Compliant, 9*day),
		ev("ns2/policy-ns2", compliance.NonCompliant, 3*day)); err != nil {
		return nil, err
	}
	group, err := apigroup.New(apigroup.Options{Reader: c, Access: web.NewAuthorizer(cs), History: store, Now: func() time.Time { return now }})
	if err != nil {
		return nil, err
	}
	url, stopped, err := aggregatedtest.Serve(ctx, hubConfig, dir, types.NamespacedName{Namespace: "flotilla-test", Name: "compliance-api"}, group)
	if err != nil {
		return nil, err
	}
	direct = url
	done := make(chan error, 1)
	go func() { done <- <-stopped; store.Close() }()
	return done, nil
}

// userConfig is the hub's config with a token of ServiceAccount users/<sa>
// instead of the admin's certificate.
func userConfig(t testing.TB, sa string) *rest.Config {
	t.Helper()
	tr, err := cs.CoreV1().ServiceAccounts("users").CreateToken(context.Background(), sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrInt64(3600)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := rest.AnonymousClientConfig(hubConfig)
	cfg.BearerToken = tr.Status.Token
	return cfg
}

func ptrInt64(v int64) *int64 { return &v }

// insecureClient reaches the aggregated server directly, trusting any
// serving certificate, with the given client certificates.
func insecureClient(certs ...tls.Certificate) *tls.Config {
	return &tls.Config{InsecureSkipVerify: true, Certificates: certs} //nolint:gosec // a test reaching a test server
}
