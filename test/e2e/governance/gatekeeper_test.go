package governance_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/agent"
	"flotilla.dev/flotilla/policy/gatekeeper/live"
)

const requiredLabelsTemplate = `apiVersion: templates.gatekeeper.sh/v1
kind: ConstraintTemplate
metadata:
  name: k8sgovlabels
spec:
  crd:
    spec:
      names:
        kind: K8sGovLabels
  targets:
  - target: admission.k8s.gatekeeper.sh
    rego: |
      package k8sgovlabels

      violation[{"msg": msg}] {
        have := {k | input.review.object.metadata.labels[k]}
        want := {k | k := input.parameters.labels[_]}
        missing := want - have
        count(missing) > 0
        msg := sprintf("you must provide labels: %v", [sort(missing)])
      }
`

const requiredLabelsConstraint = `apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sGovLabels
metadata:
  name: ns-must-have-owner
spec:
  match:
    kinds:
    - apiGroups: [""]
      kinds: ["Namespace"]
    labelSelector:
      matchLabels: {gk-test: "yes"}
  parameters:
    labels: ["owner"]
`

var constraintGVR = schema.GroupVersionResource{Group: "constraints.gatekeeper.sh", Version: "v1beta1", Resource: "k8sgovlabels"}

// TestGatekeeperPolicy: a Policy carrying a ConstraintTemplate and a
// constraint, bound by Placement. On cluster1 (no Gatekeeper) the framework
// delivers them and Flotilla's Rego engine audits: the violation reaches the
// hub replica and the root; fixed on the spoke, Compliant. On cluster2
// (Gatekeeper installed) the objects are delivered as they are, the engine
// stays off, and Gatekeeper's audit status (written here as Gatekeeper
// would) is what the hub reports. The binding gone, the objects go.
func TestGatekeeperPolicy(t *testing.T) {
	ctx := context.Background()
	ns := "gk"
	policyNamespace(t, ns)
	k1 := kubernetes.NewForConfigOrDie(env.Clusters[0].Config)
	_, err := k1.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gk-bad",
		Labels: map[string]string{"gk-test": "yes"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	binding := bindPolicy(t, ns, "gk-labels", policyv1.Inform, requiredLabelsTemplate, requiredLabelsConstraint)

	// cluster1: audited by Flotilla's engine.
	require.Eventually(t, func() bool {
		state, msg := replicaDetail("cluster1", ns, "gk-labels", "ns-must-have-owner")
		return state == policyv1.NonCompliant &&
			msg == `NonCompliant; violation - warn - you must provide labels: ["owner"] (on Namespace gk-bad)`
	}, timeout, tick, "cluster1 violation never reached the hub")
	_, msg := replicaDetail("cluster1", ns, "gk-labels", "k8sgovlabels")
	assert.Equal(t, "Compliant; notification - ConstraintTemplate k8sgovlabels was created successfully", msg)
	d1 := dynamic.NewForConfigOrDie(env.Clusters[0].Config)
	c, err := d1.Resource(constraintGVR).Get(ctx, "ns-must-have-owner", metav1.GetOptions{})
	require.NoError(t, err)
	action, _, _ := unstructured.NestedString(c.Object, "spec", "enforcementAction")
	assert.Equal(t, "warn", action, "inform delivers the constraint as warn")
	assert.Equal(t, ns+".gk-labels", c.GetLabels()[agent.PolicyLabel])
	eventuallyRootState(t, ns, "gk-labels", policyv1.NonCompliant)

	// Fixed on the spoke: Compliant on the hub.
	_, err = k1.CoreV1().Namespaces().Patch(ctx, "gk-bad", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"owner":"me"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		state, msg := replicaDetail("cluster1", ns, "gk-labels", "ns-must-have-owner")
		return state == policyv1.Compliant && msg == "Compliant; notification - warn - the Gatekeeper constraint has not detected any active violations"
	}, timeout, tick, "cluster1 never Compliant")

	// cluster2: Gatekeeper's. The template is delivered; Flotilla's engine
	// does not touch it. The test plays Gatekeeper: constraint CRD, statuses.
	d2 := dynamic.NewForConfigOrDie(env.Clusters[1].Config)
	var tpl *unstructured.Unstructured
	require.Eventually(t, func() bool {
		tpl, err = d2.Resource(live.TemplatesGVR).Get(ctx, "k8sgovlabels", metav1.GetOptions{})
		return err == nil
	}, timeout, tick, "template never delivered to cluster2")
	_, hasStatus := tpl.Object["status"]
	assert.False(t, hasStatus, "Flotilla's engine wrote the status of a template on a cluster with Gatekeeper: %v", tpl.Object["status"])
	tpl.Object["status"] = map[string]any{"created": true}
	_, err = d2.Resource(live.TemplatesGVR).UpdateStatus(ctx, tpl, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, installCRD(ctx, env.Clusters[1].Config, gatekeeperCRD(live.ConstraintCRD("K8sGovLabels"))))
	require.Eventually(t, func() bool {
		c, err = d2.Resource(constraintGVR).Get(ctx, "ns-must-have-owner", metav1.GetOptions{})
		return err == nil
	}, timeout, tick, "constraint never delivered to cluster2")
	c.Object["status"] = map[string]any{"auditTimestamp": time.Now().UTC().Format(time.RFC3339), "totalViolations": int64(2),
		"violations": []any{
			map[string]any{"enforcementAction": "warn", "kind": "Namespace", "name": "team-a", "message": `you must provide labels: {"owner"}`},
			map[string]any{"enforcementAction": "warn", "kind": "Pod", "namespace": "team-a", "name": "web", "message": "x"},
		}}
	_, err = d2.Resource(constraintGVR).UpdateStatus(ctx, c, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		state, msg := replicaDetail("cluster2", ns, "gk-labels", "ns-must-have-owner")
		return state == policyv1.NonCompliant &&
			msg == `NonCompliant; violation - warn - you must provide labels: {"owner"} (on Namespace team-a); warn - x (on Pod team-a/web)`
	}, timeout, tick, "Gatekeeper's audit never reached the hub")
	eventuallyRootState(t, ns, "gk-labels", policyv1.NonCompliant)

	// The binding goes: the objects go from both clusters.
	require.NoError(t, hubCli.Delete(ctx, binding))
	for _, d := range []dynamic.Interface{d1, d2} {
		require.Eventually(t, func() bool {
			_, e1 := d.Resource(constraintGVR).Get(ctx, "ns-must-have-owner", metav1.GetOptions{})
			_, e2 := d.Resource(live.TemplatesGVR).Get(ctx, "k8sgovlabels", metav1.GetOptions{})
			return e1 != nil && e2 != nil
		}, timeout, tick, "Gatekeeper objects not removed")
	}
}

