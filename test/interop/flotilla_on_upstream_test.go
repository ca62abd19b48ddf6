//go:build interop && linux

package interop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/klusterlet"
	"flotilla.dev/flotilla/klusterlet/join"
	"flotilla.dev/flotilla/klusterlet/registration"
	"flotilla.dev/flotilla/manifests"
	"flotilla.dev/flotilla/test/testenv"
)

// flotillaOnUpstream: a Flotilla klusterlet joined to a hub run by upstream's
// registration controller (the OCM CRDs, upstream's bootstrap identity, no
// Flotilla hub code).
type flotillaOnUpstream struct {
	t       *testing.T
	r       *report
	up      upstream
	env     *testenv.Env
	cluster string
}

func (f *flotillaOnUpstream) run(ctx context.Context) {
	t, r := f.t, f.r
	hubKC := f.env.Hub.KubeconfigPath
	clusters := clusterclient.NewForConfigOrDie(f.env.Hub.Config)
	var token string
	ok := r.check(t, "upstream hub: CRDs, bootstrap identity, registration controller; clusteradm get token", func() (string, error) {
		if err := f.installHub(ctx); err != nil {
			return "", err
		}
		f.up.start(t, "registration-controller", "registration", "controller", "--kubeconfig", hubKC,
			"--namespace", "open-cluster-management-hub", "--disable-leader-election", "--listen", listenFlag(t))
		out, err := f.up.clusteradm(ctx, hubKC, "get", "token")
		if err != nil {
			return "", err
		}
		token, err = tokenFrom(out)
		return "", err
	})
	names := []string{"Flotilla klusterlet on upstream hub: accepted with clusteradm accept, Joined, Available",
		"Flotilla klusterlet on upstream hub: clusteradm create work, applied, status back"}
	if !ok {
		r.notRun(t, "the upstream hub did not start", names...)
		return
	}
	var watches map[string]int // what the upstream hub's apiserver served before the klusterlet joined
	ok = r.check(t, names[0], func() (string, error) {
		dir := t.TempDir()
		ca := filepath.Join(dir, "hub-ca.crt")
		if err := os.WriteFile(ca, f.env.Hub.CAPEM, 0o600); err != nil {
			return "", err
		}
		spoke := f.env.Clusters[0]
		watches, _ = hubWatches(ctx, f.env.Hub.Config) // a failure shows in the count's check
		if err := join.Join(ctx, join.Options{SpokeConfig: spoke.Config, HubAPIServer: f.env.Hub.URL, HubToken: token, CAFile: ca,
			ClusterName: f.cluster, NoDeployment: true}); err != nil {
			return "", fmt.Errorf("flotilla join: %w", err)
		}
		kctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- klusterlet.Run(kctx, klusterlet.Options{WorkStatusSyncInterval: 2 * time.Second, Registration: registration.Options{
				ClusterName: f.cluster, SpokeConfig: spoke.Config, HubKubeconfigDir: filepath.Join(dir, "hub-kubeconfig"),
				StatusSyncInterval: 2 * time.Second, RetryInterval: 2 * time.Second}})
		}()
		t.Cleanup(func() { stop(); <-done })
		if err := eventually(ctx, timeout, "the klusterlet's CSR", func() (bool, string) {
			csrs, err := kubernetes.NewForConfigOrDie(f.env.Hub.Config).CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: "open-cluster-management.io/cluster-name=" + f.cluster})
			if err != nil {
				return false, err.Error()
			}
			return len(csrs.Items) > 0, fmt.Sprintf("%d CSRs", len(csrs.Items))
		}); err != nil {
			return "", err
		}
		if _, err := f.up.clusteradm(ctx, hubKC, "accept", "--clusters", f.cluster); err != nil {
			return "", err
		}
		return "", eventually(ctx, timeout, "HubAccepted, Joined and Available", func() (bool, string) {
			mc, err := clusters.ClusterV1().ManagedClusters().Get(ctx, f.cluster, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			c := mc.Status.Conditions
			seen := strings.Join([]string{conditionString(c, clusterv1.ManagedClusterConditionHubAccepted), conditionString(c, clusterv1.ManagedClusterConditionJoined), conditionString(c, clusterv1.ManagedClusterConditionAvailable)}, "; ")
			return meta.IsStatusConditionTrue(c, clusterv1.ManagedClusterConditionHubAccepted) && meta.IsStatusConditionTrue(c, clusterv1.ManagedClusterConditionJoined) &&
				meta.IsStatusConditionTrue(c, clusterv1.ManagedClusterConditionAvailable), seen
		})
	})
	if !ok {
		r.notRun(t, "the klusterlet did not join", names[1:]...)
		return
	}
	r.check(t, names[1], func() (string, error) {
		manifest := filepath.Join(t.TempDir(), "cm.yaml")
		if err := os.WriteFile(manifest, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-upstream-hub\n  namespace: default\ndata:\n  k: v\n"), 0o644); err != nil {
			return "", err
		}
		if _, err := f.up.clusteradm(ctx, hubKC, "create", "work", "interop", "-f", manifest, "--clusters", f.cluster); err != nil {
			return "", err
		}
		works := workclient.NewForConfigOrDie(f.env.Hub.Config).WorkV1().ManifestWorks(f.cluster)
		if err := eventually(ctx, timeout, "Applied and Available", func() (bool, string) {
			w, err := works.Get(ctx, "interop", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			c := w.Status.Conditions
			return meta.IsStatusConditionTrue(c, workv1.WorkApplied) && meta.IsStatusConditionTrue(c, workv1.WorkAvailable),
				conditionString(c, workv1.WorkApplied) + "; " + conditionString(c, workv1.WorkAvailable)
		}); err != nil {
			return "", err
		}
		_, err := kubernetes.NewForConfigOrDie(f.env.Clusters[0].Config).CoreV1().ConfigMaps("default").Get(ctx, "from-upstream-hub", metav1.GetOptions{})
		return "ConfigMap default/from-upstream-hub on the managed cluster", err
	})
	r.check(t, "hub apiserver watches added while Flotilla's klusterlet joined and ran a work (one cluster, upstream hub)", func() (string, error) {
		return watchCount(ctx, f.env.Hub.Config, watches)
	})
}

