package object

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(y), &u.Object))
	return u
}

func TestSanitizeKeepsNoSecretData(t *testing.T) {
	u := Sanitize(obj(t, `
apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: app
  uid: u1
  managedFields: [{manager: kubectl}]
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{"data":{"password":"c2VjcmV0"}}'
    team: payments
type: Opaque
data: {password: c2VjcmV0}
stringData: {token: plain}
`))
	raw, err := u.MarshalJSON()
	require.NoError(t, err)
	for _, leak := range []string{"c2VjcmV0", "plain", "managedFields", "last-applied"} {
		assert.NotContains(t, string(raw), leak)
	}
	assert.Equal(t, map[string]string{"team": "payments"}, u.GetAnnotations())
	assert.Equal(t, "Opaque", u.Object["type"])
}

func TestSanitizeKeepsOtherKinds(t *testing.T) {
	u := Sanitize(obj(t, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  uid: u1
  managedFields: [{manager: kubectl}]
  annotations: {kubectl.kubernetes.io/last-applied-configuration: '{}'}
data: {k: v}
`))
	assert.Equal(t, map[string]any{"k": "v"}, u.Object["data"])
	assert.Contains(t, u.GetAnnotations(), lastApplied)
	_, has, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "managedFields")
	assert.False(t, has)
}

func TestFit(t *testing.T) {
	big := strings.Repeat("x", MaxBytes)
	u := obj(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: c, uid: u1, labels: {a: b}}
status: {phase: Active}
`)
	u.Object["data"] = map[string]any{"k": big}
	raw, err := Fit(u)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(raw), MaxBytes)
	assert.Contains(t, u.GetAnnotations(), Truncated)
	assert.Equal(t, map[string]string{"a": "b"}, u.GetLabels())
	assert.Nil(t, u.Object["data"])
	assert.Equal(t, map[string]any{"phase": "Active"}, u.Object["status"])

	small := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, uid: u1}, data: {k: v}}`)
	raw, err = Fit(small)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"k":"v"`)
}

func TestExtract(t *testing.T) {
	for _, tc := range []struct {
		name string
		y    string
		want Columns
	}{{
		name: "a crash-looping pod",
		y: `
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: shop
  uid: p1
  resourceVersion: "7"
  labels: {app: web}
  ownerReferences: [{kind: ReplicaSet, name: web-abc, controller: true}, {kind: Other, name: x}]
spec:
  initContainers: [{name: init, image: busybox:1.36}]
  containers: [{name: web, image: nginx:1.25}, {name: side, image: envoy:1.30}, {name: again, image: nginx:1.25}]
status:
  phase: Running
  conditions: [{type: Ready, status: "False"}]
  containerStatuses:
  - {name: web, state: {waiting: {reason: CrashLoopBackOff}}}
  - {name: side, state: {terminated: {reason: OOMKilled}}}
  - {name: again, state: {running: {}}}
`,
		want: Columns{Namespace: "shop", Name: "web-1", UID: "p1", ResourceVersion: "7", Labels: map[string]string{"app": "web"},
			Owner: "ReplicaSet/web-abc", Images: []string{"busybox:1.36", "envoy:1.30", "nginx:1.25"}, Phase: "Running",
			Reasons: []string{"CrashLoopBackOff", "OOMKilled"}, Ready: "false", ReadyReplicas: -1, Replicas: -1},
	}, {
		name: "a deployment short of replicas",
		y: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: pay, namespace: shop, uid: d1}
spec: {replicas: 3, template: {spec: {containers: [{name: c, image: pay:2}]}}}
status: {readyReplicas: 2}
`,
		want: Columns{Namespace: "shop", Name: "pay", UID: "d1", Images: []string{"pay:2"}, Ready: "false", ReadyReplicas: 2, Replicas: 3},
	}, {
		name: "a deployment without spec.replicas has one",
		y: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: pay, uid: d1}
spec: {template: {spec: {containers: [{name: c, image: pay:2}]}}}
status: {readyReplicas: 1}
`,
		want: Columns{Name: "pay", UID: "d1", Images: []string{"pay:2"}, Ready: "true", ReadyReplicas: 1, Replicas: 1},
	}, {
		name: "a daemonset",
		y: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, uid: ds1}
spec: {template: {spec: {containers: [{name: c, image: agent:1}]}}}
status: {desiredNumberScheduled: 4, numberReady: 4}
`,
		want: Columns{Name: "agent", UID: "ds1", Images: []string{"agent:1"}, Ready: "true", ReadyReplicas: 4, Replicas: 4},
	}, {
		name: "a ready node",
		y: `
apiVersion: v1
kind: Node
metadata: {name: n1, uid: n1}
status: {conditions: [{type: MemoryPressure, status: "False"}, {type: Ready, status: "True"}]}
`,
		want: Columns{Name: "n1", UID: "n1", Ready: "true", ReadyReplicas: -1, Replicas: -1},
	}, {
		name: "a cronjob's images",
		y: `
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, uid: c1}
spec: {jobTemplate: {spec: {template: {spec: {containers: [{name: c, image: backup:3}]}}}}}
`,
		want: Columns{Name: "nightly", UID: "c1", Images: []string{"backup:3"}, ReadyReplicas: -1, Replicas: -1},
	}, {
		name: "a namespace's phase",
		y:    `{apiVersion: v1, kind: Namespace, metadata: {name: shop, uid: ns1}, status: {phase: Terminating}}`,
		want: Columns{Name: "shop", UID: "ns1", Phase: "Terminating", ReadyReplicas: -1, Replicas: -1},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Extract(obj(t, tc.y))
			require.NoError(t, err)
			got.Created = tc.want.Created
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestExtractRefusesAnObjectWithoutIdentity(t *testing.T) {
	_, err := Extract(obj(t, `{apiVersion: v1, kind: Pod, metadata: {name: p}}`))
	assert.ErrorContains(t, err, "metadata.uid")
	_, err = Extract(obj(t, `{apiVersion: v1, kind: Pod, metadata: {uid: u}}`))
	assert.ErrorContains(t, err, "metadata.name")
}

func TestDigest(t *testing.T) {
	a := Digest(map[string]string{"u1": "1", "u2": "5"})
	assert.Equal(t, a, Digest(map[string]string{"u2": "5", "u1": "1"}), "order does not matter")
	assert.NotEqual(t, a, Digest(map[string]string{"u1": "1", "u2": "6"}), "a new version changes it")
	assert.NotEqual(t, a, Digest(map[string]string{"u1": "1"}), "a missing object changes it")
	assert.NotEqual(t, Digest(map[string]string{"u1 2": ""}), Digest(map[string]string{"u1": "2"}), "fields do not run together")
	assert.Len(t, Digest(nil), 64)
}

// An object whose metadata alone passes MaxBytes (annotations the
// apiserver would refuse, from a forged agent) is cut further: it keeps
// no annotation but Truncated, and one that still does not fit is refused.
func TestFitBoundsMetadataToo(t *testing.T) {
	big := strings.Repeat("x", 4*MaxBytes)
	u := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, uid: u1, labels: {a: b}}}`)
	u.SetAnnotations(map[string]string{"huge": big})
	raw, err := Fit(u)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(raw), MaxBytes)
	assert.Equal(t, []string{Truncated}, slices.Collect(maps.Keys(u.GetAnnotations())))
	assert.Equal(t, map[string]string{"a": "b"}, u.GetLabels())

	u = obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, uid: u1}}`)
	u.SetFinalizers([]string{big})
	_, err = Fit(u)
	assert.ErrorContains(t, err, "metadata")
}
