package index

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestOverLimit(t *testing.T) {
	for _, tc := range []struct {
		name          string
		l             Limits
		before, after Usage
		refused       string
	}{
		{"no limits", Limits{}, Usage{}, Usage{Objects: 1e9, Bytes: 1e12}, ""},
		{"within", Limits{Objects: 10, Bytes: 100}, Usage{1, 10}, Usage{10, 100}, ""},
		{"objects past", Limits{Objects: 10}, Usage{10, 0}, Usage{11, 0}, "it would keep 11 objects, the hub allows 10"},
		{"bytes past", Limits{Bytes: 100}, Usage{1, 90}, Usage{1, 101}, "would take 101 bytes, the hub allows 100"},
		{"above a lowered limit, shrinking", Limits{Objects: 5, Bytes: 50}, Usage{9, 90}, Usage{8, 80}, ""},
		{"above a lowered limit, same count, bigger", Limits{Objects: 5, Bytes: 50}, Usage{9, 90}, Usage{9, 91}, "would take 91 bytes"},
		{"above a lowered limit, growing", Limits{Objects: 5}, Usage{9, 0}, Usage{10, 0}, "would keep 10 objects"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := overLimit(tc.l, tc.before, tc.after)
			if tc.refused == "" {
				assert.Empty(t, got)
			} else {
				assert.Contains(t, got, tc.refused)
			}
		})
	}
}

func TestChoose(t *testing.T) {
	def := func(group, version, resource, kind string, namespaced bool, clusters int) Definition {
		return Definition{Resource: Resource{GroupVersionResource: schema.GroupVersionResource{Group: group, Version: version, Resource: resource},
			Kind: kind, Namespaced: namespaced}, Clusters: clusters}
	}
	pods := def("", "v1", "pods", "Pod", true, 2)
	for _, tc := range []struct {
		name string
		defs []Definition
		want []Resource
	}{
		{"one each, sorted by group and resource", []Definition{def("apps", "v1", "deployments", "Deployment", true, 1), pods},
			[]Resource{pods.Resource, def("apps", "v1", "deployments", "Deployment", true, 1).Resource}},
		{"the most clusters win", []Definition{def("", "a1", "pods", "Pod", false, 1), pods, def("", "v2", "pods", "Pod", true, 1)},
			[]Resource{pods.Resource}},
		{"a tie: a Kubernetes version first", []Definition{def("", "a1", "pods", "Pod", false, 2), pods}, []Resource{pods.Resource}},
		{"a tie of Kubernetes versions: the first in order", []Definition{def("", "v2", "pods", "Pod", true, 2), pods}, []Resource{pods.Resource}},
		{"a tie on version: the kind first in order, then namespaced", []Definition{def("", "v1", "pods", "Pod", false, 2), pods}, []Resource{pods.Resource}},
		{"none", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, choose(tc.defs))
		})
	}
}
