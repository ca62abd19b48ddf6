package distribute

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
)

// Feedback names of the replicas of a divided workload: the names OCM's
// well-known status of a Deployment uses, and those of the JSONPaths rules
// render adds for the other kinds.
const (
	FeedbackReplicas  = "Replicas"
	FeedbackReady     = "ReadyReplicas"
	FeedbackAvailable = "AvailableReplicas"
)

// divisible are the kinds whose replicas are divided without opting in, with
// their resources.
var divisible = map[groupKind]string{
	{"apps", "Deployment"}:  "deployments",
	{"apps", "StatefulSet"}: "statefulsets",
	{"apps", "ReplicaSet"}:  "replicasets",
}

type groupKind struct{ Group, Kind string }

// Policy is a compiled DistributionPolicy spec, ready to render with.
type Policy struct {
	spec    distv1alpha1.DistributionPolicySpec
	rules   []rule
	weights []clusterMatcher // parallel to spec.Replicas.Weights
	kinds   map[groupKind]string
}

// Compile compiles a policy's spec. It fails on what no cluster could ever
// render (a bad selector); Check judges the rest.
func Compile(spec distv1alpha1.DistributionPolicySpec) (*Policy, error) {
	p := &Policy{spec: spec, kinds: map[groupKind]string{}}
	var err error
	if p.rules, err = compileRules(spec.Overrides); err != nil {
		return nil, err
	}
	for gk, res := range divisible {
		p.kinds[gk] = res
	}
	if r := spec.Replicas; r != nil {
		for i, w := range r.Weights {
			m, err := compileSelector(w.Clusters)
			if err != nil {
				return nil, fmt.Errorf("replicas.weights[%d].clusters.%w", i, err)
			}
			p.weights = append(p.weights, m)
		}
		for _, k := range r.ExtraKinds {
			p.kinds[groupKind{k.Group, k.Kind}] = k.Resource
		}
	}
	return p, nil
}

// Input is what a render needs besides the policy.
type Input struct {
	// Template is the replica set's spec.manifestWorkTemplate.
	Template workv1.ManifestWorkSpec
	// Clusters are the clusters to render for, in decision order.
	Clusters []Cluster
	// Previous are the clusters' current work specs (Capacity keeps their
	// division while the clusters and the total do not change).
	Previous map[string]*workv1.ManifestWorkSpec
}

// Output is a render's result.
type Output struct {
	// Works are the rendered specs by cluster.
	Works map[string]Work
	// Rules count, per override rule in spec order, the clusters it changed.
	Rules []RuleCount
	// Workloads are the divided workloads, in template order.
	Workloads []Workload
}

// Work is one cluster's render: the spec and the rules applied, or Err.
type Work struct {
	Spec  workv1.ManifestWorkSpec
	Rules []string
	// Err is a *RenderError; Spec is then empty and must not be written.
	Err error
}

// RuleCount is how many clusters one rule changed.
type RuleCount struct {
	Rule     string
	Clusters int
}

// Workload is one divided workload: its template total and each cluster's share.
type Workload struct {
	Group, Kind, Namespace, Name, Resource string
	Desired                                int64
	Shares                                 map[string]int64
}

// RenderError is a failed render: the rule (empty for the replica division),
// the manifest, and why.
type RenderError struct {
	Rule     string
	Manifest string
	Err      error
}

func (e *RenderError) Error() string {
	what := "replica division"
	if e.Rule != "" {
		what = fmt.Sprintf("override %q", e.Rule)
	}
	if e.Manifest != "" {
		return fmt.Sprintf("%s on %s: %v", what, e.Manifest, e.Err)
	}
	return fmt.Sprintf("%s: %v", what, e.Err)
}

func (e *RenderError) Unwrap() error { return e.Err }

// manifest is one decoded template manifest.
type manifest struct {
	id  manifestID
	raw []byte
	obj map[string]any // decoded once; each cluster works on a deep copy
}

