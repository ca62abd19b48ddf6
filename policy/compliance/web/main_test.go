package web_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/history"
	"flotilla.dev/flotilla/policy/compliance/web"
	"flotilla.dev/flotilla/test/testenv"
)

// One hub apiserver for the package. The fixture: team-a holds two policies
// (CM-2 NonCompliant on west, AC-6 Compliant on both), team-b one (SC-28
// NonCompliant on east); alice may list policies in team-a only, auditor in
// every namespace.
var (
	hubConfig *rest.Config
	hubClient client.Client
	cs        *kubernetes.Clientset
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
	if hubClient, err = client.New(hubConfig, client.Options{Scheme: scheme.New()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if cs, err = kubernetes.NewForConfig(hubConfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := fixture(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "fixture:", err)
		return 1
	}
	return m.Run()
}

type policySpec struct {
	ns, name, controls, category string
	states                       map[string]policyv1.ComplianceState
	message                      string
}

var policies = []policySpec{
	{"team-a", "policy-baseline", "CM-2 Baseline Configuration", "CM Configuration Management",
		map[string]policyv1.ComplianceState{"east": policyv1.Compliant, "west": policyv1.NonCompliant}, "NonCompliant; violation - namespaces [prod] not found"},
	{"team-a", "policy-roles", "AC-6 Least Privilege", "AC Access Control",
		map[string]policyv1.ComplianceState{"east": policyv1.Compliant, "west": policyv1.Compliant}, ""},
	{"team-b", "policy-encryption", "SC-28 Protection of Information at Rest", "SC System and Communications Protection",
		map[string]policyv1.ComplianceState{"east": policyv1.NonCompliant}, "NonCompliant; violation - secrets not encrypted <b>at rest</b>"},
}

func fixture(ctx context.Context) error {
	for _, ns := range []string{"team-a", "team-b", "east", "west", "users"} {
		if err := hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
	}
	tmpl := &policyv1.PolicyTemplate{}
	tmpl.ObjectDefinition.Raw = []byte(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy","metadata":{"name":"check"},"spec":{"remediationAction":"inform","object-templates":[]}}`)
	spec := policyv1.PolicySpec{PolicyTemplates: []*policyv1.PolicyTemplate{tmpl}}
	for _, p := range policies {
		root := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: p.name, Annotations: map[string]string{
			policyv1.StandardsAnnotation: "NIST SP 800-53", policyv1.CategoriesAnnotation: p.category, policyv1.ControlsAnnotation: p.controls,
		}}, Spec: spec}
		if err := hubClient.Create(ctx, root); err != nil {
			return err
		}
		for _, cluster := range []string{"east", "west"} {
			state, ok := p.states[cluster]
			if !ok {
				continue
			}
			root.Status.Status = append(root.Status.Status, &policyv1.CompliancePerClusterStatus{ClusterName: cluster, ClusterNamespace: cluster, ComplianceState: state})
			replica := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: p.ns + "." + p.name, Labels: map[string]string{
				policyv1.RootPolicyLabel: p.ns + "." + p.name, policyv1.ClusterNameLabel: cluster, policyv1.ClusterNamespaceLabel: cluster,
			}}, Spec: spec}
			if err := hubClient.Create(ctx, replica); err != nil {
				return err
			}
			msg := "Compliant; notification - as specified"
			if state == policyv1.NonCompliant {
				msg = p.message
			}
			replica.Status.ComplianceState = state
			replica.Status.Details = []*policyv1.DetailsPerTemplate{{TemplateMeta: metav1.ObjectMeta{Name: "check"}, ComplianceState: state,
				History: []policyv1.ComplianceHistory{{LastTimestamp: metav1.NewTime(now.Add(-time.Hour)), Message: msg}}}}
			if err := hubClient.Status().Update(ctx, replica); err != nil {
				return err
			}
		}
		if err := hubClient.Status().Update(ctx, root); err != nil {
			return err
		}
	}
	// alice: list policies in team-a. auditor: everywhere.
	rule := []rbacv1.PolicyRule{{APIGroups: []string{policyv1.GroupVersion.Group}, Resources: []string{"policies"}, Verbs: []string{"get", "list"}}}
	if err := hubClient.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "policy-reader"}, Rules: rule}); err != nil {
		return err
	}
	if err := hubClient.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "alice"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "policy-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "users", Name: "alice"}}}); err != nil {
		return err
	}
	if err := hubClient.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "policy-auditor"}, Rules: rule}); err != nil {
		return err
	}
	if err := hubClient.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "auditor"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "policy-auditor"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "users", Name: "auditor"}}}); err != nil {
		return err
	}
	for _, sa := range []string{"alice", "auditor", "nobody"} {
		if err := hubClient.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "users", Name: sa}}); err != nil {
			return err
		}
	}
	return nil
}

// token mints a ServiceAccount token of users/<sa>.
func token(t testing.TB, sa string) string {
	t.Helper()
	tr, err := cs.CoreV1().ServiceAccounts("users").CreateToken(context.Background(), sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrInt64(3600)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return tr.Status.Token
}

func ptrInt64(v int64) *int64 { return &v }

// historyStore records a month of history: west's CM-2 went NonCompliant 20
// days ago, was remediated 10 days ago and broke again 2 days ago; team-b's
// SC-28 on east has been NonCompliant since 5 days ago.
func historyStore(t testing.TB) history.Store {
	t.Helper()
	s, err := history.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "compliance.db"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	day := 24 * time.Hour
	ev := func(policy, cluster string, state compliance.State, ago time.Duration) history.Event {
		return history.Event{Policy: policy, Template: "check", Cluster: cluster, State: state, Message: string(state) + "; at -" + ago.String(), Time: now.Add(-ago)}
	}
	_, err = s.Record(context.Background(),
		ev("team-a/policy-baseline", "west", compliance.Compliant, 40*day),
		ev("team-a/policy-baseline", "west", compliance.NonCompliant, 20*day),
		ev("team-a/policy-baseline", "west", compliance.Compliant, 10*day),
		ev("team-a/policy-baseline", "west", compliance.NonCompliant, 2*day),
		ev("team-a/policy-baseline", "east", compliance.Compliant, 40*day),
		ev("team-a/policy-roles", "east", compliance.Compliant, 40*day),
		ev("team-a/policy-roles", "west", compliance.Compliant, 40*day),
		ev("team-b/policy-encryption", "east", compliance.Compliant, 40*day),
		ev("team-b/policy-encryption", "east", compliance.NonCompliant, 5*day),
	)
	require.NoError(t, err)
	return s
}

// server serves the handler over TLS, reading policies straight from the
// hub apiserver and checking callers with it.
func server(t testing.TB, store history.Store) *httptest.Server {
	t.Helper()
	h, err := web.New(web.Options{Reader: hubClient, Auth: web.NewAuthorizer(cs), History: store, Now: func() time.Time { return now }})
	require.NoError(t, err)
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return srv
}
