package apply

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func gk(group, kind string) schema.GroupKind { return schema.GroupKind{Group: group, Kind: kind} }

func TestOrder(t *testing.T) {
	crd := gk("apiextensions.k8s.io", "CustomResourceDefinition")
	ns := gk("", "Namespace")
	cm := gk("", "ConfigMap")
	deploy := gk("apps", "Deployment")
	role := gk("rbac.authorization.k8s.io", "Role")
	sa := gk("", "ServiceAccount")
	vwh := gk("admissionregistration.k8s.io", "ValidatingWebhookConfiguration")
	apisvc := gk("apiregistration.k8s.io", "APIService")
	custom := gk("example.com", "Widget")
	fakeDeploy := gk("example.com", "Deployment") // same kind, other group: unknown

	cases := []struct {
		name  string
		kinds []schema.GroupKind
		want  []int
	}{
		{"empty", nil, []int{}},
		{"already ordered", []schema.GroupKind{ns, cm, deploy}, []int{0, 1, 2}},
		{"custom resource before its CRD", []schema.GroupKind{custom, crd}, []int{1, 0}},
		{"namespace last in the work goes first", []schema.GroupKind{deploy, cm, ns}, []int{2, 1, 0}},
		{"crd before namespace", []schema.GroupKind{ns, crd}, []int{1, 0}},
		{"rbac before service account before workloads", []schema.GroupKind{deploy, sa, role}, []int{2, 1, 0}},
		{"webhooks and apiservices after workloads", []schema.GroupKind{apisvc, vwh, deploy}, []int{2, 1, 0}},
		{"unknown kinds last, after webhooks", []schema.GroupKind{custom, vwh, cm}, []int{2, 1, 0}},
		{"group matters", []schema.GroupKind{fakeDeploy, deploy}, []int{1, 0}},
		{"stable among equals", []schema.GroupKind{cm, custom, cm, custom, cm}, []int{0, 2, 4, 1, 3}},
		{"undecodable manifest ranks unknown", []schema.GroupKind{{}, ns}, []int{1, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Order(tc.kinds))
		})
	}
}

func TestRankKnownBeforeUnknown(t *testing.T) {
	for _, k := range kindOrder {
		assert.Less(t, Rank(k), Rank(gk("example.com", "Anything")), k.String())
	}
}