// Render renders the template for every cluster: overrides first (Policy's
// rules in order), then the replica division (so a divided workload always
// runs its share, whatever an override did to spec.replicas). A nil policy
// renders the template unchanged.
func (p *Policy) Render(in Input) Output {
	out := Output{Works: make(map[string]Work, len(in.Clusters))}
	if p == nil {
		for _, c := range in.Clusters {
			out.Works[c.Name] = Work{Spec: *in.Template.DeepCopy()}
		}
		return out
	}
	ms, err := decodeManifests(in.Template.Workload.Manifests)
	if err != nil {
		for _, c := range in.Clusters {
			out.Works[c.Name] = Work{Err: &RenderError{Err: err}}
		}
		return out
	}
	out.Workloads, err = p.divide(ms, in)
	counts := make([]int, len(p.rules))
	for _, c := range in.Clusters {
		if err != nil {
			out.Works[c.Name] = Work{Err: err}
			continue
		}
		w := p.renderCluster(in.Template, ms, out.Workloads, c)
		if w.Err == nil {
			for i, r := range p.rules {
				for _, name := range w.Rules {
					if name == r.Name {
						counts[i]++
					}
				}
			}
		}
		out.Works[c.Name] = w
	}
	for i, r := range p.rules {
		out.Rules = append(out.Rules, RuleCount{Rule: r.Name, Clusters: counts[i]})
	}
	return out
}

// decodeManifests reads each manifest's group, kind, namespace and name.
func decodeManifests(list []workv1.Manifest) ([]manifest, error) {
	out := make([]manifest, 0, len(list))
	for i, m := range list {
		raw := m.Raw
		if raw == nil && m.Object != nil {
			var err error
			if raw, err = json.Marshal(m.Object); err != nil {
				return nil, fmt.Errorf("manifest %d: %w", i, err)
			}
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, fmt.Errorf("manifest %d: %w", i, err)
		}
		group, _, _ := strings.Cut(head.APIVersion, "/")
		if !strings.Contains(head.APIVersion, "/") {
			group = ""
		}
		obj, err := decodeObject(raw)
		if err != nil {
			return nil, fmt.Errorf("manifest %d: %w", i, err)
		}
		out = append(out, manifest{id: manifestID{Group: group, Kind: head.Kind, Namespace: head.Metadata.Namespace, Name: head.Metadata.Name}, raw: raw, obj: obj})
	}
	return out, nil
}

// identity is what a manifest is: which object the agent writes. The replica
// set's author chose it; a policy (which may be written by someone who may
// not write works) only changes content, never identity, so a ConfigMap
// cannot become a ClusterRoleBinding or move to another namespace.
type identity struct {
	APIVersion, Kind, Name, GenerateName, Namespace string
	Present                                         bool // metadata.namespace is set
}

func (i identity) String() string {
	ns := i.Namespace
	if !i.Present {
		ns = "(none)"
	}
	return fmt.Sprintf("apiVersion %q kind %q name %q generateName %q namespace %s", i.APIVersion, i.Kind, i.Name, i.GenerateName, ns)
}

func identityOf(obj map[string]any) identity {
	str := func(m map[string]any, k string) string { v, _ := m[k].(string); return v }
	id := identity{APIVersion: str(obj, "apiVersion"), Kind: str(obj, "kind")}
	if meta, ok := obj["metadata"].(map[string]any); ok {
		id.Name, id.GenerateName, id.Namespace = str(meta, "name"), str(meta, "generateName"), str(meta, "namespace")
		_, id.Present = meta["namespace"]
	}
	return id
}

