package compare

import (
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func obj(t *testing.T, y string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(y), &m))
	return m
}

func TestObject(t *testing.T) {
	cases := []struct {
		name       string
		mode       Mode
		metaMode   *Mode
		template   string
		live       string
		match      bool
		mismatches []string
		statusOnly bool
		merged     string // expected merged object when given
	}{
		{
			name:     "map subset: extra live keys are ignored",
			template: "kind: ConfigMap\ndata: {a: '1'}",
			live:     "kind: ConfigMap\ndata: {a: '1', b: '2'}",
			match:    true,
		},
		{
			name:       "map value differs",
			template:   "kind: ConfigMap\ndata: {a: '1'}",
			live:       "kind: ConfigMap\ndata: {a: '2', b: '2'}",
			mismatches: []string{"data.a"},
			merged:     "kind: ConfigMap\ndata: {a: '1', b: '2'}",
		},
		{
			name:       "missing key is added by the merge",
			template:   "kind: ConfigMap\ndata: {c: x}",
			live:       "kind: ConfigMap\ndata: {a: '1'}",
			mismatches: []string{"data.c"},
			merged:     "kind: ConfigMap\ndata: {a: '1', c: x}",
		},
		{
			name:       "MustOnlyHave: extra map keys are removed",
			mode:       MustOnlyHave,
			template:   "kind: ConfigMap\ndata: {a: '1'}",
			live:       "kind: ConfigMap\ndata: {a: '1', b: '2'}",
			mismatches: []string{"data.b"},
			merged:     "kind: ConfigMap\ndata: {a: '1'}",
		},
		{
			name:     "MustOnlyHave: equal maps match",
			mode:     MustOnlyHave,
			template: "kind: ConfigMap\ndata: {a: '1', b: '2'}",
			live:     "kind: ConfigMap\ndata: {b: '2', a: '1'}",
			match:    true,
		},
		{
			name:     "list subset, order-insensitive",
			template: "spec: {l: [c, a]}",
			live:     "spec: {l: [a, b, c]}",
			match:    true,
		},
		{
			name:       "list item missing is appended",
			template:   "spec: {l: [a, d]}",
			live:       "spec: {l: [a, b]}",
			mismatches: []string{"spec.l[1]"},
			merged:     "spec: {l: [a, b, d]}",
		},
		{
			name:       "duplicates are counted",
			template:   "spec: {l: [a, a]}",
			live:       "spec: {l: [a, b]}",
			mismatches: []string{"spec.l[1]"},
			merged:     "spec: {l: [a, b, a]}",
		},
		{
			name:     "duplicates present often enough",
			template: "spec: {l: [a, a]}",
			live:     "spec: {l: [a, b, a]}",
			match:    true,
		},
		{
			name:       "MustOnlyHave list: extra item is a mismatch and is removed",
			mode:       MustOnlyHave,
			template:   "spec: {l: [a, b]}",
			live:       "spec: {l: [b, a, c]}",
			mismatches: []string{"spec.l[+1 extra]"},
			merged:     "spec: {l: [a, b]}",
		},
		{
			name:     "MustOnlyHave list: same items in another order match",
			mode:     MustOnlyHave,
			template: "spec: {l: [a, b, a]}",
			live:     "spec: {l: [a, a, b]}",
			match:    true,
		},
		{
			name:       "MustOnlyHave list: duplicate counts differ",
			mode:       MustOnlyHave,
			template:   "spec: {l: [a, a, b]}",
			live:       "spec: {l: [a, b, b]}",
			mismatches: []string{"spec.l[1,+1 extra]"},
		},
		{
			name:     "nested lists of maps: subset items match in any order",
			template: "spec: {containers: [{name: b, ports: [{containerPort: 80}]}, {name: a}]}",
			live: "spec: {containers: [{name: a, image: x}, {name: b, image: y, ports: [{containerPort: 443}," +
				" {containerPort: 80, protocol: TCP}]}]}",
			match: true,
		},
		{
			name:       "name-keyed items are merged, not appended",
			template:   "spec: {containers: [{name: web, image: nginx:1.27}]}",
			live:       "spec: {containers: [{name: web, image: nginx:1.25, ports: [{containerPort: 80}]}, {name: side, image: s}]}",
			mismatches: []string{"spec.containers[name=web].image"},
			merged:     "spec: {containers: [{name: web, image: nginx:1.27, ports: [{containerPort: 80}]}, {name: side, image: s}]}",
		},
		{
			name:       "nested list in a name-keyed item merges",
			template:   "spec: {containers: [{name: web, ports: [{containerPort: 8080}]}]}",
			live:       "spec: {containers: [{name: web, ports: [{containerPort: 80}]}]}",
			mismatches: []string{"spec.containers[name=web].ports[0]"},
			merged:     "spec: {containers: [{name: web, ports: [{containerPort: 80}, {containerPort: 8080}]}]}",
		},
		{
			name:       "unnamed map item without match is appended",
			template:   "rules: [{apiGroups: [''], resources: [pods], verbs: [get]}]",
			live:       "rules: [{apiGroups: [''], resources: [secrets], verbs: [get]}]",
			mismatches: []string{"rules[0]"},
			merged:     "rules: [{apiGroups: [''], resources: [secrets], verbs: [get]}, {apiGroups: [''], resources: [pods], verbs: [get]}]",
		},
		{
			name:     "maximum matching: a general item does not steal the specific one's partner",
			template: "l: [{a: 1}, {a: 1, b: 2}]",
			live:     "l: [{a: 1, b: 2}, {a: 1}]",
			match:    true,
		},
		{
			name:     "quantities compare as quantities",
			template: "spec: {limits: {memory: 1Gi, cpu: 500m}}",
			live:     "spec: {limits: {memory: 1024Mi, cpu: '0.5'}}",
			match:    true,
		},
		{
			name:     "a number equals the same quantity string",
			template: "spec: {limits: {cpu: 1}}",
			live:     "spec: {limits: {cpu: '1'}}",
			match:    true,
		},
		{
			name:       "different quantities differ",
			template:   "spec: {limits: {memory: 1Gi}}",
			live:       "spec: {limits: {memory: 1G}}",
			mismatches: []string{"spec.limits.memory"},
		},
		{
			name:     "integers and floats compare by value",
			template: "spec: {replicas: 3}",
			live:     `{"spec": {"replicas": 3.0}}`,
			match:    true,
		},
		{
			name:       "non-quantity strings compare exactly",
			template:   "spec: {image: nginx}",
			live:       "spec: {image: Nginx}",
			mismatches: []string{"spec.image"},
		},
		{
			name:     "empty map equals a missing one",
			template: "metadata: {labels: {}}\nspec: {selector: {}}",
			live:     "metadata: {name: x}",
			match:    true,
		},
		{
			name:     "empty list and empty string equal missing",
			template: "spec: {finalizers: [], note: ''}",
			live:     "spec: {other: 1}",
			match:    true,
		},
		{
			name:       "empty string does not equal a set string",
			template:   "spec: {note: ''}",
			live:       "spec: {note: hi}",
			mismatches: []string{"spec.note"},
		},
		{
			name:       "false is not missing",
			template:   "spec: {automountServiceAccountToken: false}",
			live:       "spec: {}",
			mismatches: []string{"spec.automountServiceAccountToken"},
			merged:     "spec: {automountServiceAccountToken: false}",
		},
		{
			name:     "MustOnlyHave: a live empty value equals a missing template key",
			mode:     MustOnlyHave,
			template: "data: {a: '1'}",
			live:     "data: {a: '1', b: ''}",
			match:    true,
		},
		{
			name:       "MustOnlyHave: empty template map against a filled one",
			mode:       MustOnlyHave,
			template:   "data: {}",
			live:       "data: {a: '1'}",
			mismatches: []string{"data"},
		},
		{
			name:     "metadata: only labels and annotations count",
			template: "metadata: {name: a, namespace: b, uid: other, resourceVersion: '9', labels: {x: y}}",
			live:     "metadata: {name: a, namespace: b, uid: real, resourceVersion: '1', labels: {x: y, z: w}}",
			match:    true,
		},
		{
			name:       "metadata-only change: a label differs",
			template:   "metadata: {labels: {env: prod}, annotations: {owner: team-a}}\ndata: {a: '1'}",
			live:       "metadata: {name: c, labels: {env: dev}, annotations: {owner: team-a}}\ndata: {a: '1'}",
			mismatches: []string{"metadata.labels.env"},
			merged:     "metadata: {name: c, labels: {env: prod}, annotations: {owner: team-a}}\ndata: {a: '1'}",
		},
		{
			name:       "MustOnlyHave applies to labels too",
			mode:       MustOnlyHave,
			template:   "metadata: {labels: {a: '1'}}",
			live:       "metadata: {labels: {a: '1', b: '2'}}",
			mismatches: []string{"metadata.labels.b"},
			merged:     "metadata: {labels: {a: '1'}}",
		},
		{
			name:     "metadataComplianceType MustHave relaxes labels under MustOnlyHave",
			mode:     MustOnlyHave,
			metaMode: ptr(MustHave),
			template: "metadata: {labels: {a: '1'}}\ndata: {k: v}",
			live:     "metadata: {labels: {a: '1', b: '2'}}\ndata: {k: v}",
			match:    true,
		},
		{
			name:       "metadataComplianceType MustOnlyHave tightens labels under MustHave",
			metaMode:   ptr(MustOnlyHave),
			template:   "metadata: {labels: {a: '1'}}\ndata: {k: v}",
			live:       "metadata: {labels: {a: '1', b: '2'}}\ndata: {k: v, j: w}",
			mismatches: []string{"metadata.labels.b"},
		},
		{
			name:       "status is compared but never merged",
			template:   "spec: {replicas: 1}\nstatus: {phase: Active}",
			live:       "spec: {replicas: 1}\nstatus: {phase: Terminating}",
			mismatches: []string{"status.phase"},
			statusOnly: true,
			merged:     "spec: {replicas: 1}\nstatus: {phase: Terminating}",
		},
		{
			name:       "status and spec mismatch is not status-only",
			template:   "spec: {replicas: 2}\nstatus: {phase: Active}",
			live:       "spec: {replicas: 1}\nstatus: {phase: Terminating}",
			mismatches: []string{"spec.replicas", "status.phase"},
			merged:     "spec: {replicas: 2}\nstatus: {phase: Terminating}",
		},
		{
			name:     "Secret stringData matches decoded data",
			template: "kind: Secret\nstringData: {password: hunter2}",
			live:     "kind: Secret\ndata: {password: aHVudGVyMg==, user: YWRtaW4=}",
			match:    true,
		},
		{
			name:       "Secret stringData differs from data",
			template:   "kind: Secret\nstringData: {password: changed}",
			live:       "kind: Secret\ndata: {password: aHVudGVyMg==}",
			mismatches: []string{"data.password"},
			merged:     "kind: Secret\ndata: {password: Y2hhbmdlZA==}",
		},
		{
			name:       "type change: map where a scalar is",
			template:   "spec: {x: {a: 1}}",
			live:       "spec: {x: 3}",
			mismatches: []string{"spec.x"},
			merged:     "spec: {x: {a: 1}}",
		},
		{
			name:       "missing object section",
			template:   "spec: {replicas: 1}",
			live:       "kind: X",
			mismatches: []string{"spec.replicas"},
			merged:     "kind: X\nspec: {replicas: 1}",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Mode: tc.mode}
			if tc.metaMode != nil {
				opts.MetadataMode, opts.MetadataModeSet = *tc.metaMode, true
			}
			tmpl, live := obj(t, tc.template), obj(t, tc.live)
			before := obj(t, tc.live)
			r := Object(tmpl, live, opts)
			require.Equal(t, tc.match, r.Match, "mismatches: %v", r.Mismatches)
			require.Equal(t, tc.mismatches, r.Mismatches)
			require.Equal(t, tc.statusOnly, r.StatusOnly)
			require.Equal(t, before, live, "the live object must not be modified")
			if tc.merged != "" {
				require.Equal(t, obj(t, tc.merged), r.Merged)
			}
			if tc.match {
				require.Equal(t, live, r.Merged, "a match merges to the live object")
			} else if !tc.statusOnly {
				// Enforcing the merge repairs the object.
				again := Object(tmpl, r.Merged, opts)
				for _, m := range again.Mismatches {
					require.Regexp(t, "^status", m, "merged object must match but for status")
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestScalarEqual(t *testing.T) {
	for _, tc := range []struct {
		a, b any
		eq   bool
	}{
		{"1Gi", "1024Mi", true},
		{"1Gi", "1G", false},
		{"100m", "0.1", true},
		{int64(2), 2.0, true},
		{"2", 2.0, true},
		{"abc", "abc", true},
		{"abc", "abd", false},
		{true, true, true},
		{true, "true", false},
		{false, nil, false},
		{"v1.2", "v1.2", true},
		{"1.0", "1", false},  // versions, not quantities
		{"4", "4000m", true}, // a unit makes it a quantity
		{"1.0", 1.0, true},   // a JSON number is a quantity
		{"10Gi", "10G", false},
	} {
		require.Equal(t, tc.eq, scalarEqual(tc.a, tc.b), "%#v vs %#v", tc.a, tc.b)
	}
}

func TestDiff(t *testing.T) {
	live := obj(t, "kind: ConfigMap\nmetadata: {name: c, resourceVersion: '5', uid: u}\ndata: {a: '1', b: '2'}")
	r := Object(obj(t, "data: {a: '9'}"), live, Options{})
	// 5 lines of context, as upstream's diffs
	require.Equal(t, `--- c : existing
+++ c : updated
@@ -1,6 +1,6 @@
 data:
-  a: "1"
+  a: "9"
   b: "2"
 kind: ConfigMap
 metadata:
   name: c`, Diff("c", live, r.Merged))
	require.Empty(t, Diff("c", live, live))
}
