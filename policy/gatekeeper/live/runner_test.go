package live_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"flotilla.dev/flotilla/policy/gatekeeper/live"
	"flotilla.dev/flotilla/test/testenv"
)

// One cluster without Gatekeeper and one runner for the package.
var (
	kube kubernetes.Interface
	dyn  dynamic.Interface
	ctx  = context.Background()
)

func TestMain(m *testing.M) {
	env, err := testenv.New(testenv.Options{Clusters: 1, NoHub: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		os.Exit(1)
	}
	cfg := env.Clusters[0].Config
	kube = kubernetes.NewForConfigOrDie(cfg)
	dyn = dynamic.NewForConfigOrDie(cfg)
	runCtx, cancel := context.WithCancel(ctx)
	if _, err := live.Start(runCtx, live.Options{Config: cfg, InstallTemplateCRD: true, RetryInterval: time.Second}); err != nil {
		fmt.Fprintln(os.Stderr, "runner:", err)
		_ = env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	cancel()
	_ = env.Stop()
	os.Exit(code)
}

func parse(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
	return u
}

func create(t *testing.T, gvr schema.GroupVersionResource, doc string) {
	t.Helper()
	u := parse(t, doc)
	_, err := dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
	require.NoError(t, err)
}

func fromFile(t *testing.T, name string) string {
	data, err := os.ReadFile("../testdata/" + name)
	require.NoError(t, err)
	return string(data)
}

func constraintGVR(kind string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "constraints.gatekeeper.sh", Version: "v1beta1", Resource: strings.ToLower(kind)}
}

// createConstraint creates a constraint once its CRD (made by the runner
// from the template) is served.
func createConstraint(t *testing.T, doc string) {
	t.Helper()
	u := parse(t, doc)
	require.Eventually(t, func() bool {
		_, err := dyn.Resource(constraintGVR(u.GetKind())).Create(ctx, u.DeepCopy(), metav1.CreateOptions{})
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "the runner creates the constraint kind's CRD")
}

// status returns a constraint's compliance and message.
func status(kind, name string) (string, string) {
	got, err := dyn.Resource(constraintGVR(kind)).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err.Error()
	}
	state, _, _ := unstructured.NestedString(got.Object, "status", "compliant")
	msg, _, _ := unstructured.NestedString(got.Object, "status", "message")
	return state, msg
}

func eventuallyStatus(t *testing.T, kind, name, state, msg string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		s, m := status(kind, name)
		assert.Equal(c, msg, m)
		assert.Equal(c, state, s)
	}, 30*time.Second, 100*time.Millisecond)
}

