//go:build nodes

package nodes_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// serviceAccountUser creates ServiceAccount ns/name and writes a kubeconfig
// with a token of it for the hub apiserver (no client certificate): the
// user the CLI runs as. With policyNamespace, a Role and RoleBinding there
// let it list policies in that namespace, and nothing else.
func serviceAccountUser(t *testing.T, cs kubernetes.Interface, hub *rest.Config, ns, name, policyNamespace string) (string, *rest.Config) {
	t.Helper()
	ctx := context.Background()
	_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	if policyNamespace != "" {
		_, err = cs.RbacV1().Roles(policyNamespace).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name + "-policy-lister"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{policyv1.GroupVersion.Group}, Resources: []string{"policies"}, Verbs: []string{"list"}}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = cs.RbacV1().RoleBindings(policyNamespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-policy-lister"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name + "-policy-lister"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	ca := hub.CAData
	if len(ca) == 0 {
		ca, err = os.ReadFile(hub.CAFile)
		require.NoError(t, err)
	}
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"hub": {Server: hub.Host, CertificateAuthorityData: ca}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{name: {Token: tr.Status.Token}},
		Contexts:       map[string]*clientcmdapi.Context{name: {Cluster: "hub", AuthInfo: name}},
		CurrentContext: name,
	}, path))
	cfg := rest.AnonymousClientConfig(hub)
	cfg.BearerToken = tr.Status.Token
	return path, cfg
}

// flotillaJSON runs the CLI with no compliance database in its environment
// (it must read through the hub apiserver) and decodes its standard output
// into into; the error carries the exit code and standard error.
func flotillaJSON(into any, args ...string) (string, error) {
	stdout, stderr, code, err := flotillaSplit(args...)
	if err != nil {
		return stdout, err
	}
	if code != 0 {
		return stdout, errors.New(stderr)
	}
	return stdout, json.Unmarshal([]byte(stdout), into)
}

// flotillaSplit runs the CLI without FLOTILLA_COMPLIANCE_DB and returns its
// standard output, standard error and exit code.
func flotillaSplit(args ...string) (string, string, int, error) {
	cmd := exec.Command(flotilla, args...)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "FLOTILLA_COMPLIANCE_DB=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return stdout.String(), stderr.String(), exit.ExitCode(), nil
	}
	return stdout.String(), stderr.String(), 0, err
}
