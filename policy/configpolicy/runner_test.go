package configpolicy_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/configpolicy"
	"flotilla.dev/flotilla/test/testenv"
)

// One managed cluster and one engine for the whole package; every test works
// in namespaces of its own.
var (
	kube    kubernetes.Interface
	dyn     dynamic.Interface
	metrics *configpolicy.Metrics
	testCfg *rest.Config
)

var policiesGVR = policyv1.GroupVersion.WithResource("configurationpolicies")

func TestMain(m *testing.M) {
	env, err := testenv.New(testenv.Options{Clusters: 1, NoHub: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		os.Exit(1)
	}
	cfg := env.Clusters[0].Config
	testCfg = cfg
	kube = kubernetes.NewForConfigOrDie(cfg)
	dyn = dynamic.NewForConfigOrDie(cfg)
	metrics = configpolicy.NewMetrics(nil)
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := configpolicy.Start(ctx, configpolicy.Options{Config: cfg, Metrics: metrics}); err != nil {
		fmt.Fprintln(os.Stderr, "engine:", err)
		_ = env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	cancel()
	_ = env.Stop()
	os.Exit(code)
}

var ctx = context.Background()

func namespace(t *testing.T, name string, labels map[string]string) string {
	t.Helper()
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return name
}

func apply(t *testing.T, ns, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(y), &u.Object))
	gvr := policiesGVR
	if u.GetKind() != "ConfigurationPolicy" {
		gvr = map[string]schemaGVR{"ConfigMap": cmGVR, "Deployment": deployGVR}[u.GetKind()]
	}
	got, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
	require.NoError(t, err)
	return got
}

func getPolicy(t *testing.T, ns, name string) *policyv1.ConfigurationPolicy {
	t.Helper()
	u, err := dyn.Resource(policiesGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	p := &policyv1.ConfigurationPolicy{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p))
	return p
}

// waitFor waits until the policy's first template message is msg and returns the policy.
func waitFor(t *testing.T, ns, name string, state policyv1.ComplianceState, msg string) *policyv1.ConfigurationPolicy {
	t.Helper()
	var p *policyv1.ConfigurationPolicy
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		p = getPolicy(t, ns, name)
		got := ""
		if len(p.Status.CompliancyDetails) > 0 {
			got = p.Status.CompliancyDetails[0].Conditions[0].Message
		}
		assert.Equal(c, state, p.Status.ComplianceState)
		assert.Equal(c, msg, got)
	}, 60*time.Second, 50*time.Millisecond)
	return p
}

func events(t *testing.T, ns, policy string) []corev1.Event {
	t.Helper()
	list, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", policy).String(),
	})
	require.NoError(t, err)
	return list.Items
}

// webDeployment is a minimal Deployment whose live copy the apiserver fills
// with defaulted fields.
const webDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
`

// Inform MustHave: NonCompliant until the object appears (watch-driven),
// with a history entry and an event for each state.
func TestInformMustHaveFollowsTheCluster(t *testing.T) {
	ns := namespace(t, "inform-musthave", nil)
	apply(t, ns, `
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: need-prod}
spec:
  remediationAction: inform
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: Namespace, metadata: {name: inform-prod}}
`)
	waitFor(t, ns, "need-prod", policyv1.NonCompliant, "namespaces [inform-prod] not found")
	_, err := kube.CoreV1().Namespaces().Get(ctx, "inform-prod", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "inform must not create")

	namespace(t, "inform-prod", nil)
	p := waitFor(t, ns, "need-prod", policyv1.Compliant, "namespaces [inform-prod] found as specified")
	require.Len(t, p.Status.History, 2)
	require.Equal(t, "Compliant; notification - namespaces [inform-prod] found as specified", p.Status.History[0].Message)
	require.Equal(t, "NonCompliant; violation - namespaces [inform-prod] not found", p.Status.History[1].Message)
	require.Equal(t, p.Generation, p.Status.LastEvaluatedGeneration)
	require.Equal(t, "Compliant", p.Status.RelatedObjects[0].Compliant)

	// The event follows the status write that records it.
	var msgs []string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		msgs = nil
		for _, e := range events(t, ns, "need-prod") {
			assert.Equal(c, "policy: "+ns+"/need-prod", e.Reason)
			msgs = append(msgs, e.Message)
		}
		assert.ElementsMatch(c, []string{p.Status.History[0].Message, p.Status.History[1].Message}, msgs)
	}, timeout, tick)
	for _, h := range p.Status.History {
		ev, err := kube.CoreV1().Events(ns).Get(ctx, h.EventName, metav1.GetOptions{})
		require.NoError(t, err, "history names its event")
		require.Equal(t, h.Message, ev.Message)
	}
	require.Equal(t, 0.0, testutil.ToFloat64(metrics.GovernanceInfo.WithLabelValues("ConfigurationPolicy", "need-prod", ns)))
	require.Positive(t, testutil.ToFloat64(metrics.Evaluations.WithLabelValues("Compliant")))
	require.Positive(t, testutil.CollectAndCount(metrics.EvaluationSeconds))
}

// Enforce MustHave creates the object, records createdByPolicy and its UID,
// and repairs drift.
func TestEnforceMustHaveCreatesAndRepairsDrift(t *testing.T) {
	ns := namespace(t, "enforce-musthave", nil)
	apply(t, ns, `
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: settings}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: settings, namespace: enforce-musthave, labels: {team: a}}
      data: {level: info}