func namespace(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

var templatesGVR = live.TemplatesGVR

// A template and a constraint on a cluster with no Gatekeeper: the
// constraint reports its violations, and a change to one object changes its
// status and records a compliance event.
func TestRequiredLabelsLive(t *testing.T) {
	namespace(t, "team-a", map[string]string{"audited": "yes", "owner": "a"})
	namespace(t, "team-b", map[string]string{"audited": "yes"})
	namespace(t, "team-c", nil)
	create(t, templatesGVR, fromFile(t, "requiredlabels.yaml"))
	createConstraint(t, `apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sRequiredLabels
metadata: {name: audited-ns-have-owner}
spec:
  match:
    kinds: [{apiGroups: [""], kinds: [Namespace]}]
    labelSelector: {matchLabels: {audited: "yes"}}
  parameters: {labels: [owner]}`)
	eventuallyStatus(t, "K8sRequiredLabels", "audited-ns-have-owner", "NonCompliant",
		`K8sRequiredLabels/audited-ns-have-owner: 1 violation in 2 matching objects: [Namespace team-b] missing required labels: ["owner"]`)

	got, err := dyn.Resource(constraintGVR("K8sRequiredLabels")).Get(ctx, "audited-ns-have-owner", metav1.GetOptions{})
	require.NoError(t, err)
	total, _, _ := unstructured.NestedInt64(got.Object, "status", "totalViolations")
	require.Equal(t, int64(1), total)
	vs, _, _ := unstructured.NestedSlice(got.Object, "status", "violations")
	require.Equal(t, []any{map[string]any{"enforcementAction": "deny", "group": "", "version": "v1", "kind": "Namespace",
		"namespace": "", "name": "team-b", "message": `missing required labels: ["owner"]`}}, vs)
	tmpl, err := dyn.Resource(templatesGVR).Get(ctx, "k8srequiredlabels", metav1.GetOptions{})
	require.NoError(t, err)
	created, _, _ := unstructured.NestedBool(tmpl.Object, "status", "created")
	require.True(t, created)

	// Fix the one object: the constraint turns Compliant.
	ns, err := kube.CoreV1().Namespaces().Get(ctx, "team-b", metav1.GetOptions{})
	require.NoError(t, err)
	ns.Labels["owner"] = "b"
	_, err = kube.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventuallyStatus(t, "K8sRequiredLabels", "audited-ns-have-owner", "Compliant",
		`K8sRequiredLabels/audited-ns-have-owner: no violations in 2 matching objects`)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		evs, err := kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("reason", "policy: K8sRequiredLabels/audited-ns-have-owner").String()})
		require.NoError(c, err)
		var msgs []string
		for _, e := range evs.Items {
			msgs = append(msgs, e.Type+" "+e.Message)
		}
		assert.Contains(c, msgs, `Warning NonCompliant; violation - K8sRequiredLabels/audited-ns-have-owner: 1 violation in 2 matching objects: [Namespace team-b] missing required labels: ["owner"]`)
		assert.Contains(c, msgs, `Normal Compliant; notification - K8sRequiredLabels/audited-ns-have-owner: no violations in 2 matching objects`)
	}, 30*time.Second, 100*time.Millisecond)
}

// Namespaced objects, a namespaceSelector and a referential template: a new
// Ingress that reuses a host makes both Ingresses violate.
func TestUniqueIngressHostLive(t *testing.T) {
	namespace(t, "shop", map[string]string{"ingress-audit": "on"})
	namespace(t, "shop-preview", map[string]string{"ingress-audit": "on"})
	create(t, templatesGVR, fromFile(t, "uniqueingresshost.yaml"))
	createConstraint(t, `apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sUniqueIngressHost
metadata: {name: unique-hosts}
spec:
  match:
    kinds: [{apiGroups: [networking.k8s.io], kinds: [Ingress]}]
    namespaceSelector: {matchLabels: {ingress-audit: "on"}}`)
	ingress := schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}
	create(t, ingress, "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, namespace: shop}\nspec: {rules: [{host: shop.example.com}]}")
	eventuallyStatus(t, "K8sUniqueIngressHost", "unique-hosts", "Compliant", `K8sUniqueIngressHost/unique-hosts: no violations in 1 matching objects`)

	create(t, ingress, "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, namespace: shop-preview}\nspec: {rules: [{host: shop.example.com}]}")
	eventuallyStatus(t, "K8sUniqueIngressHost", "unique-hosts", "NonCompliant",
		`K8sUniqueIngressHost/unique-hosts: 2 violations in 2 matching objects: [Ingress shop-preview/web] ingress host shop.example.com conflicts with ingress shop/web; [Ingress shop/web] ingress host shop.example.com conflicts with ingress shop-preview/web`)

	require.NoError(t, dyn.Resource(ingress).Namespace("shop-preview").Delete(ctx, "web", metav1.DeleteOptions{}))
	eventuallyStatus(t, "K8sUniqueIngressHost", "unique-hosts", "Compliant", `K8sUniqueIngressHost/unique-hosts: no violations in 1 matching objects`)
}