// installHub prepares the upstream hub as OCM's cluster-manager would: the OCM
// CRDs (as open-cluster-management.io/api ships them, no Flotilla admission),
// the bootstrap ClusterRole bound to the bootstrap group and ServiceAccount.
func (f *flotillaOnUpstream) installHub(ctx context.Context) error {
	crds, err := manifests.CRDs(manifests.HubCRDs)
	if err != nil {
		return err
	}
	ext := apiextensionsclient.NewForConfigOrDie(f.env.Hub.Config).ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		if _, err := ext.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		name := crd.Name
		if err := eventually(ctx, timeout, "CRD "+name+" Established", func() (bool, string) {
			got, err := ext.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, c := range got.Status.Conditions {
				if c.Type == "Established" && c.Status == "True" {
					return true, ""
				}
			}
			return false, "not Established"
		}); err != nil {
			return err
		}
	}
	kube := kubernetes.NewForConfigOrDie(f.env.Hub.Config)
	for _, ns := range []string{"open-cluster-management", "open-cluster-management-hub"} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	const role = "open-cluster-management:bootstrap"
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}},
		{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get", "list", "watch"}},
		{APIGroups: []string{"cluster.open-cluster-management.io"}, Resources: []string{"managedclusters"}, Verbs: []string{"get", "create", "list", "watch"}},
		{APIGroups: []string{"cluster.open-cluster-management.io"}, Resources: []string{"managedclustersets/join"}, Verbs: []string{"create"}},
	}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: rules}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if _, err := kube.CoreV1().ServiceAccounts("open-cluster-management").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "agent-registration-bootstrap"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:bootstrappers:managedcluster"},
			{Kind: rbacv1.ServiceAccountKind, Namespace: "open-cluster-management", Name: "agent-registration-bootstrap"},
		}}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}
