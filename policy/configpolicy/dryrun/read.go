package dryrun

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/fileinput"
	"flotilla.dev/flotilla/manifests"
	"flotilla.dev/flotilla/policy/gatekeeper"
)

// readDocuments decodes every YAML or JSON document of data; `kind: List`
// documents are flattened into their items. Empty documents are skipped.
func readDocuments(name string, data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, i, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("%s: document %d: has no apiVersion or kind", name, i)
		}
		if strings.HasSuffix(u.GetKind(), "List") {
			if items, ok := m["items"].([]any); ok {
				for j, it := range items {
					im, ok := it.(map[string]any)
					if !ok {
						return nil, fmt.Errorf("%s: document %d: items[%d] is not an object", name, i, j)
					}
					item := &unstructured.Unstructured{Object: im}
					if item.GetKind() == "" || item.GetAPIVersion() == "" {
						return nil, fmt.Errorf("%s: document %d: items[%d] has no apiVersion or kind", name, i, j)
					}
					out = append(out, item)
				}
				continue
			}
		}
		out = append(out, u)
	}
}

// ReadObjects reads the objects in paths: files, or folders searched
// recursively for *.yaml, *.yml and *.json. "-" reads standard input. Each
// file may hold at most fileinput.ManifestLimit bytes, all of them together
// fileinput.ManifestTotalLimit.
func ReadObjects(stdin io.Reader, paths ...string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	budget := &fileinput.Budget{Limit: fileinput.ManifestTotalLimit, What: "object files"}
	for _, p := range paths {
		files, err := expand(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := readFile(stdin, f, "object files")
			if err != nil {
				return nil, err
			}
			if err := budget.Take(f, int64(len(data))); err != nil {
				return nil, err
			}
			objs, err := readDocuments(f, data)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
	}
	return out, nil
}

// readFile reads a file, or standard input for "-", up to
// fileinput.ManifestLimit bytes (what names the kind of file in the error).
func readFile(stdin io.Reader, name, what string) ([]byte, error) {
	if name == "-" {
		return fileinput.Read(stdin, "standard input", fileinput.ManifestLimit, what)
	}
	return fileinput.ReadFile(name, fileinput.ManifestLimit, what)
}

func expand(p string) ([]string, error) {
	if p == "-" {
		return []string{p}, nil
	}
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	var files []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			if !d.IsDir() {
				files = append(files, path)
			}
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// Input is what a policy file holds.
type Input struct {
	// Policies are the ConfigurationPolicies.
	Policies []*policyv1.ConfigurationPolicy
	// Certificates are the CertificatePolicies.
	Certificates []*policyv1.CertificatePolicy
	// Templates and Constraints are Gatekeeper ConstraintTemplates and
	// constraints, audited by Flotilla's own Rego engine.
	Templates, Constraints []*unstructured.Unstructured
	// Warnings name what was skipped or ignored.
	Warnings []string
}

// ReadPolicies reads the ConfigurationPolicies of a file (see ReadInput); a
// file without any is an error.
func ReadPolicies(stdin io.Reader, path string) (policies []*policyv1.ConfigurationPolicy, warnings []string, err error) {
	in, err := ReadInput(stdin, path)
	if err != nil {
		return nil, nil, err
	}
	if len(in.Policies) == 0 {
		return nil, in.Warnings, fmt.Errorf("%s holds no ConfigurationPolicy (directly or in a Policy's policy-templates)", path)
	}
	return in.Policies, in.Warnings, nil
}

// ReadInput reads the policies of a file: ConfigurationPolicies and
// Gatekeeper ConstraintTemplates and constraints, top-level or inside OCM
// Policies' spec.policy-templates (a Policy's remediationAction, when set,
// overrides its ConfigurationPolicies', as on a cluster; constraints keep
// their enforcementAction). Other kinds are ignored. A file with none of
// these is an error. Warnings name what was skipped or ignored: other policy
// kinds inside a Policy, and fields the ConfigurationPolicy API does not have.
func ReadInput(stdin io.Reader, path string) (*Input, error) {
	data, err := readFile(stdin, path, "policy files")
	if err != nil {
		return nil, err
	}
	docs, err := readDocuments(path, data)
	if err != nil {
		return nil, err
	}
	in := &Input{}
	warn := func(format string, args ...any) {
		in.Warnings = append(in.Warnings, path+": "+fmt.Sprintf(format, args...))
	}
	for _, d := range docs {
		switch {
		case d.GetKind() == "ConfigurationPolicy":
			p, err := toPolicy(d.Object, func(w string) { warn("ConfigurationPolicy %q: %s", d.GetName(), w) })
			if err != nil {
				return nil, fmt.Errorf("%s: ConfigurationPolicy %q: %w", path, d.GetName(), err)
			}
			in.Policies = append(in.Policies, p)
		case d.GetKind() == "CertificatePolicy":
			p, err := toCertPolicy(d.Object)
			if err != nil {
				return nil, fmt.Errorf("%s: CertificatePolicy %q: %w", path, d.GetName(), err)
			}
			in.Certificates = append(in.Certificates, p)
		case gatekeeper.IsTemplate(d):
			in.Templates = append(in.Templates, d)
		case gatekeeper.IsConstraint(d):
			in.Constraints = append(in.Constraints, d)
		case d.GetKind() == "Policy" && d.GroupVersionKind().Group == policyv1.GroupName:
			action, _, _ := unstructured.NestedString(d.Object, "spec", "remediationAction")
			if err := checkRemediationAction(action); err != nil {
				return nil, fmt.Errorf("%s: Policy %q: %w", path, d.GetName(), err)
			}
			templates, _, _ := unstructured.NestedSlice(d.Object, "spec", "policy-templates")
			for j, t := range templates {
				tm, _ := t.(map[string]any)
				def, _ := tm["objectDefinition"].(map[string]any)
				if def != nil {
					if u := (&unstructured.Unstructured{Object: def}); gatekeeper.IsTemplate(u) {
						in.Templates = append(in.Templates, u)
						continue
					} else if gatekeeper.IsConstraint(u) {
						in.Constraints = append(in.Constraints, u)
						continue
					}
				}
				if def != nil && def["kind"] == "CertificatePolicy" {
					p, err := toCertPolicy(def)
					if err != nil {
						return nil, fmt.Errorf("%s: Policy %q policy-templates[%d]: %w", path, d.GetName(), j, err)
					}
					if p.Namespace == "" {
						p.Namespace = d.GetNamespace()
					}
					in.Certificates = append(in.Certificates, p)
					continue
				}
				if def == nil || def["kind"] != "ConfigurationPolicy" {
					warn("Policy %q policy-templates[%d]: kind %v is not a ConfigurationPolicy, a CertificatePolicy or a Gatekeeper object; skipped", d.GetName(), j, def["kind"])
					continue
				}
				p, err := toPolicy(def, func(w string) { warn("Policy %q policy-templates[%d]: %s", d.GetName(), j, w) })
				if err != nil {
					return nil, fmt.Errorf("%s: Policy %q policy-templates[%d]: %w", path, d.GetName(), j, err)
				}
				if action != "" {
					p.Spec.RemediationAction = policyv1.RemediationAction(action)
				}
				if p.Namespace == "" {
					p.Namespace = d.GetNamespace()
				}
				in.Policies = append(in.Policies, p)
			}
		}
	}
	if len(in.Policies) == 0 && len(in.Certificates) == 0 && len(in.Templates) == 0 && len(in.Constraints) == 0 {
		return nil, fmt.Errorf("%s holds no ConfigurationPolicy, no CertificatePolicy and no Gatekeeper ConstraintTemplate or constraint (directly or in a Policy's policy-templates)", path)
	}
	return in, nil
}

// toPolicy decodes a ConfigurationPolicy. Fields the API does not know are
// ignored, as the CRD would drop them, and reported through warn.
func toPolicy(obj map[string]any, warn func(string)) (*policyv1.ConfigurationPolicy, error) {
	// What the CRD schema refuses on a cluster in the policy's own fields
	// (remediationAction: destroy, ...) is refused here too. Object templates
	// are left to the engine, which reports a broken one on that template alone.
	if err := manifests.Validate(withoutTemplates(obj)); err != nil {
		return nil, err
	}
	p := &policyv1.ConfigurationPolicy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj, p, true); err != nil {
		if !strings.Contains(err.Error(), "unknown field") {
			return nil, err
		}
		warn(err.Error() + " (ignored)")
		p = &policyv1.ConfigurationPolicy{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, p); err != nil {
			return nil, err
		}
	}
	if p.Spec.RemediationAction == "" {
		p.Spec.RemediationAction = "inform"
	}
	return p, nil
}

// toCertPolicy decodes a CertificatePolicy, refusing what its CRD's schema
// refuses on a cluster (an invalid duration, an unknown severity), with the
// apiserver's message.
func toCertPolicy(obj map[string]any) (*policyv1.CertificatePolicy, error) {
	u := &unstructured.Unstructured{Object: obj}
	if u.GetAPIVersion() == "" {
		u = u.DeepCopy()
		u.SetAPIVersion(policyv1.GroupVersion.String())
	}
	if err := manifests.Validate(u); err != nil {
		return nil, err
	}
	p := &policyv1.CertificatePolicy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
		return nil, err
	}
	return p, nil
}

// withoutTemplates is obj without spec.object-templates (a shallow copy).
func withoutTemplates(obj map[string]any) *unstructured.Unstructured {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	if spec, ok := obj["spec"].(map[string]any); ok {
		trimmed := make(map[string]any, len(spec))
		for k, v := range spec {
			if k != "object-templates" {
				trimmed[k] = v
			}
		}
		out["spec"] = trimmed
	}
	return &unstructured.Unstructured{Object: out}
}

// checkRemediationAction refuses a Policy's remediationAction that would
// override its templates' with a value their CRD refuses ("" overrides nothing).
func checkRemediationAction(action string) error {
	if action == "" {
		return nil
	}
	return manifests.Validate(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": policyv1.GroupVersion.String(), "kind": "ConfigurationPolicy",
		"spec": map[string]any{"remediationAction": action},
	}})
}