// Rego that does not compile is reported on the template and on its
// constraints; the runner keeps going.
func TestBrokenRegoLive(t *testing.T) {
	create(t, templatesGVR, `apiVersion: templates.gatekeeper.sh/v1
kind: ConstraintTemplate
metadata: {name: k8sbrokenlive}
spec:
  crd: {spec: {names: {kind: K8sBrokenLive}}}
  targets:
  - target: admission.k8s.gatekeeper.sh
    rego: |
      package k8sbrokenlive
      violation[{"msg": msg}] {
        msg := undefined_function(input.review.object)
      }
`)
	want := "ConstraintTemplate k8sbrokenlive: rego does not compile: rego:3: rego_type_error: undefined function undefined_function"
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, err := dyn.Resource(templatesGVR).Get(ctx, "k8sbrokenlive", metav1.GetOptions{})
		require.NoError(c, err)
		byPod, _, _ := unstructured.NestedSlice(got.Object, "status", "byPod")
		require.Len(c, byPod, 1)
		errs, _, _ := unstructured.NestedSlice(byPod[0].(map[string]any), "errors")
		assert.Equal(c, []any{map[string]any{"code": "ingest_error", "message": want}}, errs)
	}, 30*time.Second, 100*time.Millisecond)
	createConstraint(t, "apiVersion: constraints.gatekeeper.sh/v1beta1\nkind: K8sBrokenLive\nmetadata: {name: b}\nspec: {match: {kinds: [{apiGroups: [\"\"], kinds: [Pod]}]}}")
	eventuallyStatus(t, "K8sBrokenLive", "b", "NonCompliant", want)
}

// ownerTemplate is a referential template that reads Namespaces from
// data.inventory although its constraint matches ConfigMaps: only its
// requires-sync-data brings them there.
const ownerTemplate = `apiVersion: templates.gatekeeper.sh/v1
kind: ConstraintTemplate
metadata:
  name: %[1]s
  annotations:
    metadata.gatekeeper.sh/requires-sync-data: |
      "[[{"groups": ["%[3]s"], "versions": ["v1"], "kinds": ["%[4]s"]}]]"
spec:
  crd: {spec: {names: {kind: %[2]s}}}
  targets:
  - target: admission.k8s.gatekeeper.sh
    rego: |
      package %[1]s
      violation[{"msg": msg}] {
        ns := input.review.object.data["owner-namespace"]
        not data.inventory.cluster["v1"]["Namespace"][ns]
        msg := sprintf("owner namespace %%v does not exist", [ns])
      }
`

// The kinds a template's requires-sync-data names are kept in
// data.inventory and a change to one audits its constraints again.
func TestSyncDataLive(t *testing.T) {
	namespace(t, "owners-app", nil)
	_, err := kube.CoreV1().ConfigMaps("owners-app").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cm", Labels: map[string]string{"owned": "yes"}}, Data: map[string]string{"owner-namespace": "owners-team"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	create(t, templatesGVR, fmt.Sprintf(ownerTemplate, "k8sownernamespace", "K8sOwnerNamespace", "", "Namespace"))
	createConstraint(t, "apiVersion: constraints.gatekeeper.sh/v1beta1\nkind: K8sOwnerNamespace\nmetadata: {name: owner}\nspec: {match: {kinds: [{apiGroups: [\"\"], kinds: [ConfigMap]}], namespaces: [owners-app], labelSelector: {matchLabels: {owned: \"yes\"}}}}")
	eventuallyStatus(t, "K8sOwnerNamespace", "owner", "NonCompliant",
		`K8sOwnerNamespace/owner: 1 violation in 1 matching objects: [ConfigMap owners-app/cm] owner namespace owners-team does not exist`)

	namespace(t, "owners-team", nil)
	eventuallyStatus(t, "K8sOwnerNamespace", "owner", "Compliant", `K8sOwnerNamespace/owner: no violations in 1 matching objects`)

	// A synced kind the cluster does not serve: said, never a silent audit
	// without it.
	create(t, templatesGVR, fmt.Sprintf(ownerTemplate, "k8sownerwidget", "K8sOwnerWidget", "example.com", "Widget"))
	createConstraint(t, "apiVersion: constraints.gatekeeper.sh/v1beta1\nkind: K8sOwnerWidget\nmetadata: {name: owner}\nspec: {match: {kinds: [{apiGroups: [\"\"], kinds: [ConfigMap]}], namespaces: [owners-app], labelSelector: {matchLabels: {owned: \"yes\"}}}}")
	eventuallyStatus(t, "K8sOwnerWidget", "owner", "NonCompliant",
		`constraint K8sOwnerWidget/owner: the kind Widget (group "example.com", version v1) its template k8sownerwidget syncs into data.inventory (requires-sync-data) is not served by this cluster`)
}
