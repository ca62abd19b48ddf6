package work_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/internal/conditions"
)

// An apiserver error longer than a condition message may be (a ConfigMap with
// a 100,000-character key is refused with a message quoting it) still ends in
// a status: the message is cut, marked, and the work is Applied=False.
func TestApplyErrorLongerThanAConditionMessage(t *testing.T) {
	longKey := strings.Repeat("k", 100000) + "!" // too long, and not a valid key
	newWork(t, "cluster1", "long-message", namespace("long"),
		configMap("long", "huge-key", map[string]interface{}{longKey: "v"}),
		configMap("long", "fine", map[string]interface{}{"k": "v"})).create(t)

	w := eventuallyWork(t, "cluster1", "long-message", func(w *workv1.ManifestWork) bool {
		return condIs(w.Status.Conditions, "Applied", "False") && len(w.Status.ResourceStatus.Manifests) == 3
	}, "the work gets a status although the apiserver's error is over 32 KiB")
	c := manifestCond(w, 1, "Applied")
	require.NotNil(t, c)
	assert.Equal(t, workv1.AppliedManifestFailed, c.Reason)
	assert.LessOrEqual(t, len(c.Message), conditions.MaxMessage)
	assert.Contains(t, c.Message, "[truncated: ")
	assert.True(t, strings.HasPrefix(c.Message, "Failed to apply manifest: "), c.Message[:200])
	assert.Equal(t, "True", string(manifestCond(w, 2, "Applied").Status), "the manifest beside it applies")

	// The cut is reported in an Event on the work.
	s := runtime.NewScheme()
	require.NoError(t, eventsv1.AddToScheme(s))
	events, err := client.New(env.Hub.Config, client.Options{Scheme: s})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		var list eventsv1.EventList
		require.NoError(ct, events.List(context.Background(), &list, client.InNamespace("cluster1")))
		found := false
		for _, e := range list.Items {
			found = found || (e.Reason == conditions.ReasonMessageTruncated && e.Regarding.Name == "long-message" &&
				strings.Contains(e.Note, "status.resourceStatus.manifests[1].conditions[0].message"))
		}
		assert.True(ct, found, "an Event on the work names the cut message")
	}, wait, tick)
	deleteWork(t, "cluster1", "long-message")
}