`)
	p := waitFor(t, ns, "settings", policyv1.Compliant, "configmaps [settings] found as specified in namespace enforce-musthave")
	cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "info", cm.Data["level"])
	props := p.Status.RelatedObjects[0].Properties
	require.NotNil(t, props)
	require.True(t, *props.CreatedByPolicy)
	require.Equal(t, string(cm.UID), props.UID)
	var hist []string
	for _, h := range p.Status.History {
		hist = append(hist, h.Message)
	}
	require.Contains(t, hist, "Compliant; notification - configmaps [settings] was created successfully in namespace enforce-musthave")

	// Drift: someone changes the value and adds a key; enforce restores the
	// value and keeps the extra key (MustHave).
	cm.Data = map[string]string{"level": "debug", "extra": "x"}
	_, err = kube.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
		return err == nil && cm.Data["level"] == "info" && cm.Data["extra"] == "x"
	}, 60*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool {
		p = getPolicy(t, ns, "settings")
		h := p.Status.History
		return len(h) >= 2 && strings.Contains(h[1].Message, "configmaps [settings] was updated successfully") &&
			strings.Contains(h[0].Message, "configmaps [settings] found as specified")
	}, 60*time.Second, 50*time.Millisecond)
	require.True(t, *p.Status.RelatedObjects[0].Properties.CreatedByPolicy, "still the object the policy created")
}

// MustOnlyHave removes what the template does not name; inform reports it.
func TestMustOnlyHave(t *testing.T) {
	ns := namespace(t, "mustonlyhave", nil)
	apply(t, ns, `{apiVersion: v1, kind: ConfigMap, metadata: {name: exact}, data: {a: "1", b: "2"}}`)
	apply(t, ns, `
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: exact}
spec:
  remediationAction: inform
  object-templates:
  - complianceType: mustonlyhave
    recordDiff: InStatus
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: exact, namespace: mustonlyhave}, data: {a: "1"}}
`)
	p := waitFor(t, ns, "exact", policyv1.NonCompliant, "configmaps [exact] found but not as specified in namespace mustonlyhave")
	// recordDiff InStatus (a ConfigMap's diff is redacted by default)
	require.Contains(t, p.Status.RelatedObjects[0].Properties.Diff, `-  b: "2"`)

	patch := []byte(`{"spec":{"remediationAction":"enforce"}}`)
	_, err := dyn.Resource(policiesGVR).Namespace(ns).Patch(ctx, "exact", "application/merge-patch+json", patch, metav1.PatchOptions{})
	require.NoError(t, err)
	waitFor(t, ns, "exact", policyv1.Compliant, "configmaps [exact] found as specified in namespace mustonlyhave")
	cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "exact", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "1"}, cm.Data)
}

// MustNotHave: inform reports the object, enforce deletes it.
func TestMustNotHave(t *testing.T) {
	ns := namespace(t, "mustnothave", nil)
	apply(t, ns, `{apiVersion: v1, kind: ConfigMap, metadata: {name: legacy}, data: {a: "1"}}`)
	apply(t, ns, `
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: no-legacy}
spec:
  remediationAction: inform
  object-templates:
  - complianceType: mustnothave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: legacy, namespace: mustnothave}}
