package framework

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

func cpu(q string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}}
}

func TestResourcesFor(t *testing.T) {
	reqs := []addonv1alpha1.ContainerResourceRequirements{
		{ContainerID: "*:*:*", Resources: cpu("10m")},
		{ContainerID: "deployments:*:*", Resources: cpu("20m")},
		{ContainerID: "deployments:example-agent:agent", Resources: cpu("30m")},
		{ContainerID: "daemonsets:log-*:*", Resources: cpu("40m")},
		{ContainerID: "broken", Resources: cpu("99")},
	}
	for _, tc := range []struct {
		kind, name, container string
		want                  string // "" none
	}{
		{"Deployment", "example-agent", "agent", "30m"}, // the last match wins
		{"Deployment", "other", "agent", "20m"},         // deployments:*:*
		{"DaemonSet", "log-shipper", "main", "40m"},     // pattern in the name
		{"DaemonSet", "metrics", "main", "10m"},         // only *:*:*
		{"StatefulSet", "db", "main", "10m"},            //
		{"Service", "example-agent", "agent", ""},       // not a workload kind
	} {
		got, ok := ResourcesFor(tc.kind, tc.name, tc.container, reqs)
		if tc.want == "" {
			assert.False(t, ok, "%s %s", tc.kind, tc.name)
			continue
		}
		if assert.True(t, ok, "%s %s %s", tc.kind, tc.name, tc.container) {
			q := got.Requests[corev1.ResourceCPU]
			assert.Equal(t, tc.want, q.String(), "%s %s %s", tc.kind, tc.name, tc.container)
		}
	}
	_, ok := ResourcesFor("Deployment", "x", "y", nil)
	assert.False(t, ok, "no requirements, nothing set")
}
