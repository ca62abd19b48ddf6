package propagator_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/propagator"
)

func TestIsWellFormedReplica(t *testing.T) {
	root := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "policy.with.dots"}}
	real := propagator.Replica(root, "east", "")
	with := func(ns, name string, labels map[string]string) *policyv1.Policy {
		return &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
	}
	for _, tc := range []struct {
		name string
		p    *policyv1.Policy
		want bool
	}{
		{"what the propagator writes", real, true},
		{"only the root label", with("east", "team-b.p", map[string]string{policyv1.RootPolicyLabel: "team-b.p"}), true},
		{"no root label", with("east", "team-b.p", nil), false},
		{"named otherwise than its root", with("east", "decoy", map[string]string{policyv1.RootPolicyLabel: "team-b.p"}), false},
		{"a root without namespace", with("east", "p", map[string]string{policyv1.RootPolicyLabel: "p"}), false},
		{"a root with an empty name", with("east", "team-b.", map[string]string{policyv1.RootPolicyLabel: "team-b."}), false},
		{"labelled for another cluster", with("east", "team-b.p", map[string]string{policyv1.RootPolicyLabel: "team-b.p", policyv1.ClusterNameLabel: "west"}), false},
		{"another cluster namespace", with("east", "team-b.p", map[string]string{policyv1.RootPolicyLabel: "team-b.p", policyv1.ClusterNamespaceLabel: "west"}), false},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, propagator.IsWellFormedReplica(tc.p)) })
	}
}
