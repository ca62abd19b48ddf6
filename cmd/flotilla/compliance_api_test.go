package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/hub"
	"flotilla.dev/flotilla/internal/aggregated"
	"flotilla.dev/flotilla/internal/aggregated/aggregatedtest"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/apigroup"
	"flotilla.dev/flotilla/policy/compliance/history"
	"flotilla.dev/flotilla/test/fleet"
	"flotilla.dev/flotilla/test/testenv"
)

// `compliance history` and `compliance report --since` with nothing but a
// user's kubeconfig: through the hub's aggregated API, as that user.
func TestComplianceThroughHubAPI(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := testenv.Start(t, testenv.Options{})
	c, err := client.New(env.Hub.Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	for _, ns := range []string{"team-a", "team-b", "users"} {
		require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	tmpl := &policyv1.PolicyTemplate{}
	tmpl.ObjectDefinition.Raw = []byte(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy","metadata":{"name":"check"},"spec":{"object-templates":[]}}`)
	for ns, control := range map[string]string{"team-a": "AC-6", "team-b": "SC-28"} {
		p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "policy-" + ns, Annotations: map[string]string{
			policyv1.StandardsAnnotation: "NIST SP 800-53", policyv1.ControlsAnnotation: control,
		}}, Spec: policyv1.PolicySpec{PolicyTemplates: []*policyv1.PolicyTemplate{tmpl}}}
		require.NoError(t, c.Create(ctx, p))
	}
	require.NoError(t, c.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "policy-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{policyv1.GroupVersion.Group}, Resources: []string{"policies"}, Verbs: []string{"list"}}}}))
	require.NoError(t, c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "alice"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "policy-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "users", Name: "alice"}}}))
	require.NoError(t, c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "users", Name: "alice"}}))
	cs := kubernetes.NewForConfigOrDie(env.Hub.Config)
	tr, err := cs.CoreV1().ServiceAccounts("users").CreateToken(ctx, "alice", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	alice := filepath.Join(t.TempDir(), "alice.kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"hub": {Server: env.Hub.URL, CertificateAuthorityData: env.Hub.CAPEM}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"alice": {Token: tr.Status.Token}},
		Contexts:       map[string]*clientcmdapi.Context{"hub": {Cluster: "hub", AuthInfo: "alice"}},
		CurrentContext: "hub",
	}, alice))

	// No hub yet: the error names the APIService.
	err = runCLIError(t, "compliance", "history", "--kubeconfig", env.Hub.KubeconfigPath)
	require.ErrorContains(t, err, "APIService "+apigroup.APIServiceName)

	db := filepath.Join(t.TempDir(), "compliance.db")
	s, err := history.OpenSQLite(ctx, db)
	require.NoError(t, err)
	now := time.Now().UTC()
	day := 24 * time.Hour
	ev := func(policy string, state compliance.State, ago time.Duration) history.Event {
		return history.Event{Policy: policy, Template: "check", Cluster: "east", State: state, Message: string(state) + "; test", Time: now.Add(-ago)}
	}
	_, err = s.Record(ctx, ev("team-a/policy-team-a", compliance.Compliant, 20*day), ev("team-a/policy-team-a", compliance.NonCompliant, 3*day),
		ev("team-a/policy-team-a", compliance.Compliant, 2*day), ev("team-b/policy-team-b", compliance.NonCompliant, 4*day))
	require.NoError(t, err)
	require.NoError(t, s.Close())

	ip, err := aggregated.HostIP()
	require.NoError(t, err)
	done, err := fleet.StartHub(ctx, hub.Options{Config: env.Hub.Config, ComplianceDB: db, APIAddress: ip.String()}, 2*time.Minute)
	require.NoError(t, err)
	defer func() { cancel(); <-done }()
	require.NoError(t, aggregatedtest.WaitAvailable(ctx, env.Hub.Config, apigroup.APIServiceName, time.Minute))

	out, errOut, code := runPolicyCLI(t, "compliance", "history", "--kubeconfig", alice)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "3 changes, 1 remediated, mean time to remediate 1d 0h")
	require.Contains(t, out, "team-a/policy-team-a")
	require.NotContains(t, out, "team-b", "alice may not list team-b's policies")

	out, errOut, code = runPolicyCLI(t, "compliance", "history", "--kubeconfig", alice, "--cluster", "east", "--since", "1d")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "east last became NonCompliant: "+now.Add(-3*day).Format("2006-01-02 15:04Z"))

	out, errOut, code = runPolicyCLI(t, "compliance", "report", "--kubeconfig", alice, "--since", "7d", "--baseline", "moderate")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "AC-6 Least Privilege")
	require.NotContains(t, out, "SC-28 ")
	require.Contains(t, out, "BASELINE NIST SP 800-53 rev5 MODERATE", "the baseline coverage section")
	require.Contains(t, out, "2 changes, 1 remediated", "and the history")

	err = runCLIError(t, "compliance", "history", "--kubeconfig", alice, "--policy", "no-namespace")
	require.ErrorContains(t, err, `--policy "no-namespace" is not a root policy`)
}
