package gatekeeper

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// obj parses one YAML object.
func obj(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	m := map[string]any{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &m))
	return &unstructured.Unstructured{Object: m}
}

// engine compiles every template of testdata/.
func engine(t testing.TB) *Engine {
	t.Helper()
	files, err := filepath.Glob("testdata/*.yaml")
	require.NoError(t, err)
	e := NewEngine()
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		_, err = e.AddTemplate(t.Context(), obj(t, string(data)))
		require.NoError(t, err, f)
	}
	return e
}

func pod(name, ns string, extra string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  namespace: " + ns + "\n" + extra
}

const (
	nsProd = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: prod\n  labels: {env: prod, owner: team-a}\n"
	nsDev  = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: dev\n  labels: {env: dev}\n"
	nsKube = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kube-system\n"
)

func TestAudit(t *testing.T) {
	cases := []struct {
		name       string
		constraint string
		objects    []string
		state      policyv1.ComplianceState
		message    string
	}{{
		name: "required labels: namespaces without owner",
		constraint: `apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sRequiredLabels
metadata: {name: ns-must-have-owner}
spec:
  match:
    kinds: [{apiGroups: [""], kinds: [Namespace]}]
    excludedNamespaces: ["kube-*"]
  parameters: {labels: [owner, env]}`,
		objects: []string{nsProd, nsDev, nsKube, pod("p", "dev", "")},
		state:   policyv1.NonCompliant,
		message: `K8sRequiredLabels/ns-must-have-owner: 1 violation in 2 matching objects: [Namespace dev] missing required labels: ["owner"]`,
	}, {
		name: "required labels: all present",
		constraint: `apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sRequiredLabels
metadata: {name: ns-must-have-env}
spec:
  match: {kinds: [{apiGroups: [""], kinds: [Namespace]}], labelSelector: {matchExpressions: [{key: env, operator: Exists}]}}
  parameters: {labels: [env]}`,
		objects: []string{nsProd, nsDev, nsKube},
		state:   policyv1.Compliant,
		message: `K8sRequiredLabels/ns-must-have-env: no violations in 2 matching objects`,
	}, {
		name: "allowed repos with a lib, by namespaceSelector",
		constraint: `apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sAllowedRepos
metadata: {name: prod-repos}
spec:
  match:
    kinds: [{apiGroups: [""], kinds: [Pod]}]
    namespaceSelector: {matchLabels: {env: prod}}
  parameters: {repos: ["registry.example.com/"]}`,
		objects: []string{nsProd, nsDev,
			pod("good", "prod", "spec: {containers: [{name: app, image: registry.example.com/app:1}]}"),
			pod("bad", "prod", "spec: {initContainers: [{name: init, image: busybox}], containers: [{name: app, image: docker.io/app}]}"),
			pod("ignored", "dev", "spec: {containers: [{name: app, image: docker.io/app}]}")},
		state:   policyv1.NonCompliant,
		message: `K8sAllowedRepos/prod-repos: 2 violations in 2 matching objects: [Pod prod/bad] container app uses image docker.io/app, not from an allowed repository ["registry.example.com/"]; [Pod prod/bad] container init uses image busybox, not from an allowed repository ["registry.example.com/"]`,
	}, {
		name: "container limits, warn only",
		constraint: `apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sContainerLimits
metadata: {name: limits}
spec:
  enforcementAction: warn
  match: {kinds: [{apiGroups: [""], kinds: [Pod]}], namespaces: [prod]}
  parameters: {memory: 1Gi}`,
		objects: []string{nsProd,
			pod("a", "prod", "spec: {containers: [{name: c1, image: x, resources: {limits: {memory: 2Gi}}}, {name: c2, image: x}]}"),
			pod("b", "prod", "spec: {containers: [{name: c, image: x, resources: {limits: {memory: 512Mi}}}]}"),
			pod("c", "dev", "spec: {containers: [{name: c, image: x}]}")},
		state:   policyv1.Compliant,
		message: `K8sContainerLimits/limits (enforcementAction warn): 2 warnings in 2 matching objects: [Pod prod/a] container c1 memory limit 2Gi is above 1Gi; [Pod prod/a] container c2 has no memory limit`,
	}, {
		name: "host namespaces, dryrun",
		constraint: `apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sPSPHostNamespace
metadata: {name: no-host-ns}
spec:
  enforcementAction: dryrun
  match: {kinds: [{apiGroups: [""], kinds: [Pod]}]}`,
		objects: []string{pod("h", "dev", "spec: {hostPID: true, hostNetwork: true, containers: [{name: c, image: x}]}"), pod("ok", "dev", "spec: {containers: [{name: c, image: x}]}")},
		state:   policyv1.Compliant,
		message: `K8sPSPHostNamespace/no-host-ns (enforcementAction dryrun): 1 warning in 2 matching objects: [Pod dev/h] pod h shares host namespaces: ["hostPID", "hostNetwork"]`,
	}, {
		name: "privileged containers, deployments and pods by wildcard group, exempt image",
		constraint: `apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sPSPPrivilegedContainer
metadata: {name: no-privileged}
spec:
  match: {kinds: [{apiGroups: ["*"], kinds: [Pod]}], scope: Namespaced}
  parameters: {exemptImages: [registry.example.com/csi-driver]}`,
		objects: []string{
			pod("priv", "dev", "spec: {containers: [{name: c, image: x, securityContext: {privileged: true}}]}"),
			pod("csi", "dev", "spec: {containers: [{name: c, image: registry.example.com/csi-driver, securityContext: {privileged: true}}]}"),
			pod("unpriv", "dev", "spec: {containers: [{name: c, image: x, securityContext: {privileged: false}}]}")},
		state:   policyv1.NonCompliant,
		message: `K8sPSPPrivilegedContainer/no-privileged: 1 violation in 3 matching objects: [Pod dev/priv] privileged container c in Pod priv`,
	}, {
		name: "unique ingress host reads the inventory",
		constraint: `apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sUniqueIngressHost
metadata: {name: unique-hosts}
spec:
  match: {kinds: [{apiGroups: [networking.k8s.io], kinds: [Ingress]}]}`,
		objects: []string{
			"apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: a, namespace: dev}\nspec: {rules: [{host: shop.example.com}]}",
			"apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: b, namespace: prod}\nspec: {rules: [{host: shop.example.com}]}",
			"apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: c, namespace: prod}\nspec: {rules: [{host: blog.example.com}]}"},
		state:   policyv1.NonCompliant,
		message: `K8sUniqueIngressHost/unique-hosts: 2 violations in 3 matching objects: [Ingress dev/a] ingress host shop.example.com conflicts with ingress prod/b; [Ingress prod/b] ingress host shop.example.com conflicts with ingress dev/a`,
	}, {
		name: "a constraint without a template",
		constraint: `apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sNoSuchThing
metadata: {name: x}
spec: {}`,
		state:   policyv1.NonCompliant,
		message: `no ConstraintTemplate defines the constraint kind K8sNoSuchThing`,
	}}
	e := engine(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var objs []*unstructured.Unstructured
			for _, o := range tc.objects {
				objs = append(objs, obj(t, o))
			}
			require.NoError(t, e.Inventory().Replace(t.Context(), objs))
			snap, err := Snapshot(objs)
			require.NoError(t, err)
			c, err := ParseConstraint(obj(t, tc.constraint))
			require.NoError(t, err)
			res := e.Audit(t.Context(), []*Constraint{c}, snap)
			require.Len(t, res, 1)
			state, msg := res[0].Compliance()
			require.Equal(t, tc.message, msg)
			require.Equal(t, tc.state, state)
		})
	}
}

