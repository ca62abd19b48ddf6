package deploy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"flotilla.dev/flotilla/internal/dburl"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
)

const (
	// ComplianceDBKey is the key of the --compliance-db-secret Secret that
	// holds the PostgreSQL URL.
	ComplianceDBKey = "url"
	// ComplianceDBEnv is the hub container's variable the URL reaches it in
	// (secretKeyRef); `flotilla hub` reads it when --compliance-db is not given.
	ComplianceDBEnv = "FLOTILLA_COMPLIANCE_DB"
)

// checkStoreOptions refuses conflicting or malformed history store options
// (Render's part: no apiserver needed).
func checkStoreOptions(o Options) error {
	if o.ComplianceDBSecret != "" && o.CompliancePVC != "" {
		return fmt.Errorf("deploy: --compliance-db-secret and --compliance-pvc both name the compliance history's store: give one (PostgreSQL for several replicas, a PVC for one)")
	}
	if o.CompliancePVCSize != "" && o.CompliancePVC == "" {
		return fmt.Errorf("deploy: --compliance-pvc-size sizes the claim --compliance-pvc names: add --compliance-pvc <name>")
	}
	for flag, name := range map[string]string{"--compliance-db-secret": o.ComplianceDBSecret, "--compliance-pvc": o.CompliancePVC} {
		if name == "" {
			continue
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return fmt.Errorf("deploy: %s %q is not an object name: %s", flag, name, strings.Join(errs, "; "))
		}
	}
	if o.CompliancePVCSize != "" {
		q, err := resource.ParseQuantity(o.CompliancePVCSize)
		if err != nil || q.Sign() <= 0 {
			return fmt.Errorf("deploy: --compliance-pvc-size %q is not a positive quantity (e.g. 1Gi)", o.CompliancePVCSize)
		}
	}
	return nil
}

// checkStore checks, before anything is applied, that the store the options
// name is there: the Secret with a PostgreSQL URL under ComplianceDBKey, or
// the claim (unless CompliancePVCSize asks to create it). Errors name what is
// missing and how to make it; they never quote the URL (it holds a password).
// create is true when Apply must create the claim.
func checkStore(ctx context.Context, cs kubernetes.Interface, o Options) (create bool, err error) {
	switch {
	case o.ComplianceDBSecret != "":
		ref := Namespace + "/" + o.ComplianceDBSecret
		sec, err := cs.CoreV1().Secrets(Namespace).Get(ctx, o.ComplianceDBSecret, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, fmt.Errorf("deploy: --compliance-db-secret: Secret %s not found: create it first: kubectl create namespace %s; kubectl -n %s create secret generic %s --from-literal=%s='postgres://<user>:<password>@<host>:5432/<database>'",
				ref, Namespace, Namespace, o.ComplianceDBSecret, ComplianceDBKey)
		}
		if err != nil {
			return false, fmt.Errorf("deploy: --compliance-db-secret: read Secret %s: %w", ref, err)
		}
		url, ok := sec.Data[ComplianceDBKey]
		if !ok {
			keys := make([]string, 0, len(sec.Data))
			for k := range sec.Data {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			return false, fmt.Errorf("deploy: --compliance-db-secret: Secret %s has no key %q (its keys: [%s]): put the PostgreSQL URL under %q",
				ref, ComplianceDBKey, strings.Join(keys, ", "), ComplianceDBKey)
		}
		if !dburl.IsPostgres(strings.TrimSpace(string(url))) {
			return false, fmt.Errorf("deploy: --compliance-db-secret: key %q of Secret %s is not a postgres:// (or postgresql://) URL", ComplianceDBKey, ref)
		}
	case o.CompliancePVC != "":
		ref := Namespace + "/" + o.CompliancePVC
		pvc, err := cs.CoreV1().PersistentVolumeClaims(Namespace).Get(ctx, o.CompliancePVC, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if o.CompliancePVCSize != "" {
				return true, nil
			}
			return false, fmt.Errorf("deploy: --compliance-pvc: PersistentVolumeClaim %s not found: create it (ReadWriteOnce), or add --compliance-pvc-size 1Gi to have init --deploy create it with the default StorageClass", ref)
		}
		if err != nil {
			return false, fmt.Errorf("deploy: --compliance-pvc: read PersistentVolumeClaim %s: %w", ref, err)
		}
		if pvc.DeletionTimestamp != nil || pvc.Status.Phase == corev1.ClaimLost {
			return false, fmt.Errorf("deploy: --compliance-pvc: PersistentVolumeClaim %s is being deleted or lost its volume", ref)
		}
		// SQLite wants one writer: a volume one node mounts (ReadWriteOnce)
		// or one Pod (ReadWriteOncePod). A ReadWriteMany volume (NFS and
		// the like) lets a Pod force-deleted or cut off from its node go on
		// writing while its replacement writes too, and its file locks are
		// not to be trusted.
		single, many := false, false
		for _, m := range pvc.Spec.AccessModes {
			single = single || m == corev1.ReadWriteOnce || m == corev1.ReadWriteOncePod
			many = many || m == corev1.ReadWriteMany
		}
		switch {
		case many:
			return false, fmt.Errorf("deploy: --compliance-pvc: PersistentVolumeClaim %s may be written from many nodes (access modes %v): SQLite needs one writer; use a ReadWriteOnce or ReadWriteOncePod claim, or PostgreSQL (--compliance-db-secret)", ref, pvc.Spec.AccessModes)
		case !single:
			return false, fmt.Errorf("deploy: --compliance-pvc: PersistentVolumeClaim %s is not writable (access modes %v): want ReadWriteOnce", ref, pvc.Spec.AccessModes)
		}
	}
	return false, nil
}

// createClaim makes the --compliance-pvc claim (ReadWriteOnce, the default
// StorageClass); one that appeared meanwhile is kept as it is.
func createClaim(ctx context.Context, cs kubernetes.Interface, o Options) error {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: o.CompliancePVC, Namespace: Namespace, Labels: map[string]string{"app": Name}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse(o.CompliancePVCSize)}},
		},
	}
	if _, err := cs.CoreV1().PersistentVolumeClaims(Namespace).Create(ctx, pvc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create PersistentVolumeClaim %s/%s: %w", Namespace, o.CompliancePVC, err)
	}
	return nil
}

// storeLine says where the deployed hub keeps its compliance history.
func storeLine(o Options) string {
	switch {
	case o.ComplianceDBSecret != "":
		return fmt.Sprintf("==> compliance history: PostgreSQL, URL from Secret %s/%s key %q (two replicas share it)", Namespace, o.ComplianceDBSecret, ComplianceDBKey)
	case o.CompliancePVC != "":
		return fmt.Sprintf("==> compliance history: SQLite on PersistentVolumeClaim %s/%s (one replica, replaced by Recreate)", Namespace, o.CompliancePVC)
	}
	return "==> compliance history: an emptyDir per hub Pod, lost when the Pod goes; keep it with --compliance-db-secret (PostgreSQL) or --compliance-pvc"
}