// renderCluster renders the template for one cluster.
func (p *Policy) renderCluster(tmpl workv1.ManifestWorkSpec, ms []manifest, workloads []Workload, c Cluster) Work {
	var applied []string
	seen := map[string]bool{}
	var rules []rule
	for _, r := range p.rules {
		if r.clusters.matches(c) {
			rules = append(rules, r)
		}
	}
	spec := *tmpl.DeepCopy()
	budget := maxPatchGrowth // what the patches may add over all manifests
	for i, m := range ms {
		var mine []rule
		for _, r := range rules {
			if manifestMatches(r.Manifests, m.id) {
				mine = append(mine, r)
			}
		}
		share, divided := int64(0), false
		for _, wl := range workloads {
			if wl.Group == m.id.Group && wl.Kind == m.id.Kind && wl.Namespace == m.id.Namespace && wl.Name == m.id.Name {
				share, divided = wl.Shares[c.Name], true
			}
		}
		if len(mine) == 0 && !divided {
			continue
		}
		obj := runtime.DeepCopyJSON(m.obj)
		before := identityOf(m.obj)
		for _, r := range mine {
			next, err := r.apply(obj, c, &budget)
			if err != nil {
				return Work{Err: &RenderError{Rule: r.Name, Manifest: m.id.String(), Err: err}}
			}
			if after := identityOf(next); after != before {
				return Work{Err: &RenderError{Rule: r.Name, Manifest: m.id.String(), Err: fmt.Errorf(
					"the override changed what the manifest is (%s to %s): an override may not change apiVersion, kind, metadata.name, metadata.generateName or metadata.namespace", before, after)}}
			}
			obj = next
			if !seen[r.Name] {
				seen[r.Name] = true
				applied = append(applied, r.Name)
			}
		}
		if divided {
			s, _ := obj["spec"].(map[string]any)
			if s == nil {
				s = map[string]any{}
				obj["spec"] = s
			}
			s["replicas"] = share
		}
		raw, err := json.Marshal(obj)
		if err != nil {
			return Work{Err: &RenderError{Manifest: m.id.String(), Err: err}}
		}
		spec.Workload.Manifests[i] = workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}}
	}
	addFeedback(&spec, workloads)
	// Keep the rules in spec order.
	var ordered []string
	for _, r := range p.rules {
		if seen[r.Name] {
			ordered = append(ordered, r.Name)
		}
	}
	return Work{Spec: spec, Rules: ordered}
}

// addFeedback asks for the replicas, ready and available replicas of each
// divided workload, unless the template already has feedback rules for it: a
// Deployment's well-known status (which leaves out a count the Deployment does
// not report yet, such as readyReplicas while none is ready), JSONPaths for
// other kinds (a count they do not report yet makes StatusFeedbackSynced
// False until they do).
func addFeedback(spec *workv1.ManifestWorkSpec, workloads []Workload) {
	for _, wl := range workloads {
		id := workv1.ResourceIdentifier{Group: wl.Group, Resource: wl.Resource, Name: wl.Name, Namespace: wl.Namespace}
		rules := []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{
			{Name: FeedbackReplicas, Path: ".status.replicas"},
			{Name: FeedbackReady, Path: ".status.readyReplicas"},
			{Name: FeedbackAvailable, Path: ".status.availableReplicas"},
		}}}
		if wl.Group == "apps" && wl.Kind == "Deployment" {
			rules = []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}}
		}
		found := false
		for i := range spec.ManifestConfigs {
			mc := &spec.ManifestConfigs[i]
			if mc.ResourceIdentifier == id {
				found = true
				if len(mc.FeedbackRules) == 0 {
					mc.FeedbackRules = rules
				}
			}
		}
		if !found {
			spec.ManifestConfigs = append(spec.ManifestConfigs, workv1.ManifestConfigOption{ResourceIdentifier: id, FeedbackRules: rules})
		}
	}
}

