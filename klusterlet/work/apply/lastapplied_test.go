package apply

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestManifestHash(t *testing.T) {
	base := ManifestHash(obj(t, "kind: ConfigMap\nmetadata: {name: a}\ndata: {a: '1', b: '2'}"))
	cases := []struct {
		name     string
		manifest string
		same     bool
	}{
		{"key order does not matter", "data: {b: '2', a: '1'}\nmetadata: {name: a}\nkind: ConfigMap", true},
		{"status does not count", "kind: ConfigMap\nmetadata: {name: a}\ndata: {a: '1', b: '2'}\nstatus: {x: y}", true},
		{"the agent's own annotations do not count",
			"kind: ConfigMap\nmetadata: {name: a, annotations: {work.flotilla.dev/manifest-hash: x}}\ndata: {a: '1', b: '2'}", true},
		{"a removed key changes it", "kind: ConfigMap\nmetadata: {name: a}\ndata: {a: '1'}", false},
		{"a changed value changes it", "kind: ConfigMap\nmetadata: {name: a}\ndata: {a: '1', b: '3'}", false},
		{"a label changes it", "kind: ConfigMap\nmetadata: {name: a, labels: {x: y}}\ndata: {a: '1', b: '2'}", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.same, ManifestHash(obj(t, tc.manifest)) == base)
		})
	}
}

// stampedObj is y with HashAnnotation (and KeysAnnotation) set as if the
// manifest m had been applied.
func stampedObj(t *testing.T, y, m string) *unstructured.Unstructured {
	t.Helper()
	o := obj(t, y)
	manifest := obj(t, m)
	o.SetAnnotations(stamped(o.GetAnnotations(), manifest, ManifestHash(manifest)))
	return o
}

func TestUpdateStep(t *testing.T) {
	const ab = "kind: ConfigMap\nmetadata: {name: a}\ndata: {a: '1', b: '2'}"
	const a = "kind: ConfigMap\nmetadata: {name: a}\ndata: {a: '1'}"
	live := func(m string) *unstructured.Unstructured {
		o := stampedObj(t, "kind: ConfigMap\nmetadata: {name: a, resourceVersion: '7'}\ndata: {a: '1', b: '2'}", m)
		return o
	}
	cases := []struct {
		name     string
		manifest string
		live     *unstructured.Unstructured
		owned    bool
		last     Verified
		want     Step
	}{
		{"a field removed from the manifest is written", a, live(ab), true, Verified{"7", ManifestHash(obj(t, ab))}, Write},
		{"unchanged and verified at this version: nothing to do", ab, live(ab), true, Verified{"7", ManifestHash(obj(t, ab))}, Keep},
		{"edited on the spoke since (new resourceVersion): verify", ab, live(ab), true, Verified{"6", ManifestHash(obj(t, ab))}, Verify},
		{"never verified (agent restarted): verify", ab, live(ab), true, Verified{}, Verify},
		{"verified for another manifest: verify", ab, live(ab), true, Verified{"7", "other"}, Verify},
		{"not stamped (applied by an older agent): verify, not a blind write", ab,
			obj(t, "kind: ConfigMap\nmetadata: {name: a, resourceVersion: '7'}\ndata: {a: '1', b: '2'}"), true, Verified{}, Verify},
		{"not owned by this work yet: write", ab, live(ab), false, Verified{"7", ManifestHash(obj(t, ab))}, Write},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := UpdateStep(ManifestHash(obj(t, tc.manifest)), tc.live, tc.owned, tc.last)
			assert.Equal(t, tc.want.String(), got.String())
		})
	}
}

