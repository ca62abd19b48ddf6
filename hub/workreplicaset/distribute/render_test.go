package distribute

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
)

const deployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"apps","labels":{"app":"web"}},
"spec":{"replicas":30,"template":{"spec":{"initContainers":[{"name":"init","image":"busybox:1.36"}],
"containers":[{"name":"web","image":"docker.io/library/nginx:1.27","args":["--port=80","--debug"]},{"name":"sidecar","image":"envoy:v1"}]}}}}`

const configMap = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web-config","namespace":"apps"},"data":{"region":"unset"}}`

func template(raws ...string) workv1.ManifestWorkSpec {
	var s workv1.ManifestWorkSpec
	for _, r := range raws {
		s.Workload.Manifests = append(s.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(r)}})
	}
	return s
}

var (
	eu1 = Cluster{Name: "eu-1", Labels: map[string]string{"region": "eu"}, Claims: map[string]string{"id.k8s.io": "id-eu-1"}}
	eu2 = Cluster{Name: "eu-2", Labels: map[string]string{"region": "eu"}}
	us1 = Cluster{Name: "us-1", Labels: map[string]string{"region": "us"}}
)

func region(r string) distv1alpha1.ClusterSelector {
	return distv1alpha1.ClusterSelector{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": r}}}
}

func jsonValue(v any) *apiextensionsv1.JSON {
	raw, _ := json.Marshal(v)
	return &apiextensionsv1.JSON{Raw: raw}
}

// manifestOf decodes manifest i of a rendered spec.
func manifestOf(t *testing.T, s workv1.ManifestWorkSpec, i int) map[string]any {
	t.Helper()
	var obj map[string]any
	require.NoError(t, json.Unmarshal(s.Workload.Manifests[i].Raw, &obj))
	return obj
}

func at(obj any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := obj.(map[string]any)
			obj = m[k]
		case int:
			l, _ := obj.([]any)
			if k >= len(l) {
				return nil
			}
			obj = l[k]
		}
	}
	return obj
}

