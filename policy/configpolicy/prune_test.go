package configpolicy_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/configpolicy"
)

// A prune whose deletion cannot finish (the object has a finalizer of its
// own) leaves the policy Terminating with upstream's message until it can;
// then the policy goes.
func TestPruneFailureIsTerminating(t *testing.T) {
	ns := namespace(t, "prune-held", nil)
	apply(t, ns, fmt.Sprintf(`
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: held}
spec:
  remediationAction: enforce
  pruneObjectBehavior: DeleteAll
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: held, namespace: %s, finalizers: [example.com/hold]}, data: {a: "1"}}
`, ns))
	waitFor(t, ns, "held", policyv1.Compliant, "configmaps [held] found as specified in namespace prune-held")
	require.NoError(t, dyn.Resource(policiesGVR).Namespace(ns).Delete(ctx, "held", metav1.DeleteOptions{}))

	want := `Failed to delete objects: /v1, Kind=ConfigMap "held" in namespace prune-held`
	var p *policyv1.ConfigurationPolicy
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		p = getPolicy(t, ns, "held")
		assert.Equal(c, policyv1.Terminating, p.Status.ComplianceState)
		if assert.Len(c, p.Status.CompliancyDetails, 1) {
			d := p.Status.CompliancyDetails[0]
			assert.Equal(c, policyv1.Terminating, d.ComplianceState)
			assert.Equal(c, "violation", d.Conditions[0].Type)
			assert.Equal(c, configpolicy.ReasonCleanupError, d.Conditions[0].Reason)
			assert.Equal(c, want, d.Conditions[0].Message)
		}
	}, 60*time.Second, 50*time.Millisecond)
	require.Contains(t, p.Finalizers, configpolicy.Finalizer)
	require.Len(t, p.Status.RelatedObjects, 1, "related objects are kept while deletion is in progress")
	require.Equal(t, "Terminating; violation - "+want, p.Status.History[0].Message)

	// The object's own finalizer goes: the deletion finishes, so does the policy's.
	_, err := kube.CoreV1().ConfigMaps(ns).Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := dyn.Resource(policiesGVR).Namespace(ns).Get(ctx, "held", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 60*time.Second, 50*time.Millisecond)
	_, err = kube.CoreV1().ConfigMaps(ns).Get(ctx, "held", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err))
}

// Removing an object template from an enforce policy prunes the objects it
// related, as upstream: DeleteIfCreated only those the policy created,
// DeleteAll those too that it found; None nothing.
func TestPruneOnTemplateRemoval(t *testing.T) {
	for _, tc := range []struct {
		behavior                     string
		createdRemains, foundRemains bool
	}{
		{"DeleteIfCreated", false, true},
		{"DeleteAll", false, false},
		{"None", true, true},
	} {
		t.Run(tc.behavior, func(t *testing.T) {
			ns := namespace(t, "prune-removed-"+map[string]string{"DeleteIfCreated": "created", "DeleteAll": "all", "None": "none"}[tc.behavior], nil)
			apply(t, ns, `{apiVersion: v1, kind: ConfigMap, metadata: {name: found}, data: {a: "1"}}`)
			apply(t, ns, fmt.Sprintf(`
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: shrinking}
spec:
  remediationAction: enforce
  pruneObjectBehavior: %s
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: kept, namespace: %s}, data: {a: "1"}}
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: created, namespace: %s}, data: {a: "1"}}
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: found, namespace: %s}, data: {a: "1"}}
`, tc.behavior, ns, ns, ns))
			require.Eventually(t, func() bool {
				p := getPolicy(t, ns, "shrinking")
				return p.Status.ComplianceState == policyv1.Compliant && len(p.Status.RelatedObjects) == 3
			}, 60*time.Second, 50*time.Millisecond)

			patch := `[{"op":"remove","path":"/spec/object-templates/2"},{"op":"remove","path":"/spec/object-templates/1"}]`
			_, err := dyn.Resource(policiesGVR).Namespace(ns).Patch(ctx, "shrinking", types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				p := getPolicy(t, ns, "shrinking")
				return p.Status.LastEvaluatedGeneration == p.Generation && len(p.Status.RelatedObjects) == 1
			}, 60*time.Second, 50*time.Millisecond)
			_, err = kube.CoreV1().ConfigMaps(ns).Get(ctx, "created", metav1.GetOptions{})
			require.Equal(t, tc.createdRemains, err == nil, "created: %v", err)
			_, err = kube.CoreV1().ConfigMaps(ns).Get(ctx, "found", metav1.GetOptions{})
			require.Equal(t, tc.foundRemains, err == nil, "found: %v", err)
			_, err = kube.CoreV1().ConfigMaps(ns).Get(ctx, "kept", metav1.GetOptions{})
			require.NoError(t, err, "the template that stays keeps its object")
		})
	}
}