`)
	waitFor(t, ns, "no-legacy", policyv1.NonCompliant, "configmaps [legacy] found in namespace mustnothave")
	_, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "legacy", metav1.GetOptions{})
	require.NoError(t, err, "inform must not delete")
	require.Equal(t, 1.0, testutil.ToFloat64(metrics.GovernanceInfo.WithLabelValues("ConfigurationPolicy", "no-legacy", ns)))

	_, err = dyn.Resource(policiesGVR).Namespace(ns).Patch(ctx, "no-legacy", "application/merge-patch+json",
		[]byte(`{"spec":{"remediationAction":"enforce"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	waitFor(t, ns, "no-legacy", policyv1.Compliant, "configmaps [legacy] missing as expected in namespace mustnothave")
	_, err = kube.CoreV1().ConfigMaps(ns).Get(ctx, "legacy", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err))
	p := getPolicy(t, ns, "no-legacy")
	var hist []string
	for _, h := range p.Status.History {
		hist = append(hist, h.Message)
	}
	require.Contains(t, hist, "Compliant; notification - configmaps [legacy] was deleted successfully in namespace mustnothave")
}

// pruneObjectBehavior on deletion, as upstream: only an enforce policy
// prunes; DeleteIfCreated removes only what the policy created; DeleteAll
// every related object (a match of a template without a name included).
func TestPruneOnPolicyDeletion(t *testing.T) {
	for _, tc := range []struct {
		behavior, remediation string
		createdRemains        bool
		foundRemains          bool
		matchRemains          bool
	}{
		{"DeleteIfCreated", "enforce", false, true, true},
		{"DeleteAll", "enforce", false, false, false},
		{"None", "enforce", true, true, true},
		{"DeleteAll", "inform", false, true, true}, // inform never created "created"
	} {
		t.Run(tc.behavior+"-"+tc.remediation, func(t *testing.T) {
			ns := namespace(t, "prune-"+strings.ToLower(tc.behavior+"-"+tc.remediation), nil)
			apply(t, ns, `{apiVersion: v1, kind: ConfigMap, metadata: {name: found}, data: {a: "1"}}`)
			apply(t, ns, `{apiVersion: v1, kind: ConfigMap, metadata: {name: match}, data: {unnamed: "yes"}}`)
			apply(t, ns, fmt.Sprintf(`
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: pruned}
spec:
  remediationAction: %s
  pruneObjectBehavior: %s
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: created, namespace: %s}, data: {a: "1"}}
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: found, namespace: %s}, data: {a: "1"}}
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {namespace: %s}, data: {unnamed: "yes"}}
`, tc.remediation, tc.behavior, ns, ns, ns))
			require.Eventually(t, func() bool {
				p := getPolicy(t, ns, "pruned")
				if tc.remediation == "inform" {
					return p.Status.ComplianceState == policyv1.NonCompliant && len(p.Status.RelatedObjects) == 3
				}
				return p.Status.ComplianceState == policyv1.Compliant && len(p.Status.RelatedObjects) == 3 &&
					p.Status.RelatedObjects[0].Properties != nil && p.Status.RelatedObjects[0].Properties.CreatedByPolicy != nil
			}, 60*time.Second, 50*time.Millisecond)
			if tc.behavior != "None" {
				require.Contains(t, getPolicy(t, ns, "pruned").Finalizers, configpolicy.Finalizer)
			}
			require.NoError(t, dyn.Resource(policiesGVR).Namespace(ns).Delete(ctx, "pruned", metav1.DeleteOptions{}))
			require.Eventually(t, func() bool {
				_, err := dyn.Resource(policiesGVR).Namespace(ns).Get(ctx, "pruned", metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			}, 60*time.Second, 50*time.Millisecond)
			_, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "created", metav1.GetOptions{})
			require.Equal(t, tc.createdRemains, err == nil, "created: %v", err)
			_, err = kube.CoreV1().ConfigMaps(ns).Get(ctx, "found", metav1.GetOptions{})
			require.Equal(t, tc.foundRemains, err == nil, "found: %v", err)
			_, err = kube.CoreV1().ConfigMaps(ns).Get(ctx, "match", metav1.GetOptions{})
			require.Equal(t, tc.matchRemains, err == nil, "match: %v", err)
		})
	}
}