// TestRenderOverrides runs one rule kind per case over the same template and
// clusters and checks the rendered manifests.
func TestRenderOverrides(t *testing.T) {
	container := func(i int, field string) []any { return []any{"spec", "template", "spec", "containers", i, field} }
	tests := []struct {
		name  string
		rules []distv1alpha1.OverrideRule
		// check runs on each cluster's rendered Deployment (manifest 0) and ConfigMap (1).
		check  func(t *testing.T, c string, dep, cm map[string]any)
		rules2 map[string][]string // rules applied per cluster
		err    map[string]string   // render error per cluster
	}{
		{name: "image registry per region, tag for all",
			rules: []distv1alpha1.OverrideRule{
				{Name: "eu-registry", Clusters: region("eu"), Images: []distv1alpha1.ImageOverride{{Component: distv1alpha1.Registry, Value: "registry.eu.example.com"}}},
				{Name: "us-registry", Clusters: region("us"), Images: []distv1alpha1.ImageOverride{{Component: distv1alpha1.Registry, Value: "registry.us.example.com"}}},
				{Name: "pin", Images: []distv1alpha1.ImageOverride{{Container: "web", Component: distv1alpha1.Tag, Value: "1.27.3"}}},
			},
			check: func(t *testing.T, c string, dep, cm map[string]any) {
				reg := map[string]string{"eu-1": "registry.eu.example.com", "eu-2": "registry.eu.example.com", "us-1": "registry.us.example.com"}[c]
				assert.Equal(t, reg+"/library/nginx:1.27.3", at(dep, container(0, "image")...))
				assert.Equal(t, reg+"/envoy:v1", at(dep, container(1, "image")...))
				assert.Equal(t, reg+"/busybox:1.36", at(dep, "spec", "template", "spec", "initContainers", 0, "image"))
				assert.Nil(t, cm["spec"], "the ConfigMap has no containers and stays as it was")
			},
			rules2: map[string][]string{"eu-1": {"eu-registry", "pin"}, "eu-2": {"eu-registry", "pin"}, "us-1": {"us-registry", "pin"}}},
		{name: "labels and annotations with templates, selected by kind",
			rules: []distv1alpha1.OverrideRule{{Name: "meta", Manifests: []distv1alpha1.ManifestSelector{{Group: "apps", Kind: "Deployment"}},
				Labels: []distv1alpha1.MetadataOverride{{Key: "region", Value: "{{ cluster.labels[region] }}"}, {Key: "app", Operation: distv1alpha1.OpRemove},
					{Key: "tier", Operation: distv1alpha1.OpAdd, Value: "web"}},
				Annotations: []distv1alpha1.MetadataOverride{{Key: "flotilla.dev/cluster", Value: "{{cluster.name}}"}}}},
			check: func(t *testing.T, c string, dep, cm map[string]any) {
				assert.Equal(t, map[string]any{"region": map[string]string{"eu-1": "eu", "eu-2": "eu", "us-1": "us"}[c], "tier": "web"}, at(dep, "metadata", "labels"))
				assert.Equal(t, c, at(dep, "metadata", "annotations", "flotilla.dev/cluster"))
				assert.Nil(t, at(cm, "metadata", "labels"))
			},
			rules2: map[string][]string{"eu-1": {"meta"}, "eu-2": {"meta"}, "us-1": {"meta"}}},
		{name: "command and args: append, remove, by container",
			rules: []distv1alpha1.OverrideRule{{Name: "args", Clusters: distv1alpha1.ClusterSelector{Names: []string{"us-1"}},
				Args:    []distv1alpha1.ArgsOverride{{Container: "web", Operation: distv1alpha1.ArgsRemove, Values: []string{"--debug"}}, {Container: "web", Operation: distv1alpha1.ArgsAppend, Values: []string{"--cluster={{ cluster.name }}"}}},
				Command: []distv1alpha1.ArgsOverride{{Container: "sidecar", Operation: distv1alpha1.ArgsAppend, Values: []string{"envoy", "-c", "/etc/envoy.yaml"}}}}},
			check: func(t *testing.T, c string, dep, cm map[string]any) {
				if c != "us-1" {
					assert.Equal(t, []any{"--port=80", "--debug"}, at(dep, container(0, "args")...))
					return
				}
				assert.Equal(t, []any{"--port=80", "--cluster=us-1"}, at(dep, container(0, "args")...))
				assert.Equal(t, []any{"envoy", "-c", "/etc/envoy.yaml"}, at(dep, container(1, "command")...))
				assert.Nil(t, at(dep, container(0, "command")...))
			},
			rules2: map[string][]string{"us-1": {"args"}}},
		{name: "JSON patch with a template, by manifest name, claim selector",
			rules: []distv1alpha1.OverrideRule{{Name: "patch",
				Clusters:  distv1alpha1.ClusterSelector{ClaimSelector: &clusterv1beta1.ClusterClaimSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "id.k8s.io", Operator: metav1.LabelSelectorOpExists}}}},
				Manifests: []distv1alpha1.ManifestSelector{{Kind: "ConfigMap", Name: "web-config"}},
				JSONPatch: []distv1alpha1.JSONPatchOperation{{Op: "replace", Path: "/data/region", Value: jsonValue("{{ cluster.labels[region] }}")},
					{Op: "add", Path: "/data/id", Value: jsonValue(map[string]any{"claim": "{{ cluster.claims[id.k8s.io] }}"})}}}},
			check: func(t *testing.T, c string, dep, cm map[string]any) {
				if c != "eu-1" {
					assert.Equal(t, map[string]any{"region": "unset"}, cm["data"])
					return
				}
				assert.Equal(t, map[string]any{"region": "eu", "id": map[string]any{"claim": "id-eu-1"}}, cm["data"])
			},
			rules2: map[string][]string{"eu-1": {"patch"}}},
		{name: "rules apply in order: a later rule sees an earlier one's result",
			rules: []distv1alpha1.OverrideRule{
				{Name: "first", Labels: []distv1alpha1.MetadataOverride{{Key: "stage", Value: "one"}}},
				{Name: "second", JSONPatch: []distv1alpha1.JSONPatchOperation{{Op: "test", Path: "/metadata/labels/stage", Value: jsonValue("one")},
					{Op: "replace", Path: "/metadata/labels/stage", Value: jsonValue("two")}}},
			},
			check: func(t *testing.T, c string, dep, cm map[string]any) {
				assert.Equal(t, "two", at(dep, "metadata", "labels", "stage"))
				assert.Equal(t, "two", at(cm, "metadata", "labels", "stage"))
			},
			rules2: map[string][]string{"eu-1": {"first", "second"}, "eu-2": {"first", "second"}, "us-1": {"first", "second"}}},
		{name: "a missing label fails that cluster only, naming the rule and the manifest",
			rules: []distv1alpha1.OverrideRule{{Name: "claim-label", Manifests: []distv1alpha1.ManifestSelector{{Kind: "ConfigMap"}},
				Labels: []distv1alpha1.MetadataOverride{{Key: "id", Value: "{{ cluster.claims[id.k8s.io] }}"}}}},
			check: func(t *testing.T, c string, dep, cm map[string]any) {
				assert.Equal(t, "id-eu-1", at(cm, "metadata", "labels", "id"))
			},
			rules2: map[string][]string{"eu-1": {"claim-label"}},
			err: map[string]string{
				"eu-2": `override "claim-label" on ConfigMap apps/web-config: labels[0]: template {{ cluster.claims[id.k8s.io] }}: cluster eu-2 has no ClusterClaim "id.k8s.io"`,
				"us-1": `cluster us-1 has no ClusterClaim "id.k8s.io"`}},
		{name: "a patch on a path that does not exist fails the render",
			rules: []distv1alpha1.OverrideRule{{Name: "bad-path", Clusters: region("us"),
				JSONPatch: []distv1alpha1.JSONPatchOperation{{Op: "replace", Path: "/spec/nope/deeper", Value: jsonValue(1)}}}},
			check:  func(t *testing.T, c string, dep, cm map[string]any) {},
			rules2: map[string][]string{},
			err:    map[string]string{"us-1": `override "bad-path" on Deployment.apps apps/web: jsonPatch:`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compile(distv1alpha1.DistributionPolicySpec{Overrides: tc.rules})
			require.NoError(t, err)
			out := p.Render(Input{Template: template(deployment, configMap), Clusters: []Cluster{eu1, eu2, us1}})
			for _, c := range []string{"eu-1", "eu-2", "us-1"} {
				w := out.Works[c]
				if want, ok := tc.err[c]; ok {
					assert.ErrorContains(t, w.Err, want, c)
					var re *RenderError
					assert.ErrorAs(t, w.Err, &re)
					continue
				}
				require.NoError(t, w.Err, c)
				assert.Equal(t, tc.rules2[c], w.Rules, c)
				tc.check(t, c, manifestOf(t, w.Spec, 0), manifestOf(t, w.Spec, 1))
			}
		})
	}
}