func TestUpdateBody(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "work.open-cluster-management.io/v1", Kind: "AppliedManifestWork", Name: "h-w", UID: "amw-uid"}
	cases := []struct {
		name, manifest, previous, live string
		check                          func(t *testing.T, body *unstructured.Unstructured)
	}{
		{name: "a field removed from the manifest goes",
			manifest: "kind: ConfigMap\nmetadata: {name: a}\ndata: {a: '1'}",
			previous: "kind: ConfigMap\nmetadata: {name: a}\ndata: {a: '1', b: '2'}",
			live:     "kind: ConfigMap\nmetadata: {name: a, resourceVersion: '7', uid: u}\ndata: {a: '1', b: '2'}",
			check: func(t *testing.T, body *unstructured.Unstructured) {
				assert.Equal(t, map[string]interface{}{"a": "1"}, body.Object["data"])
				assert.Equal(t, "7", body.GetResourceVersion())
				assert.EqualValues(t, "u", body.GetUID())
			}},
		{name: "a key added on the spoke inside data goes",
			manifest: "kind: ConfigMap\nmetadata: {name: a}\ndata: {a: '1'}",
			previous: "kind: ConfigMap\nmetadata: {name: a}\ndata: {a: '1'}",
			live:     "kind: ConfigMap\nmetadata: {name: a}\ndata: {a: '1', added: x}",
			check: func(t *testing.T, body *unstructured.Unstructured) {
				assert.Equal(t, map[string]interface{}{"a": "1"}, body.Object["data"])
			}},
		{name: "labels and annotations others added stay; the manifest's win",
			manifest: "kind: ConfigMap\nmetadata: {name: a, labels: {app: web}, annotations: {note: ours}}",
			previous: "kind: ConfigMap\nmetadata: {name: a, labels: {app: web}, annotations: {note: ours}}",
			live:     "kind: ConfigMap\nmetadata: {name: a, labels: {app: changed, team: x}, annotations: {note: ours, kubectl.io/x: kept}}",
			check: func(t *testing.T, body *unstructured.Unstructured) {
				assert.Equal(t, map[string]string{"app": "web", "team": "x"}, body.GetLabels())
				assert.Equal(t, "kept", body.GetAnnotations()["kubectl.io/x"])
				assert.Equal(t, "ours", body.GetAnnotations()["note"])
			}},
		{name: "a label and an annotation that left the manifest go; others' stay",
			manifest: "kind: ConfigMap\nmetadata: {name: a, labels: {app: web}}",
			previous: "kind: ConfigMap\nmetadata: {name: a, labels: {app: web, tier: front}, annotations: {note: ours}}",
			live:     "kind: ConfigMap\nmetadata: {name: a, labels: {app: web, tier: front, team: x}, annotations: {note: ours, theirs: kept}}",
			check: func(t *testing.T, body *unstructured.Unstructured) {
				assert.Equal(t, map[string]string{"app": "web", "team": "x"}, body.GetLabels())
				ann := body.GetAnnotations()
				assert.NotContains(t, ann, "note")
				assert.Equal(t, "kept", ann["theirs"])
				assert.Equal(t, `{"labels":["app"]}`, ann[KeysAnnotation])
			}},
		{name: "finalizers, other owners and status of the live object stay; the work's owner is added",
			manifest: "kind: Deployment\nmetadata: {name: a}\nspec: {replicas: 1}",
			previous: "kind: Deployment\nmetadata: {name: a}\nspec: {replicas: 1}",
			live:     "kind: Deployment\nmetadata: {name: a, finalizers: [f], ownerReferences: [{apiVersion: v1, kind: X, name: x, uid: x-uid}]}\nspec: {replicas: 3}\nstatus: {replicas: 3}",
			check: func(t *testing.T, body *unstructured.Unstructured) {
				assert.Equal(t, []string{"f"}, body.GetFinalizers())
				require.Len(t, body.GetOwnerReferences(), 2)
				assert.EqualValues(t, "amw-uid", body.GetOwnerReferences()[1].UID)
				assert.EqualValues(t, 3, body.Object["status"].(map[string]interface{})["replicas"])
				assert.EqualValues(t, 1, body.Object["spec"].(map[string]interface{})["replicas"])
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			desired := obj(t, tc.manifest)
			hash := ManifestHash(desired)
			body := UpdateBody(desired, stampedObj(t, tc.live, tc.previous), hash, owner)
			assert.Equal(t, hash, body.GetAnnotations()[HashAnnotation], "stamped with the manifest's hash")
			tc.check(t, body)
		})
	}
}

