package deploy

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// deployment converts the rendered hub Deployment to its type.
func deployment(t *testing.T, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	u := find(objs, "Deployment", Name)
	require.NotNil(t, u)
	var d appsv1.Deployment
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d))
	return &d
}

func volume(d *appsv1.Deployment, name string) *corev1.Volume {
	for i, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return &d.Spec.Template.Spec.Volumes[i]
		}
	}
	return nil
}

// TestRenderComplianceStore: what each history store makes of the
// Deployment: replicas, update strategy, the data volume, the URL's
// secretKeyRef, and never a URL or a Secret right elsewhere.
func TestRenderComplianceStore(t *testing.T) {
	for name, tc := range map[string]struct {
		o            Options
		replicas     int32
		strategy     appsv1.DeploymentStrategyType
		claim        string // the data volume's claim; "" = an emptyDir
		secret       string // the secretKeyRef of FLOTILLA_COMPLIANCE_DB; "" = no such variable
		fsGroupOwned bool
	}{
		"default: an emptyDir per replica": {o: Options{}, replicas: 2, strategy: appsv1.RollingUpdateDeploymentStrategyType},
		"PostgreSQL from a Secret": {o: Options{ComplianceDBSecret: "history-db"}, replicas: 2,
			strategy: appsv1.RollingUpdateDeploymentStrategyType, secret: "history-db"},
		"SQLite on a claim: one replica": {o: Options{CompliancePVC: "history"}, replicas: 1,
			strategy: appsv1.RecreateDeploymentStrategyType, claim: "history", fsGroupOwned: true},
		"a claim to create": {o: Options{CompliancePVC: "history", CompliancePVCSize: "2Gi"}, replicas: 1,
			strategy: appsv1.RecreateDeploymentStrategyType, claim: "history", fsGroupOwned: true},
	} {
		t.Run(name, func(t *testing.T) {
			tc.o.Image = "a.io/f:1"
			objs, err := Render(tc.o)
			require.NoError(t, err)
			d := deployment(t, objs)
			assert.Equal(t, tc.replicas, ptr.Deref(d.Spec.Replicas, 1))
			assert.Equal(t, tc.strategy, d.Spec.Strategy.Type)
			if tc.strategy == appsv1.RollingUpdateDeploymentStrategyType {
				require.NotNil(t, d.Spec.Strategy.RollingUpdate)
				assert.Equal(t, 0, d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue(), "a replica always serves the webhooks")
			} else {
				assert.Nil(t, d.Spec.Strategy.RollingUpdate)
			}
			data := volume(d, "data")
			require.NotNil(t, data)
			if tc.claim != "" {
				require.NotNil(t, data.PersistentVolumeClaim)
				assert.Equal(t, tc.claim, data.PersistentVolumeClaim.ClaimName)
				assert.Nil(t, data.EmptyDir)
			} else {
				assert.NotNil(t, data.EmptyDir)
				assert.Nil(t, data.PersistentVolumeClaim)
			}
			c := d.Spec.Template.Spec.Containers[0]
			var env []corev1.EnvVar
			for _, e := range c.Env {
				if e.Name == ComplianceDBEnv {
					env = append(env, e)
				}
			}
			if tc.secret != "" {
				require.Len(t, env, 1)
				assert.Empty(t, env[0].Value, "the URL is never in the Deployment")
				require.NotNil(t, env[0].ValueFrom)
				require.NotNil(t, env[0].ValueFrom.SecretKeyRef)
				assert.Equal(t, tc.secret, env[0].ValueFrom.SecretKeyRef.Name)
				assert.Equal(t, ComplianceDBKey, env[0].ValueFrom.SecretKeyRef.Key)
				assert.Nil(t, env[0].ValueFrom.SecretKeyRef.Optional, "a missing Secret or key stops the Pod rather than recording nowhere")
			} else {
				assert.Empty(t, env)
			}
			for _, a := range c.Args {
				assert.NotContains(t, a, "--compliance-db", "the store never reaches the command line")
			}
			assert.Contains(t, c.Args, "--leader-elect")
			if tc.fsGroupOwned {
				require.NotNil(t, d.Spec.Template.Spec.SecurityContext)
				assert.Equal(t, int64(65532), ptr.Deref(d.Spec.Template.Spec.SecurityContext.FSGroup, 0), "the claim's files belong to the image's user")
			}
			// secretKeyRef is read by the kubelet: the hub's ServiceAccount gets no Secret right for it.
			for _, o := range objs {
				if o.GetKind() != "ClusterRole" && o.GetKind() != "Role" {
					continue
				}
				rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
				for _, r := range rules {
					names, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resourceNames")
					assert.NotContains(t, names, "history-db", "%s %s", o.GetKind(), o.GetName())
				}
			}
		})
	}
}