func TestRenderWithoutPolicyIsTheTemplate(t *testing.T) {
	var p *Policy
	tmpl := template(deployment)
	out := p.Render(Input{Template: tmpl, Clusters: []Cluster{eu1}})
	assert.Equal(t, tmpl, out.Works["eu-1"].Spec)
	empty, err := Compile(distv1alpha1.DistributionPolicySpec{})
	require.NoError(t, err)
	out = empty.Render(Input{Template: tmpl, Clusters: []Cluster{eu1}})
	assert.Equal(t, tmpl, out.Works["eu-1"].Spec, "an empty policy changes nothing (the work keeps its revision)")
}

func TestRenderDividesReplicas(t *testing.T) {
	p, err := Compile(distv1alpha1.DistributionPolicySpec{
		Overrides: []distv1alpha1.OverrideRule{{Name: "pin-replicas", JSONPatch: []distv1alpha1.JSONPatchOperation{{Op: "replace", Path: "/spec/replicas", Value: jsonValue(99)}},
			Manifests: []distv1alpha1.ManifestSelector{{Kind: "Deployment", Group: "apps"}}}},
		Replicas: &distv1alpha1.ReplicaDivision{Type: distv1alpha1.Weighted, Weights: []distv1alpha1.ClusterWeight{
			{Clusters: region("eu"), Weight: 2}, {Clusters: region("us"), Weight: 1}}}})
	require.NoError(t, err)
	out := p.Render(Input{Template: template(deployment, configMap), Clusters: []Cluster{eu1, eu2, us1}})
	got := map[string]any{}
	for c, w := range out.Works {
		require.NoError(t, w.Err)
		got[c] = at(manifestOf(t, w.Spec, 0), "spec", "replicas")
		assert.Equal(t, []workv1.ManifestConfigOption{{
			ResourceIdentifier: workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Name: "web", Namespace: "apps"},
			FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}},
		}}, w.Spec.ManifestConfigs)
	}
	assert.Equal(t, map[string]any{"eu-1": 12.0, "eu-2": 12.0, "us-1": 6.0}, got, "the division wins over an override of spec.replicas")
	require.Len(t, out.Workloads, 1)
	assert.Equal(t, int64(30), out.Workloads[0].Desired)
}

