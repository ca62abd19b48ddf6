package node

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// kubeletBindings let kubelets join by TLS bootstrap: bootstrap-token holders
// may ask for a node client certificate (and get it approved), nodes may renew
// theirs, and nodes (group system:nodes) have the rights of system:node.
var kubeletBindings = []struct{ name, role, group string }{
	{"flotilla:kubelet-bootstrap", "system:node-bootstrapper", "system:bootstrappers"},
	{"flotilla:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", "system:bootstrappers"},
	{"flotilla:node-autoapprove-certificate-rotation", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "system:nodes"},
	{"flotilla:nodes", "system:node", "system:nodes"},
}

// PrepareCluster writes the RBAC that kubelets need to join and a bootstrap
// token valid for ttl; it returns the token ("<id>.<secret>").
func PrepareCluster(ctx context.Context, cs kubernetes.Interface, ttl time.Duration) (string, error) {
	for _, b := range kubeletBindings {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: b.name, Labels: map[string]string{"app.kubernetes.io/managed-by": "flotilla"}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: b.group}},
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("create ClusterRoleBinding %s: %w", b.name, err)
		}
	}
	id, err := randomString(6)
	if err != nil {
		return "", err
	}
	secret, err := randomString(16)
	if err != nil {
		return "", err
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id, Namespace: metav1.NamespaceSystem},
		Type:       corev1.SecretTypeBootstrapToken,
		StringData: map[string]string{
			"description":                    "flotilla dev: kubelet TLS bootstrap",
			"token-id":                       id,
			"token-secret":                   secret,
			"expiration":                     time.Now().Add(ttl).UTC().Format(time.RFC3339),
			"usage-bootstrap-authentication": "true",
		},
	}
	if _, err := cs.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create bootstrap token: %w", err)
	}
	return id + "." + secret, nil
}

const tokenChars = "abcdefghijklmnopqrstuvwxyz0123456789"

func randomString(n int) (string, error) {
	b := make([]byte, n)
	for i := range b {
		v, err := rand.Int(rand.Reader, big.NewInt(int64(len(tokenChars))))
		if err != nil {
			return "", err
		}
		b[i] = tokenChars[v.Int64()]
	}
	return string(b), nil
}
