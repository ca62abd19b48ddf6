package apply

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestCovers: the check of ServerSideApply (and of Update when the apiserver
// refuses a dry run); extra live fields are others', by design.
func TestCovers(t *testing.T) {
	cases := []struct {
		name          string
		desired, live string
		want          bool
	}{
		{"identical configmap",
			"kind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}",
			"kind: ConfigMap\nmetadata: {name: a, resourceVersion: '7'}\ndata: {k: v}", true},
		{"edited value is drift",
			"kind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}",
			"kind: ConfigMap\nmetadata: {name: a}\ndata: {k: changed}", false},
		{"removed key is drift",
			"kind: ConfigMap\nmetadata: {name: a}\ndata: {k: v, j: w}",
			"kind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}", false},
		{"extra live key is not drift",
			"kind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}",
			"kind: ConfigMap\nmetadata: {name: a}\ndata: {k: v, extra: x}", true},
		{"defaults added by the apiserver are not drift",
			"kind: Deployment\nspec: {replicas: 1, template: {spec: {containers: [{name: c, image: i}]}}}",
			"kind: Deployment\nspec: {replicas: 1, progressDeadlineSeconds: 600, template: {spec: {restartPolicy: Always, containers: [{name: c, image: i, imagePullPolicy: IfNotPresent}]}}}", true},
		{"list length change is drift",
			"kind: Deployment\nspec: {template: {spec: {containers: [{name: c}]}}}",
			"kind: Deployment\nspec: {template: {spec: {containers: [{name: c}, {name: d}]}}}", false},
		{"replica count change is drift",
			"kind: Deployment\nspec: {replicas: 2}",
			"kind: Deployment\nspec: {replicas: 1}", false},
		{"quantities compare by value",
			"kind: Pod\nspec: {containers: [{resources: {limits: {cpu: 1000m, memory: 1Gi}}}]}",
			"kind: Pod\nspec: {containers: [{resources: {limits: {cpu: '1', memory: 1024Mi}}}]}", true},
		{"number quantity equals string",
			"kind: Pod\nspec: {containers: [{resources: {limits: {cpu: 2}}}]}",
			"kind: Pod\nspec: {containers: [{resources: {limits: {cpu: '2'}}}]}", true},
		{"missing label is drift",
			"kind: ConfigMap\nmetadata: {name: a, labels: {app: x}}",
			"kind: ConfigMap\nmetadata: {name: a, labels: {other: z}}", false},
		{"extra live label is fine",
			"kind: ConfigMap\nmetadata: {name: a, labels: {app: x}}",
			"kind: ConfigMap\nmetadata: {name: a, labels: {app: x, other: z}}", true},
		{"status is ignored",
			"kind: Deployment\nstatus: {replicas: 3}",
			"kind: Deployment\nstatus: {replicas: 0}", true},
		{"secret stringData matches data",
			"kind: Secret\nstringData: {password: hunter2}",
			"kind: Secret\ndata: {password: aHVudGVyMg==}", true},
		{"secret stringData changed",
			"kind: Secret\nstringData: {password: hunter3}",
			"kind: Secret\ndata: {password: aHVudGVyMg==}", false},
		{"null in desired matches anything",
			"kind: ConfigMap\ndata: {k: null}",
			"kind: ConfigMap\ndata: {}", true},
		{"empty map in desired matches absence",
			"kind: Deployment\nspec: {selector: {matchLabels: {}}}",
			"kind: Deployment\nspec: {selector: {}}", true},
		{"bool change is drift",
			"kind: X\nspec: {paused: true}",
			"kind: X\nspec: {paused: false}", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Covers(obj(t, tc.desired), obj(t, tc.live)))
		})
	}
}