// divide computes the shares of every divided workload.
func (p *Policy) divide(ms []manifest, in Input) ([]Workload, error) {
	r := p.spec.Replicas
	if r == nil || r.Type == "" || r.Type == distv1alpha1.Duplicated {
		return nil, nil
	}
	var out []Workload
	for _, m := range ms {
		res, ok := p.kinds[groupKind{m.id.Group, m.id.Kind}]
		if !ok {
			continue
		}
		var obj struct {
			Spec struct {
				Replicas *int64 `json:"replicas"`
				Template struct {
					Spec corev1.PodSpec `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(m.raw, &obj); err != nil {
			return nil, &RenderError{Manifest: m.id.String(), Err: err}
		}
		desired := int64(1)
		if obj.Spec.Replicas != nil {
			desired = *obj.Spec.Replicas
		}
		if desired > math.MaxInt32 {
			return nil, &RenderError{Manifest: m.id.String(), Err: fmt.Errorf("spec.replicas %d is above %d, the most a workload can ask for", desired, math.MaxInt32)}
		}
		wl := Workload{Group: m.id.Group, Kind: m.id.Kind, Namespace: m.id.Namespace, Name: m.id.Name, Resource: res, Desired: desired}
		var err error
		switch r.Type {
		case distv1alpha1.Weighted:
			wl.Shares, err = Divide(desired, p.staticWeights(in.Clusters))
		case distv1alpha1.Capacity:
			wl.Shares, err = p.byCapacity(m, desired, podRequests(obj.Spec.Template.Spec), in)
		default:
			err = fmt.Errorf("unknown replica division %q (want Duplicated, Weighted or Capacity)", r.Type)
		}
		if err != nil {
			return nil, &RenderError{Manifest: m.id.String(), Err: err}
		}
		out = append(out, wl)
	}
	return out, nil
}

// staticWeights gives each cluster the weight of the first entry selecting it (0 if none).
func (p *Policy) staticWeights(clusters []Cluster) []Weight {
	out := make([]Weight, 0, len(clusters))
	for _, c := range clusters {
		w := Weight{Cluster: c.Name}
		for i, m := range p.weights {
			if m.matches(c) {
				w.Weight = int64(p.spec.Replicas.Weights[i].Weight)
				break
			}
		}
		out = append(out, w)
	}
	return out
}

// maxFitWeight caps a fit used as a weight (a pod requesting a millicore on a
// large cluster fits millions).
const maxFitWeight = 1 << 30

// byCapacity divides desired in proportion to how many pods fit in each
// cluster (equally when the pod requests nothing or fits nowhere), sticky to
// the previous division (Rebalance).
func (p *Policy) byCapacity(m manifest, desired int64, requests corev1.ResourceList, in Input) (map[string]int64, error) {
	weights := make([]Weight, 0, len(in.Clusters))
	var sum int64
	names := make([]string, 0, len(in.Clusters))
	for _, c := range in.Clusters {
		n, ok := Fit(requests, c.Allocatable)
		if !ok {
			n = 1
		}
		if n > maxFitWeight {
			n = maxFitWeight
		}
		sum += n
		weights = append(weights, Weight{Cluster: c.Name, Weight: n})
		names = append(names, c.Name)
	}
	if sum == 0 {
		for i := range weights {
			weights[i].Weight = 1
		}
	}
	target, err := Divide(desired, weights)
	if err != nil {
		return nil, err
	}
	previous := map[string]int64{}
	for _, c := range in.Clusters {
		if n, ok := previousReplicas(in.Previous[c.Name], m.id); ok {
			previous[c.Name] = n
		}
	}
	return Rebalance(desired, names, target, previous), nil
}

// previousReplicas reads spec.replicas of the manifest id in a work spec.
func previousReplicas(spec *workv1.ManifestWorkSpec, id manifestID) (int64, bool) {
	if spec == nil {
		return 0, false
	}
	ms, err := decodeManifests(spec.Workload.Manifests)
	if err != nil {
		return 0, false
	}
	for _, m := range ms {
		if m.id != id {
			continue
		}
		var obj struct {
			Spec struct {
				Replicas *int64 `json:"replicas"`
			} `json:"spec"`
		}
		if json.Unmarshal(m.raw, &obj) != nil || obj.Spec.Replicas == nil {
			return 0, false
		}
		return *obj.Spec.Replicas, true
	}
	return 0, false
}

// podRequests sums the containers' requests (init containers run before
// them: each init container's request counts when larger).
func podRequests(spec corev1.PodSpec) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range spec.Containers {
		for name, q := range c.Resources.Requests {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	for _, c := range spec.InitContainers {
		for name, q := range c.Resources.Requests {
			if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
				out[name] = q.DeepCopy()
			}
		}
	}
	return out
}

// decodeObject decodes a JSON object keeping numbers exact (json.Number: an
// int64 over 2^53 survives the render).
func decodeObject(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, err
	}
	return obj, nil
}
