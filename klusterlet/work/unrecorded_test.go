package work_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/klusterlet/work/applied"
)

// The agent writes a work's status before the record's list of applied
// resources. An agent that stopped between the apply and the record left a
// resource the record does not list; deleting the work must still delete it
// (it carries an owner reference to the record), and leave alone an object of
// the same name that the record does not own.
func TestDeletionCleansUpWhatTheRecordMissed(t *testing.T) {
	ctx := context.Background()
	spoke2 := kubernetes.NewForConfigOrDie(env.Clusters[1].Config)
	scheme := runtime.NewScheme()
	_ = workv1.Install(scheme)
	spoke2c, err := client.New(env.Clusters[1].Config, client.Options{Scheme: scheme})
	require.NoError(t, err)

	// The state the stopped agent left: the work with its finalizer, the
	// record without resources, the ConfigMap owned by the record, and a
	// second ConfigMap of the work that someone else created (not owned).
	_, err = spoke2.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "unrecorded"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	w := newWork(t, "cluster2", "unrecorded",
		configMap("unrecorded", "applied", map[string]interface{}{"k": "v"}),
		configMap("unrecorded", "foreign", map[string]interface{}{"k": "v"}))
	w.w.Finalizers = []string{workv1.ManifestWorkFinalizer}
	w.create(t)
	amw := &workv1.AppliedManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: applied.Name(hubHash, "unrecorded"), Finalizers: []string{workv1.AppliedManifestWorkFinalizer},
			Labels: map[string]string{applied.ClusterLabel: "cluster2"}},
		Spec: workv1.AppliedManifestWorkSpec{HubHash: hubHash, AgentID: "cluster2", ManifestWorkName: "unrecorded"},
	}
	require.NoError(t, spoke2c.Create(ctx, amw))
	owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "unrecorded", Name: "applied",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: workv1.GroupVersion.String(), Kind: "AppliedManifestWork", Name: amw.Name, UID: amw.UID}}},
		Data: map[string]string{"k": "v"}}
	_, err = spoke2.CoreV1().ConfigMaps("unrecorded").Create(ctx, owned, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = spoke2.CoreV1().ConfigMaps("unrecorded").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "unrecorded", Name: "foreign"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, hub.Delete(ctx, getWork(t, "cluster2", "unrecorded")))

	// The agent comes back and finishes the deletion.
	startAgent(t)
	deleteWork(t, "cluster2", "unrecorded")
	_, err = spoke2.CoreV1().ConfigMaps("unrecorded").Get(ctx, "applied", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the unrecorded ConfigMap owned by the record should be deleted, got %v", err)
	_, err = spoke2.CoreV1().ConfigMaps("unrecorded").Get(ctx, "foreign", metav1.GetOptions{})
	require.NoError(t, err, "a ConfigMap the record does not own must stay")
	err = spoke2c.Get(ctx, client.ObjectKeyFromObject(amw), &workv1.AppliedManifestWork{})
	require.True(t, apierrors.IsNotFound(err), "the record should be gone, got %v", err)
}