// TestGatekeeperBrokenRego: a ConstraintTemplate whose Rego does not
// compile makes the policy NonCompliant on the hub with the compile error,
// and the agents keep going.
func TestGatekeeperBrokenRego(t *testing.T) {
	ns := "gk-broken"
	policyNamespace(t, ns)
	bindPolicy(t, ns, "broken", policyv1.Inform, `apiVersion: templates.gatekeeper.sh/v1
kind: ConstraintTemplate
metadata: {name: k8sgovbroken}
spec:
  crd: {spec: {names: {kind: K8sGovBroken}}}
  targets:
  - target: admission.k8s.gatekeeper.sh
    rego: |
      package k8sgovbroken
      violation[{"msg": msg}] {
        msg := undefined_function(input.review.object)
      }
`, `apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sGovBroken
metadata: {name: broken}
spec: {match: {kinds: [{apiGroups: [""], kinds: [Namespace]}]}}
`)
	require.Eventually(t, func() bool {
		state, msg := replicaDetail("cluster1", ns, "broken", "k8sgovbroken")
		return state == policyv1.NonCompliant && strings.HasPrefix(msg, "NonCompliant; violation - ConstraintTemplate k8sgovbroken could not be created: ") &&
			strings.Contains(msg, "undefined function undefined_function")
	}, timeout, tick, "compile error never reached the hub")
	eventuallyRootState(t, ns, "broken", policyv1.NonCompliant)
	var root policyv1.Policy
	require.NoError(t, hubCli.Get(context.Background(), clientKey(ns, "broken"), &root))
	assert.Equal(t, policyv1.NonCompliant, root.Status.ComplianceState)
}

func eventuallyRootState(t *testing.T, ns, name string, want policyv1.ComplianceState) {
	t.Helper()
	var root policyv1.Policy
	require.Eventually(t, func() bool {
		return hubCli.Get(context.Background(), clientKey(ns, name), &root) == nil && root.Status.ComplianceState == want
	}, timeout, tick, "root %s/%s never %s (now %q)", ns, name, want, root.Status.ComplianceState)
}
