package controlplane

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// publishClusterInfo writes the kube-public/cluster-info ConfigMap, readable
// without credentials, as kubeadm does: a kubeconfig naming the server and its
// CA, which `flotilla join` reads to learn the hub's CA.
func (cp *ControlPlane) publishClusterInfo(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	// kube-public is created by the apiserver shortly after it reports ready.
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(ctx, metav1.NamespacePublic, metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("namespace kube-public did not appear: %w", err)
	}

	kc := clientcmdapi.NewConfig()
	kc.Clusters[""] = &clientcmdapi.Cluster{Server: cp.URL, CertificateAuthorityData: cp.CAPEM}
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-info", Namespace: metav1.NamespacePublic},
		Data:       map[string]string{"kubeconfig": string(data)},
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "flotilla:cluster-info-reader", Namespace: metav1.NamespacePublic},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"cluster-info"}, Verbs: []string{"get"},
		}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "flotilla:cluster-info-reader", Namespace: metav1.NamespacePublic},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{
			{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "system:anonymous"},
			{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:unauthenticated"},
		},
	}
	ns := metav1.NamespacePublic
	if err := createOrUpdate(ctx, func() error {
		_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		return err
	}, func() error {
		_, err := client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("publish kube-public/cluster-info: %w", err)
	}
	if _, err := client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if _, err := client.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

func createOrUpdate(_ context.Context, create, update func() error) error {
	err := create()
	if apierrors.IsAlreadyExists(err) {
		return update()
	}
	return err
}