func TestInput(t *testing.T) {
	// The input a rule sees is Gatekeeper's audit review.
	e := NewEngine()
	_, err := e.AddTemplate(t.Context(), obj(t, `apiVersion: templates.gatekeeper.sh/v1
kind: ConstraintTemplate
metadata: {name: k8sechoinput}
spec:
  crd: {spec: {names: {kind: K8sEchoInput}}}
  targets:
  - target: admission.k8s.gatekeeper.sh
    rego: |
      package k8sechoinput
      violation[{"msg": msg}] {
        r := input.review
        msg := sprintf("%v %v %v %v %v %v %v", [r.kind.group, r.kind.version, r.kind.kind, r.namespace, r.name, r.operation, input.parameters.p])
      }
      violation[{"msg": "object"}] { input.review.object.metadata.name == input.review.name }
`))
	require.NoError(t, err)
	c, err := ParseConstraint(obj(t, "apiVersion: constraints.gatekeeper.sh/v1beta1\nkind: K8sEchoInput\nmetadata: {name: e}\nspec: {parameters: {p: 42}}"))
	require.NoError(t, err)
	snap, err := Snapshot([]*unstructured.Unstructured{obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ns}")})
	require.NoError(t, err)
	res := e.Audit(t.Context(), []*Constraint{c}, snap)
	_, msg := res[0].Compliance()
	require.Equal(t, `K8sEchoInput/e: 2 violations in 1 matching objects: [Deployment ns/d] apps v1 Deployment ns d UPDATE 42; [Deployment ns/d] object`, msg)
}

func TestMessageListsAtMost20(t *testing.T) {
	r := Result{Constraint: "K/c", Action: ActionDeny, Audited: 25}
	for i := range 25 {
		r.Violations = append(r.Violations, ObjectViolation{Object: ObjectRef{Kind: "Pod", Namespace: "n", Name: string(rune('a' + i))}, Message: "m"})
	}
	state, msg := r.Compliance()
	require.Equal(t, policyv1.NonCompliant, state)
	require.True(t, strings.HasSuffix(msg, "[Pod n/t] m; +5 more"), msg)
	require.Equal(t, 20, strings.Count(msg, "] m"))
}
