package gatekeeper

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMatch(t *testing.T) {
	podIn := func(ns string, l map[string]string, nsl map[string]string) Target {
		return Target{Kind: "Pod", Name: "p", Namespace: ns, Labels: l, NamespaceLabels: nsl}
	}
	nsObj := Target{Kind: "Namespace", Name: "kube-system", NamespaceLabels: map[string]string{"tier": "system"}}
	crb := Target{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding", Name: "admin"}
	cases := []struct {
		name   string
		match  string
		target Target
		want   bool
	}{
		{"no match: everything", "{}", podIn("a", nil, nil), true},
		{"kind listed", "{kinds: [{apiGroups: [''], kinds: [Pod]}]}", podIn("a", nil, nil), true},
		{"other kind", "{kinds: [{apiGroups: [''], kinds: [Service]}]}", podIn("a", nil, nil), false},
		{"other group", "{kinds: [{apiGroups: [apps], kinds: [Pod]}]}", podIn("a", nil, nil), false},
		{"wildcard group and kind", "{kinds: [{apiGroups: ['*'], kinds: ['*']}]}", crb, true},
		{"second kinds entry", "{kinds: [{apiGroups: [apps], kinds: [Deployment]}, {apiGroups: [''], kinds: [Pod]}]}", podIn("a", nil, nil), true},
		{"namespaces listed", "{namespaces: [a]}", podIn("a", nil, nil), true},
		{"namespaces not listed", "{namespaces: [b]}", podIn("a", nil, nil), false},
		{"namespaces prefix glob", "{namespaces: ['team-*']}", podIn("team-x", nil, nil), true},
		{"excluded suffix glob", "{excludedNamespaces: ['*-system']}", podIn("kube-system", nil, nil), false},
		{"excluded wins over namespaces", "{namespaces: [a], excludedNamespaces: [a]}", podIn("a", nil, nil), false},
		{"a Namespace by its own name", "{excludedNamespaces: ['kube-*']}", nsObj, false},
		{"a Namespace by its own labels", "{namespaceSelector: {matchLabels: {tier: system}}}", nsObj, true},
		{"cluster-scoped objects pass namespaces", "{namespaces: [a]}", crb, true},
		{"cluster-scoped objects pass namespaceSelector", "{namespaceSelector: {matchLabels: {x: z}}}", crb, true},
		{"scope Cluster", "{scope: Cluster}", podIn("a", nil, nil), false},
		{"scope Cluster, cluster object", "{scope: Cluster}", crb, true},
		{"scope Namespaced", "{scope: Namespaced}", crb, false},
		{"labelSelector", "{labelSelector: {matchLabels: {app: web}}}", podIn("a", map[string]string{"app": "web"}, nil), true},
		{"labelSelector NotIn", "{labelSelector: {matchExpressions: [{key: app, operator: NotIn, values: [web]}]}}", podIn("a", map[string]string{"app": "web"}, nil), false},
		{"namespaceSelector", "{namespaceSelector: {matchLabels: {env: prod}}}", podIn("a", nil, map[string]string{"env": "prod"}), true},
		{"namespaceSelector, unknown namespace", "{namespaceSelector: {matchExpressions: [{key: env, operator: DoesNotExist}]}}", podIn("a", nil, nil), false},
		{"name", "{name: 'p*'}", podIn("a", nil, nil), true},
		{"other name", "{name: q}", podIn("a", nil, nil), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConstraint(obj(t, "apiVersion: constraints.gatekeeper.sh/v1beta1\nkind: K\nmetadata: {name: c}\nspec:\n  match: "+tc.match))
			require.NoError(t, err)
			require.Equal(t, tc.want, c.Match.Matches(tc.target))
		})
	}
}

func TestParseConstraintRefuses(t *testing.T) {
	cases := []struct{ spec, err string }{
		{"{enforcementAction: block}", "constraint K/c: spec.enforcementAction block is not deny, warn or dryrun"},
		{"{enforcementAction: scoped}", "constraint K/c: enforcementAction scoped (per enforcement point) is not supported; use deny, warn or dryrun"},
		{"{parameters: [1]}", "constraint K/c: spec.parameters is not an object"},
		{"{match: [1]}", "constraint K/c: spec.match is not an object"},
		{"{match: {kinds: [x]}}", "constraint K/c: spec.match.kinds[0] is not an object"},
		{"{match: {namespaces: ['a*b']}}", `constraint K/c: spec.match.namespaces[0] "a*b": a glob may have "*" only at its front or end`},
		{"{match: {scope: Everywhere}}", `constraint K/c: spec.match.scope "Everywhere" is not *, Cluster or Namespaced`},
		{"{match: {labelSelector: {matchExpressions: [{key: a, operator: Bogus}]}}}", `constraint K/c: spec.match.labelSelector: "Bogus" is not a valid label selector operator`},
	}
	for _, tc := range cases {
		t.Run(tc.spec, func(t *testing.T) {
			_, err := ParseConstraint(obj(t, "apiVersion: constraints.gatekeeper.sh/v1beta1\nkind: K\nmetadata: {name: c}\nspec: "+tc.spec))
			require.EqualError(t, err, tc.err)
		})
	}
	c, err := ParseConstraint(obj(t, "apiVersion: constraints.gatekeeper.sh/v1beta1\nkind: K\nmetadata: {name: c}\nspec: {enforcementAction: Warn}"))
	require.NoError(t, err)
	require.Equal(t, ActionWarn, c.Action)
}
