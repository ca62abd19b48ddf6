package work_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	workv1 "open-cluster-management.io/api/work/v1"
)

// TestReadOnlyFeedbackWatch: a ReadOnly manifest with feedbackScrapeType
// Watch has its feedback refreshed when the object changes, not at the next
// status sync (an hour here).
func TestReadOnlyFeedbackWatch(t *testing.T) {
	ctx := context.Background()
	spoke2 := kubernetes.NewForConfigOrDie(env.Clusters[1].Config)
	_, err := spoke2.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "watched"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = spoke2.CoreV1().ConfigMaps("watched").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "tick", Namespace: "watched"},
		Data: map[string]string{"n": "0"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	stop := startAgentWith(t, time.Hour)
	defer stop()
	newWork(t, "cluster2", "watcher", configMap("watched", "tick", nil)).config(workv1.ManifestConfigOption{
		ResourceIdentifier: cmID("watched", "tick"),
		UpdateStrategy:     &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly},
		FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: "n", Path: ".data.n"}}}},
		FeedbackScrapeType: workv1.FeedbackWatchType,
	}).create(t)
	feedback := func(want string) func(w *workv1.ManifestWork) bool {
		return func(w *workv1.ManifestWork) bool {
			m := w.Status.ResourceStatus.Manifests
			return len(m) == 1 && len(m[0].StatusFeedbacks.Values) == 1 && *m[0].StatusFeedbacks.Values[0].Value.String == want
		}
	}
	eventuallyWork(t, "cluster2", "watcher", feedback("0"), "first read")
	for _, n := range []string{"1", "2"} {
		cm, err := spoke2.CoreV1().ConfigMaps("watched").Get(ctx, "tick", metav1.GetOptions{})
		require.NoError(t, err)
		cm.Data["n"] = n
		_, err = spoke2.CoreV1().ConfigMaps("watched").Update(ctx, cm, metav1.UpdateOptions{})
		require.NoError(t, err)
		eventuallyWork(t, "cluster2", "watcher", feedback(n), "the change is seen through the watch")
	}
	deleteWork(t, "cluster2", "watcher")
	_, err = spoke2.CoreV1().ConfigMaps("watched").Get(ctx, "tick", metav1.GetOptions{})
	require.NoError(t, err, "ReadOnly: never deleted")
}
