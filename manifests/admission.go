package manifests

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

//go:embed admission
var admissionFS embed.FS

// AdmissionPrefix starts the name of every ValidatingAdmissionPolicy and
// ValidatingAdmissionPolicyBinding Flotilla installs.
const AdmissionPrefix = "flotilla-"

// Admission is the admission policies of one or more CRD sets: the bounds the
// OCM CRDs (copied verbatim from open-cluster-management.io/api) do not carry,
// enforced by the apiserver itself, so they hold while no hub process runs.
type Admission struct {
	Policies []*admissionregistrationv1.ValidatingAdmissionPolicy
	Bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

// AdmissionPolicies decodes the admission policies and bindings of the named
// CRD sets (manifests/admission/<set>/*.yaml, in file-name order). A set
// without a folder there has none (its CRDs carry their own bounds).
func AdmissionPolicies(sets ...string) (*Admission, error) {
	out := &Admission{}
	for _, set := range sets {
		dir := path.Join("admission", set)
		entries, err := fs.ReadDir(admissionFS, dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("admission set %q: %w", set, err)
		}
		var names []string
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".yaml") {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		for _, name := range names {
			file := path.Join(dir, name)
			data, err := admissionFS.ReadFile(file)
			if err != nil {
				return nil, err
			}
			if err := out.decode(file, data); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// decode adds every YAML document of one file.
func (a *Admission) decode(file string, data []byte) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return fmt.Errorf("%s, document %d: %w", file, i, err)
		}
		var obj metav1.Object
		switch meta.Kind {
		case "ValidatingAdmissionPolicy":
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			obj = p
			a.Policies = append(a.Policies, p)
		case "ValidatingAdmissionPolicyBinding":
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			obj = b
			a.Bindings = append(a.Bindings, b)
		default:
			return fmt.Errorf("%s, document %d: kind %q is not ValidatingAdmissionPolicy or ValidatingAdmissionPolicyBinding", file, i, meta.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return fmt.Errorf("%s, document %d: %w", file, i, err)
		}
		if !strings.HasPrefix(obj.GetName(), AdmissionPrefix) {
			return fmt.Errorf("%s, document %d: %s %q must be named %s...", file, i, meta.Kind, obj.GetName(), AdmissionPrefix)
		}
	}
}

// admissionProbe is a request the admission policies of a set must refuse:
// once the apiserver refuses it, the set's policies are in force.
type admissionProbe struct {
	resource schema.GroupVersionResource
	object   map[string]any
	// refusedBy is the policy whose refusal proves the set is in force.
	refusedBy string
}

// admissionProbes are the probes per CRD set, run as server-side dry runs.
// InstallAdmission creates every policy before any binding, and a probed
// policy's binding last, so once the apiserver (which reads policies and
// bindings each from one ordered watch) enforces the probed policy, it has
// seen all the others too.
var admissionProbes = map[string]admissionProbe{
	HubCRDs: {
		resource:  schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1beta1", Resource: "placements"},
		refusedBy: AdmissionPrefix + "placements",
		object: map[string]any{
			"apiVersion": "cluster.open-cluster-management.io/v1beta1",
			"kind":       "Placement",
			"metadata":   map[string]any{"name": "flotilla-admission-probe", "namespace": metav1.NamespaceDefault},
			"spec":       map[string]any{"numberOfClusters": int64(-1)},
		},
	},
}

// InstallAdmission creates or updates the admission policies and bindings of
// the named CRD sets (their CRDs must be installed) and waits until the
// apiserver enforces them. Sets without policies are skipped.
func InstallAdmission(ctx context.Context, cfg *rest.Config, sets ...string) error {
	a, err := AdmissionPolicies(sets...)
	if err != nil {
		return err
	}
	if len(a.Policies) == 0 && len(a.Bindings) == 0 {
		return nil
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	policies := client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	for _, p := range a.Policies {
		existing, err := policies.Get(ctx, p.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = policies.Create(ctx, p, metav1.CreateOptions{})
		case err == nil:
			p.ResourceVersion = existing.ResourceVersion
			_, err = policies.Update(ctx, p, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("install ValidatingAdmissionPolicy %s: %w%s", p.Name, err, admissionHint(err))
		}
	}
	probed := map[string]bool{}
	for _, set := range sets {
		if p, ok := admissionProbes[set]; ok {
			probed[p.refusedBy] = true
		}
	}
	ordered := slices.Clone(a.Bindings)
	sort.SliceStable(ordered, func(i, j int) bool { return !probed[ordered[i].Spec.PolicyName] && probed[ordered[j].Spec.PolicyName] })
	bindings := client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	for _, b := range ordered {
		existing, err := bindings.Get(ctx, b.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = bindings.Create(ctx, b, metav1.CreateOptions{})
		case err == nil:
			b.ResourceVersion = existing.ResourceVersion
			_, err = bindings.Update(ctx, b, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("install ValidatingAdmissionPolicyBinding %s: %w", b.Name, err)
		}
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, set := range sets {
		probe, ok := admissionProbes[set]
		if !ok {
			continue
		}
		if err := waitEnforced(ctx, dyn, probe); err != nil {
			return fmt.Errorf("admission policies of the %s CRDs: %w", set, err)
		}
	}
	return nil
}

// waitEnforced dry-runs probe until the apiserver refuses it by its policy.
func waitEnforced(ctx context.Context, dyn dynamic.Interface, probe admissionProbe) error {
	obj := &unstructured.Unstructured{Object: probe.object}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(probe.resource).Namespace(obj.GetNamespace()).
			Create(ctx, obj.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		last = err
		return err != nil && apierrors.IsInvalid(err) && strings.Contains(err.Error(), "'"+probe.refusedBy+"'"), nil
	})
	if err != nil {
		return fmt.Errorf("policy %s not in force after a minute (last answer to a probe it must refuse: %v)", probe.refusedBy, last)
	}
	return nil
}

// admissionHint explains a refusal that means the apiserver is too old.
func admissionHint(err error) string {
	if apierrors.IsNotFound(err) {
		return " (ValidatingAdmissionPolicy admissionregistration.k8s.io/v1 needs Kubernetes 1.30 or later)"
	}
	return ""
}