func TestRenderDivisionWithoutWeights(t *testing.T) {
	p, err := Compile(distv1alpha1.DistributionPolicySpec{Replicas: &distv1alpha1.ReplicaDivision{Type: distv1alpha1.Weighted,
		Weights: []distv1alpha1.ClusterWeight{{Clusters: region("ap"), Weight: 1}}}})
	require.NoError(t, err)
	out := p.Render(Input{Template: template(deployment), Clusters: []Cluster{eu1, us1}})
	assert.ErrorContains(t, out.Works["eu-1"].Err, "replica division on Deployment.apps apps/web: no cluster has a positive weight among 2")
}

func TestRenderKeepsLargeIntegers(t *testing.T) {
	p, err := Compile(distv1alpha1.DistributionPolicySpec{Overrides: []distv1alpha1.OverrideRule{{Name: "l",
		Labels:    []distv1alpha1.MetadataOverride{{Key: "a", Value: "b"}},
		JSONPatch: []distv1alpha1.JSONPatchOperation{{Op: "add", Path: "/data/x", Value: jsonValue("y")}}}}})
	require.NoError(t, err)
	out := p.Render(Input{Template: template(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{},"big":9007199254740993}`), Clusters: []Cluster{eu1}})
	require.NoError(t, out.Works["eu-1"].Err)
	assert.Contains(t, string(out.Works["eu-1"].Spec.Workload.Manifests[0].Raw), `"big":9007199254740993`)
}

func TestRenderRefusesReplicasAboveInt32(t *testing.T) {
	p, err := Compile(distv1alpha1.DistributionPolicySpec{Replicas: &distv1alpha1.ReplicaDivision{Type: distv1alpha1.Capacity}})
	require.NoError(t, err)
	huge := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"apps"},"spec":{"replicas":9223372036854775807}}`
	out := p.Render(Input{Template: template(huge), Clusters: []Cluster{eu1, us1}})
	assert.ErrorContains(t, out.Works["eu-1"].Err, "replica division on Deployment.apps apps/web: spec.replicas 9223372036854775807 is above 2147483647")
}

// TestRenderRefusesIdentityChanges: a policy changes a manifest's content,
// never which object it is. Whoever may write a DistributionPolicy but not
// works must not turn a ConfigMap into a ClusterRoleBinding (applied by the
// agent, cluster-admin on most clusters) or move it to another namespace.
func TestRenderRefusesIdentityChanges(t *testing.T) {
	crb := json.RawMessage(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"pwn"},` +
		`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},"subjects":[{"kind":"Group","name":"system:anonymous"}]}`)
	tests := []struct {
		name string
		ops  []distv1alpha1.JSONPatchOperation
	}{
		{"add at the root", []distv1alpha1.JSONPatchOperation{{Op: "add", Path: "", Value: &apiextensionsv1.JSON{Raw: crb}}}},
		{"kind", []distv1alpha1.JSONPatchOperation{{Op: "replace", Path: "/kind", Value: jsonValue("Secret")}}},
		{"apiVersion", []distv1alpha1.JSONPatchOperation{{Op: "replace", Path: "/apiVersion", Value: jsonValue("v2")}}},
		{"namespace", []distv1alpha1.JSONPatchOperation{{Op: "add", Path: "/metadata/namespace", Value: jsonValue("kube-system")}}},
		{"name", []distv1alpha1.JSONPatchOperation{{Op: "replace", Path: "/metadata/name", Value: jsonValue("{{ cluster.name }}")}}},
		{"generateName", []distv1alpha1.JSONPatchOperation{{Op: "add", Path: "/metadata/generateName", Value: jsonValue("x-")}}},
		{"the whole metadata", []distv1alpha1.JSONPatchOperation{{Op: "replace", Path: "/metadata", Value: jsonValue(map[string]any{"name": "c", "namespace": "kube-system"})}}},
		{"moved from data", []distv1alpha1.JSONPatchOperation{{Op: "add", Path: "/data/k", Value: jsonValue("Secret")}, {Op: "move", From: "/data/k", Path: "/kind"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compile(distv1alpha1.DistributionPolicySpec{Overrides: []distv1alpha1.OverrideRule{{Name: "evil", JSONPatch: tc.ops}}})
			require.NoError(t, err)
			out := p.Render(Input{Template: template(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"apps"},"data":{}}`), Clusters: []Cluster{eu1}})
			assert.ErrorContains(t, out.Works["eu-1"].Err, "an override may not change apiVersion, kind, metadata.name")
		})
	}
	p, err := Compile(distv1alpha1.DistributionPolicySpec{Overrides: []distv1alpha1.OverrideRule{{Name: "fine", JSONPatch: []distv1alpha1.JSONPatchOperation{
		{Op: "replace", Path: "/metadata", Value: jsonValue(map[string]any{"name": "c", "namespace": "apps", "labels": map[string]any{"a": "b"}})}}}}})
	require.NoError(t, err)
	out := p.Render(Input{Template: template(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"apps"},"data":{}}`), Clusters: []Cluster{eu1}})
	assert.NoError(t, out.Works["eu-1"].Err, "a patch that keeps the identity is fine")
}

// TestRenderBoundsPatchGrowthPerCluster: the growth bound holds over all of a
// cluster's rules and manifests, not per rule (64 rules each adding a little
// less than the bound would add 64 times it).
func TestRenderBoundsPatchGrowthPerCluster(t *testing.T) {
	big := strings.Repeat("x", 300<<10)
	var rules []distv1alpha1.OverrideRule
	for i := 0; i < 2; i++ {
		rules = append(rules, distv1alpha1.OverrideRule{Name: fmt.Sprintf("r%d", i),
			JSONPatch: []distv1alpha1.JSONPatchOperation{{Op: "add", Path: fmt.Sprintf("/data/k%d", i), Value: jsonValue(big)}}})
	}
	p, err := Compile(distv1alpha1.DistributionPolicySpec{Overrides: rules})
	require.NoError(t, err)
	out := p.Render(Input{Template: template(configMap), Clusters: []Cluster{eu1}})
	assert.ErrorContains(t, out.Works["eu-1"].Err, `override "r1" on ConfigMap apps/web-config: jsonPatch: add /data/k1: the patches would add more than 524288 bytes`)
	p, err = Compile(distv1alpha1.DistributionPolicySpec{Overrides: rules[:1]})
	require.NoError(t, err)
	out = p.Render(Input{Template: template(configMap), Clusters: []Cluster{eu1, us1}})
	assert.NoError(t, out.Works["eu-1"].Err)
	assert.NoError(t, out.Works["us-1"].Err, "each cluster has its own bound")
}