// namespaceSelector by labels: a namespace that gains the label is governed
// too, without touching the policy.
func TestNamespaceSelectorLabels(t *testing.T) {
	ns := namespace(t, "selector-policies", nil)
	namespace(t, "selector-a", map[string]string{"quota": "yes"})
	namespace(t, "selector-b", nil)
	apply(t, ns, `
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: marker}
spec:
  remediationAction: enforce
  namespaceSelector: {matchLabels: {quota: "yes"}}
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: marker}, data: {a: "1"}}
`)
	waitFor(t, ns, "marker", policyv1.Compliant, "configmaps [marker] found as specified in namespace selector-a")
	_, err := kube.CoreV1().ConfigMaps("selector-b").Get(ctx, "marker", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err))

	b, err := kube.CoreV1().Namespaces().Get(ctx, "selector-b", metav1.GetOptions{})
	require.NoError(t, err)
	b.Labels["quota"] = "yes"
	_, err = kube.CoreV1().Namespaces().Update(ctx, b, metav1.UpdateOptions{})
	require.NoError(t, err)
	waitFor(t, ns, "marker", policyv1.Compliant, "configmaps [marker] found as specified in namespaces: selector-a, selector-b")
}

// A policy naming a kind the cluster does not serve is NonCompliant with a
// message that says so; other policies are evaluated as usual.
func TestUnknownKindDoesNotAffectOthers(t *testing.T) {
	ns := namespace(t, "unknown-kind", nil)
	apply(t, ns, `
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: widgets}
spec:
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: unknown-kind}}
`)
	apply(t, ns, `
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: fine}
spec:
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: Namespace, metadata: {name: unknown-kind}}
`)
	waitFor(t, ns, "widgets", policyv1.NonCompliant,
		"couldn't find mapping resource with kind Widget in API version example.com/v1, please check if you have CRD deployed")
	waitFor(t, ns, "fine", policyv1.Compliant, "namespaces [unknown-kind] found as specified")

	// Installing the CRD re-evaluates the policy: the kind is now known.
	crd := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`), &crd.Object))
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	_, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{})
	require.NoError(t, err)
	waitFor(t, ns, "widgets", policyv1.NonCompliant, "widgets [w] not found in namespace unknown-kind")
}

// The server-side dry-run recognises an update that would change nothing:
// MustOnlyHave on a Deployment whose live containers carry defaulted fields.
func TestDryRunRecognisesDefaults(t *testing.T) {
	ns := namespace(t, "dryrun-defaults", nil)
	apply(t, ns, webDeployment)
	apply(t, ns, `
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: web}
spec:
  remediationAction: inform
  object-templates:
  - complianceType: mustonlyhave
    objectDefinition:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: web, namespace: dryrun-defaults}
      spec:
        selector: {matchLabels: {app: web}}
        template:
          metadata: {labels: {app: web}}
          spec:
            containers: [{name: web, image: "nginx:1.27"}]
`)
	waitFor(t, ns, "web", policyv1.Compliant, "deployments [web] found as specified in namespace dryrun-defaults")
}

// evaluationInterval for Compliant ("never", or longer than the test):
// object changes are not evaluated until the policy itself changes.
func TestEvaluationIntervalThrottles(t *testing.T) {
	for _, tc := range []struct{ name, interval string }{{"never", "never"}, {"hour", "1h"}} {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t, "interval-"+tc.name, nil)
			apply(t, ns, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: "1"}}`)
			apply(t, ns, fmt.Sprintf(`
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: once}
spec:
  remediationAction: inform
  evaluationInterval: {compliant: %s}
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: %s}, data: {a: "1"}}
`, tc.interval, ns))
			found := "configmaps [c] found as specified in namespace " + ns
			onceFound := found
			if tc.interval == "never" { // upstream's note
				onceFound += `. This policy will not be evaluated again due to spec.evaluationInterval.compliant being set to "never".`
			}
			waitFor(t, ns, "once", policyv1.Compliant, onceFound)
			// Sibling policies watching the same object (no interval, and
			// "watch") prove the change was seen.
			for name, interval := range map[string]string{"always": "{}", "watching": "{compliant: watch, noncompliant: watch}"} {
				apply(t, ns, fmt.Sprintf(`
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: %s}
spec:
  evaluationInterval: %s
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: %s}, data: {a: "1"}}
`, name, interval, ns))
				waitFor(t, ns, name, policyv1.Compliant, found)
			}
			require.NoError(t, kube.CoreV1().ConfigMaps(ns).Delete(ctx, "c", metav1.DeleteOptions{}))
			missing := "configmaps [c] not found in namespace " + ns
			waitFor(t, ns, "always", policyv1.NonCompliant, missing)
			waitFor(t, ns, "watching", policyv1.NonCompliant, missing)
			require.Equal(t, policyv1.Compliant, getPolicy(t, ns, "once").Status.ComplianceState)

			// Changing the policy evaluates it again.
			_, err := dyn.Resource(policiesGVR).Namespace(ns).Patch(ctx, "once", "application/merge-patch+json",
				[]byte(`{"spec":{"severity":"high"}}`), metav1.PatchOptions{})
			require.NoError(t, err)
			waitFor(t, ns, "once", policyv1.NonCompliant, missing)
		})
	}
}

