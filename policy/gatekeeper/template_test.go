package gatekeeper

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func templateYAML(name, kind, rego string) string {
	out := "apiVersion: templates.gatekeeper.sh/v1\nkind: ConstraintTemplate\nmetadata: {name: " + name + "}\nspec:\n  crd: {spec: {names: {kind: " + kind + "}}}\n"
	if rego != "" {
		out += "  targets:\n  - target: admission.k8s.gatekeeper.sh\n    rego: |\n"
		for _, l := range splitLines(rego) {
			out += "      " + l + "\n"
		}
	}
	return out
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i, c := range s {
		if c == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func TestCompileRefuses(t *testing.T) {
	cases := []struct {
		name, template, err string
	}{{
		name:     "rego that does not parse",
		template: templateYAML("k8sbroken", "K8sBroken", "package k8sbroken\nviolation[{\"msg\": msg}] {\n  msg := \n}"),
		err:      "ConstraintTemplate k8sbroken: rego does not parse: rego:4: rego_parse_error: unexpected } token",
	}, {
		name:     "rego that does not compile",
		template: templateYAML("k8sundefined", "K8sUndefined", "package k8sundefined\nviolation[{\"msg\": msg}] {\n  msg := no_such_function(1)\n}"),
		err:      "ConstraintTemplate k8sundefined: rego does not compile: rego:3: rego_type_error: undefined function no_such_function",
	}, {
		name:     "external_data",
		template: templateYAML("k8sexternal", "K8sExternal", "package k8sexternal\nviolation[{\"msg\": msg}] {\n  r := external_data({\"provider\": \"p\", \"keys\": [\"k\"]})\n  msg := sprintf(\"%v\", [r])\n}"),
		err:      `ConstraintTemplate k8sexternal: rego calls external_data (external_data({"keys": ["k"], "provider": "p"})): external data providers need Gatekeeper and are not supported by Flotilla's engine`,
	}, {
		name:     "no kind",
		template: "apiVersion: templates.gatekeeper.sh/v1\nkind: ConstraintTemplate\nmetadata: {name: x}\nspec: {}",
		err:      "ConstraintTemplate x: spec.crd.spec.names.kind is missing: it names the constraint kind",
	}, {
		name:     "name not the lowercase kind",
		template: templateYAML("labels", "K8sLabels", "package x\nviolation[{\"msg\": \"m\"}] { true }"),
		err:      `ConstraintTemplate labels: metadata.name must be "k8slabels", the lowercase of the constraint kind K8sLabels (as Gatekeeper requires)`,
	}, {
		name:     "no targets",
		template: templateYAML("k8snotargets", "K8sNoTargets", ""),
		err:      "ConstraintTemplate k8snotargets: spec.targets must hold exactly one target (admission.k8s.gatekeeper.sh)",
	}, {
		name: "CEL only",
		template: "apiVersion: templates.gatekeeper.sh/v1\nkind: ConstraintTemplate\nmetadata: {name: k8scel}\nspec:\n  crd: {spec: {names: {kind: K8sCEL}}}\n" +
			"  targets:\n  - target: admission.k8s.gatekeeper.sh\n    code: [{engine: K8sNativeValidation, source: {validations: []}}]\n",
		err: "ConstraintTemplate k8scel: spec.targets[0] has no rego; code engines other than Rego (CEL: K8sNativeValidation) are not supported",
	}, {
		name: "lib outside lib.",
		template: "apiVersion: templates.gatekeeper.sh/v1\nkind: ConstraintTemplate\nmetadata: {name: k8slib}\nspec:\n  crd: {spec: {names: {kind: K8sLib}}}\n" +
			"  targets:\n  - target: admission.k8s.gatekeeper.sh\n    libs: [\"package helpers\\nx := 1\"]\n    rego: \"package k8slib\\nviolation[{\\\"msg\\\": \\\"m\\\"}] { false }\"\n",
		err: "ConstraintTemplate k8slib: libs[0]: package helpers must be under lib (package lib.NAME), as Gatekeeper requires",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEngine()
			tmpl, err := e.AddTemplate(t.Context(), obj(t, tc.template))
			require.Nil(t, tmpl)
			require.EqualError(t, err, tc.err)
			// A constraint of a broken template reports the template's error.
			kind := obj(t, tc.template).Object["spec"].(map[string]any)["crd"]
			if kind != nil {
				c := &Constraint{Kind: kindOf(t, tc.template), Name: "c", Action: ActionDeny}
				res := e.Audit(t.Context(), []*Constraint{c}, nil)
				state, msg := res[0].Compliance()
				require.Equal(t, "NonCompliant", string(state))
				require.Equal(t, tc.err, msg)
			}
		})
	}
}

func kindOf(t *testing.T, doc string) string {
	o := obj(t, doc)
	k, _, _ := unstructuredString(o.Object, "spec", "crd", "spec", "names", "kind")
	return k
}

func TestCompileReferentialAndSyncData(t *testing.T) {
	e := engine(t)
	tm := e.Templates()
	require.True(t, tm["K8sUniqueIngressHost"].Referential)
	require.Equal(t, []string{"networking.k8s.io/v1/Ingress"}, tm["K8sUniqueIngressHost"].SyncKinds)
	require.False(t, tm["K8sRequiredLabels"].Referential)
}

func TestReviewNeverPanicsOnOddResults(t *testing.T) {
	// A violation without msg, and one that is not an object, still count.
	e := NewEngine()
	_, err := e.AddTemplate(t.Context(), obj(t, templateYAML("k8sodd", "K8sOdd", "package k8sodd\nviolation[{\"details\": 1}] { true }\nviolation[\"text\"] { true }")))
	require.NoError(t, err)
	snap, err := Snapshot(nil)
	require.NoError(t, err)
	o, err := NewObject(obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns1}"), nil)
	require.NoError(t, err)
	snap = append(snap, o)
	res := e.Audit(t.Context(), []*Constraint{{Kind: "K8sOdd", Name: "c", Action: ActionDeny}}, snap)
	_, msg := res[0].Compliance()
	require.Equal(t, `K8sOdd/c: 2 violations in 1 matching objects: [ConfigMap ns1/c] violation without a msg: map[details:1]; [ConfigMap ns1/c] violation without a msg: text`, msg)
}

var unstructuredString = unstructured.NestedString