func TestRenderRefusesBadStore(t *testing.T) {
	for name, tc := range map[string]struct {
		o    Options
		want string
	}{
		"both stores":          {Options{ComplianceDBSecret: "db", CompliancePVC: "history"}, "--compliance-db-secret and --compliance-pvc both name"},
		"a size without claim": {Options{CompliancePVCSize: "1Gi"}, "add --compliance-pvc <name>"},
		"a bad size":           {Options{CompliancePVC: "history", CompliancePVCSize: "lots"}, `--compliance-pvc-size "lots" is not a positive quantity`},
		"a zero size":          {Options{CompliancePVC: "history", CompliancePVCSize: "0"}, "not a positive quantity"},
		"a bad Secret name":    {Options{ComplianceDBSecret: "DB\nkey: x"}, `--compliance-db-secret "DB\nkey: x" is not an object name`},
		"a bad claim name":     {Options{CompliancePVC: "History"}, `--compliance-pvc "History" is not an object name`},
	} {
		t.Run(name, func(t *testing.T) {
			tc.o.Image = "a.io/f:1"
			_, err := Render(tc.o)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// TestCheckStore: Apply's look at the named Secret or claim before it
// changes anything; a message never quotes the URL.
func TestCheckStore(t *testing.T) {
	const password = "s3cret-pw"
	secret := func(data map[string]string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: Namespace}, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	claim := func(modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "history", Namespace: Namespace},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: modes}}
	}
	for name, tc := range map[string]struct {
		o      Options
		objs   []runtime.Object
		want   string // "" = accepted
		create bool
	}{
		"no store named":      {o: Options{}},
		"a PostgreSQL Secret": {o: Options{ComplianceDBSecret: "db"}, objs: []runtime.Object{secret(map[string]string{"url": "postgres://hub:" + password + "@pg:5432/history"})}},
		"a missing Secret": {o: Options{ComplianceDBSecret: "db"},
			want: "Secret open-cluster-management-hub/db not found: create it first"},
		"a Secret without the key": {o: Options{ComplianceDBSecret: "db"}, objs: []runtime.Object{secret(map[string]string{"password": password, "dsn": "x"})},
			want: `Secret open-cluster-management-hub/db has no key "url" (its keys: [dsn, password])`},
		"a Secret with another URL": {o: Options{ComplianceDBSecret: "db"}, objs: []runtime.Object{secret(map[string]string{"url": "mysql://hub:" + password + "@db/history"})},
			want: `key "url" of Secret open-cluster-management-hub/db is not a postgres://`},
		"an existing claim": {o: Options{CompliancePVC: "history"}, objs: []runtime.Object{claim(corev1.ReadWriteOnce)}},
		"an existing claim, size given": {o: Options{CompliancePVC: "history", CompliancePVCSize: "1Gi"},
			objs: []runtime.Object{claim(corev1.ReadWriteOnce)}},
		"a missing claim": {o: Options{CompliancePVC: "history"},
			want: "PersistentVolumeClaim open-cluster-management-hub/history not found: create it (ReadWriteOnce), or add --compliance-pvc-size 1Gi"},
		"a missing claim to create": {o: Options{CompliancePVC: "history", CompliancePVCSize: "1Gi"}, create: true},
		"a read-only claim": {o: Options{CompliancePVC: "history"}, objs: []runtime.Object{claim(corev1.ReadOnlyMany)},
			want: "PersistentVolumeClaim open-cluster-management-hub/history is not writable"},
		"a claim for one Pod": {o: Options{CompliancePVC: "history"}, objs: []runtime.Object{claim(corev1.ReadWriteOncePod)}},
		"a claim many nodes write": {o: Options{CompliancePVC: "history"}, objs: []runtime.Object{claim(corev1.ReadWriteOnce, corev1.ReadWriteMany)},
			want: "PersistentVolumeClaim open-cluster-management-hub/history may be written from many nodes"},
	} {
		t.Run(name, func(t *testing.T) {
			create, err := checkStore(context.Background(), fake.NewClientset(tc.objs...), tc.o)
			if tc.want == "" {
				require.NoError(t, err)
				assert.Equal(t, tc.create, create)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), password, "the URL's password stays out of messages")
		})
	}
}

// TestCreateClaim: a missing claim is made ReadWriteOnce with the size; one
// that exists already is kept.
func TestCreateClaim(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	o := Options{CompliancePVC: "history", CompliancePVCSize: "2Gi"}
	require.NoError(t, createClaim(ctx, cs, o))
	got, err := cs.CoreV1().PersistentVolumeClaims(Namespace).Get(ctx, "history", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, got.Spec.AccessModes)
	assert.Equal(t, "2Gi", ptr.To(got.Spec.Resources.Requests[corev1.ResourceStorage]).String())
	assert.Nil(t, got.Spec.StorageClassName, "the default StorageClass")
	require.NoError(t, createClaim(ctx, cs, Options{CompliancePVC: "history", CompliancePVCSize: "5Gi"}), "an existing claim is no error")
	got, err = cs.CoreV1().PersistentVolumeClaims(Namespace).Get(ctx, "history", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "2Gi", ptr.To(got.Spec.Resources.Requests[corev1.ResourceStorage]).String(), "and is kept as it is")
}

func TestRolledOut(t *testing.T) {
	avail := []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}
	dep := func(gen, observed int64, replicas, updated, total, available int32, terminating *int32) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: gen}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: observed, UpdatedReplicas: updated, Replicas: total,
				AvailableReplicas: available, TerminatingReplicas: terminating, Conditions: avail}}
	}
	for name, tc := range map[string]struct {
		d    *appsv1.Deployment
		want bool
	}{
		"rolled out":               {dep(2, 2, 2, 2, 2, 2, nil), true},
		"spec not seen yet":        {dep(3, 2, 2, 2, 2, 2, nil), false},
		"an old replica remains":   {dep(2, 2, 2, 1, 3, 3, nil), false},
		"an old replica ends":      {dep(2, 2, 2, 2, 2, 2, ptr.To[int32](1)), false},
		"none available":           {dep(2, 2, 2, 2, 2, 0, nil), false},
		"one replica, rolled out":  {dep(5, 5, 1, 1, 1, 1, ptr.To[int32](0)), true},
		"one replica, none yet up": {dep(5, 5, 1, 0, 0, 0, nil), false},
	} {
		t.Run(name, func(t *testing.T) { assert.Equal(t, tc.want, rolledOut(tc.d)) })
	}
}