// What the apiserver refuses is reported, not lost: enforce into a namespace
// that does not exist stays NonCompliant with the apiserver's reason.
func TestEnforceRefusedIsReported(t *testing.T) {
	ns := namespace(t, "refused", nil)
	apply(t, ns, `
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: nowhere}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: does-not-exist}, data: {a: "1"}}
`)
	p := waitFor(t, ns, "nowhere", policyv1.NonCompliant,
		"configmaps [c] in namespace does-not-exist is missing, and cannot be created, reason: `namespaces \"does-not-exist\" not found`")
	require.Equal(t, "K8s creation error", p.Status.RelatedObjects[0].Reason)
}

// Apply creates, then updates, policies (what `flotilla policy apply` does);
// List reads them back with their status.
func TestApplyAndList(t *testing.T) {
	ns := namespace(t, "apply-list", nil)
	p := &policyv1.ConfigurationPolicy{}
	require.NoError(t, yaml.Unmarshal([]byte(`
metadata: {name: applied}
spec:
  remediationAction: inform
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: Namespace, metadata: {name: apply-list}}
`), p))
	cfg := testCfg
	done, err := configpolicy.Apply(ctx, cfg, ns, []*policyv1.ConfigurationPolicy{p})
	require.NoError(t, err)
	require.Equal(t, []string{"created"}, done)
	waitFor(t, ns, "applied", policyv1.Compliant, "namespaces [apply-list] found as specified")

	p.Spec.RemediationAction = "enforce"
	done, err = configpolicy.Apply(ctx, cfg, ns, []*policyv1.ConfigurationPolicy{p})
	require.NoError(t, err)
	require.Equal(t, []string{"updated"}, done)
	list, err := configpolicy.List(ctx, cfg, ns)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, policyv1.RemediationAction("enforce"), list[0].Spec.RemediationAction)
	require.Equal(t, policyv1.Compliant, list[0].Status.ComplianceState, "apply keeps the status")
}

// Liveness bounds for the engine to react; not performance thresholds.
const (
	timeout = 60 * time.Second
	tick    = 50 * time.Millisecond
)

type assertT = assert.CollectT

func assertEqual(c *assert.CollectT, want, got any) { assert.Equal(c, want, got) }

// History keeps the newest 10 entries, newest first.
func TestHistoryKeepsNewestTen(t *testing.T) {
	ns := namespace(t, "history", nil)
	apply(t, ns, `{apiVersion: v1, kind: ConfigMap, metadata: {name: flip}, data: {a: "1"}}`)
	apply(t, ns, `
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: flip}
spec:
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: flip, namespace: history}, data: {a: "1"}}
`)
	found := "configmaps [flip] found as specified in namespace history"
	waitFor(t, ns, "flip", policyv1.Compliant, found)
	for i := 0; i < 6; i++ {
		for _, v := range []string{"2", "1"} {
			_, err := kube.CoreV1().ConfigMaps(ns).Patch(ctx, "flip", "application/merge-patch+json",
				[]byte(`{"data":{"a":"`+v+`"}}`), metav1.PatchOptions{})
			require.NoError(t, err)
			if v == "2" {
				waitFor(t, ns, "flip", policyv1.NonCompliant, "configmaps [flip] found but not as specified in namespace history")
			} else {
				waitFor(t, ns, "flip", policyv1.Compliant, found)
			}
		}
	}
	h := getPolicy(t, ns, "flip").Status.History
	require.Len(t, h, policyv1.MaxHistory)
	require.Equal(t, "Compliant; notification - "+found, h[0].Message)
	for i := 1; i < len(h); i++ {
		require.False(t, h[i].LastTimestamp.After(h[i-1].LastTimestamp.Time), "newest first")
		require.NotEqual(t, h[i].Message, h[i-1].Message, "one entry per change")
	}
}

type schemaGVR = schema.GroupVersionResource

var (
	cmGVR     = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deployGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)
