package agent

import (
	"context"
	"encoding/base64"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/hubtemplate"
)

// decrypt returns the template object with the values the hub protected
// (`$ocm_encrypted:`) decrypted, with the cluster's key and the replica's
// initialization vector. The key is read from the cluster namespace on the
// hub (the agent may read that one Secret) and copied to the same namespace
// on the managed cluster, as OCM's secret sync does.
func (y *syncer) decrypt(ctx context.Context, local *policyv1.Policy, obj map[string]any) (map[string]any, error) {
	iv, err := base64.StdEncoding.DecodeString(local.Annotations[hubtemplate.IVAnnotation])
	if err != nil || len(iv) != hubtemplate.IVSize {
		return nil, fmt.Errorf("the policy holds protected values but no valid %s annotation", hubtemplate.IVAnnotation)
	}
	key, err := y.encryptionKey(ctx)
	if err != nil {
		return nil, err
	}
	out, err := hubtemplate.DecryptAll(obj, key, iv)
	if err != nil {
		return nil, err
	}
	return out.(map[string]any), nil
}

// encryptionKey reads the cluster's key on the hub and keeps the managed
// cluster's copy equal to it.
func (y *syncer) encryptionKey(ctx context.Context) ([]byte, error) {
	var hubKey corev1.Secret
	if err := y.hub.Get(ctx, client.ObjectKey{Namespace: y.ns, Name: hubtemplate.KeySecret}, &hubKey); err != nil {
		return nil, fmt.Errorf("read the encryption key %s/%s on the hub: %w", y.ns, hubtemplate.KeySecret, err)
	}
	key := hubKey.Data["key"]
	if len(key) != 32 {
		return nil, fmt.Errorf("the encryption key %s/%s on the hub holds no 256-bit key in data.key", y.ns, hubtemplate.KeySecret)
	}
	var cur corev1.Secret
	err := y.spoke.Get(ctx, client.ObjectKey{Namespace: y.ns, Name: hubtemplate.KeySecret}, &cur)
	switch {
	case apierrors.IsNotFound(err):
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: hubtemplate.KeySecret, Namespace: y.ns}, Data: map[string][]byte{"key": key}}
		if err := y.spoke.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("copy the encryption key to the managed cluster: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("read the encryption key on the managed cluster: %w", err)
	case !reflect.DeepEqual(cur.Data, map[string][]byte{"key": key}):
		cur.Data = map[string][]byte{"key": key}
		if err := y.spoke.Update(ctx, &cur); err != nil {
			return nil, fmt.Errorf("update the encryption key on the managed cluster: %w", err)
		}
	}
	return key, nil
}