// TestDrifted compares what a dry-run update says the object should be with
// the live object. Both sides are as the apiserver renders them.
func TestDrifted(t *testing.T) {
	const deploy = `kind: Deployment
apiVersion: apps/v1
metadata: {name: web, %s}
spec:
  replicas: 1
  progressDeadlineSeconds: 600
  revisionHistoryLimit: 10
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%%, maxUnavailable: 25%%}}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}, creationTimestamp: null}
    spec:
      restartPolicy: Always
      dnsPolicy: ClusterFirst
      containers: [{name: web, image: pause, imagePullPolicy: IfNotPresent, terminationMessagePath: /dev/termination-log}]
status: {%s}`
	cases := []struct {
		name, expected, live string
		want                 bool
	}{
		{"a key added on the spoke inside data",
			"kind: ConfigMap\nmetadata: {name: a}\ndata: {a: '1'}",
			"kind: ConfigMap\nmetadata: {name: a}\ndata: {a: '1', added: x}", true},
		{"a field removed from the manifest still on the spoke",
			"kind: ConfigMap\nmetadata: {name: a}\ndata: {a: '1'}",
			"kind: ConfigMap\nmetadata: {name: a}\ndata: {a: '1', b: '2'}", true},
		{"a value edited on the spoke",
			"kind: ConfigMap\nmetadata: {name: a}\ndata: {a: '1'}",
			"kind: ConfigMap\nmetadata: {name: a}\ndata: {a: edited}", true},
		{"binaryData added on the spoke",
			"kind: ConfigMap\nmetadata: {name: a}\ndata: {a: '1'}",
			"kind: ConfigMap\nmetadata: {name: a}\ndata: {a: '1'}\nbinaryData: {b: AA==}", true},
		{"an extra label on the spoke is kept by the update, so it is no drift",
			"kind: ConfigMap\nmetadata: {name: a, labels: {app: web, team: x}}\ndata: {a: '1'}",
			"kind: ConfigMap\nmetadata: {name: a, labels: {app: web, team: x}}\ndata: {a: '1'}", false},
		{"a label of the manifest changed on the spoke",
			"kind: ConfigMap\nmetadata: {name: a, labels: {app: web}}",
			"kind: ConfigMap\nmetadata: {name: a, labels: {app: changed}}", true},
		{"an object not yet stamped with the manifest's hash",
			"kind: ConfigMap\nmetadata: {name: a, annotations: {work.flotilla.dev/manifest-hash: h}}",
			"kind: ConfigMap\nmetadata: {name: a}", true},
		{"server defaults, controller annotations, status and bookkeeping are no drift",
			fmt.Sprintf(deploy, "generation: 2, resourceVersion: '8', annotations: {deployment.kubernetes.io/revision: '1'}", "replicas: 1"),
			fmt.Sprintf(deploy, "generation: 1, resourceVersion: '7', annotations: {deployment.kubernetes.io/revision: '1'}, managedFields: [{manager: kcm}]",
				"replicas: 1, observedGeneration: 1, conditions: [{type: Available, status: 'False'}]"), false},
		{"a container env var added on the spoke",
			fmt.Sprintf(deploy, "uid: u", ""),
			strings.Replace(fmt.Sprintf(deploy, "uid: u", ""), "image: pause,", "image: pause, env: [{name: X, value: '1'}],", 1), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Drifted(obj(t, tc.expected), obj(t, tc.live)))
		})
	}
}

func TestMarkPending(t *testing.T) {
	pending := metav1.OwnerReference{Name: "h-w"}
	known := metav1.OwnerReference{Name: "h-w", UID: "amw-uid"}
	for _, tc := range []struct {
		name  string
		ann   map[string]string
		owner metav1.OwnerReference
		want  map[string]string
	}{
		{"the record is being created: marked", nil, pending, map[string]string{PendingOwnerAnnotation: "h-w"}},
		{"others kept", map[string]string{"a": "1"}, pending, map[string]string{"a": "1", PendingOwnerAnnotation: "h-w"}},
		{"a manifest's own value is replaced", map[string]string{PendingOwnerAnnotation: "other"}, pending, map[string]string{PendingOwnerAnnotation: "h-w"}},
		{"the record is known: the mark goes", map[string]string{"a": "1", PendingOwnerAnnotation: "h-w"}, known, map[string]string{"a": "1"}},
		{"no owner at all: no mark", map[string]string{PendingOwnerAnnotation: "x"}, metav1.OwnerReference{}, map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, markPending(tc.ann, tc.owner))
		})
	}
	// An update once the record is known drops the mark and adds the owner.
	live := &unstructured.Unstructured{Object: map[string]interface{}{"kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": "a", "annotations": map[string]interface{}{PendingOwnerAnnotation: "h-w"}}}}
	desired := &unstructured.Unstructured{Object: map[string]interface{}{"kind": "ConfigMap", "metadata": map[string]interface{}{"name": "a"}}}
	body := UpdateBody(desired, live, "hash", known)
	assert.NotContains(t, body.GetAnnotations(), PendingOwnerAnnotation)
	require.Len(t, body.GetOwnerReferences(), 1)
	assert.EqualValues(t, "amw-uid", body.GetOwnerReferences()[0].UID)
}
