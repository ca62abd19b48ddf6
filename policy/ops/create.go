package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/propagator"
)

// MaxFileSize is the largest policy file Create reads.
const MaxFileSize = 4 << 20

// CreateOptions says what Create makes. Every field documents its default.
type CreateOptions struct {
	// Name and Namespace of the Policy. Name is required; Namespace defaults to "default".
	Name, Namespace string
	// File holds one or more ConfigurationPolicy, CertificatePolicy or
	// OperatorPolicy documents (YAML or JSON); "-"
	// reads Stdin. Required.
	File  string
	Stdin io.Reader
	// Standards, Categories and Controls become the policy's comma-separated
	// classification annotations. Default: none.
	Standards, Categories, Controls []string
	// RemediationAction, when set (inform or enforce), overrides the templates'.
	// Default "": each template's own.
	RemediationAction string
	// Placement, when set, is bound by a PlacementBinding named
	// "binding-<Name>". Default "": the policy is not bound.
	Placement string
}

// Created is what Create made.
type Created struct {
	Policy  *policyv1.Policy           `json:"policy"`
	Binding *policyv1.PlacementBinding `json:"binding,omitempty"`
}

// Build makes the Policy (and binding) from opts and the file's content. It is pure.
func Build(opts CreateOptions, content []byte) (*Created, error) {
	if opts.Name == "" {
		return nil, errors.New("a policy name is required")
	}
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	if key := propagator.RootKey(opts.Namespace, opts.Name); len(key) > propagator.MaxRootKeyLength {
		return nil, fmt.Errorf("namespace and name %q are %d characters; replicas need at most %d", key, len(key), propagator.MaxRootKeyLength)
	}
	switch strings.ToLower(opts.RemediationAction) {
	case "", "inform", "enforce":
	default:
		return nil, fmt.Errorf("--remediation-action %q: want inform or enforce", opts.RemediationAction)
	}
	templates, err := readTemplates(content, opts.File)
	if err != nil {
		return nil, err
	}
	p := &policyv1.Policy{
		TypeMeta:   metav1.TypeMeta{APIVersion: policyv1.GroupVersion.String(), Kind: "Policy"},
		ObjectMeta: metav1.ObjectMeta{Name: opts.Name, Namespace: opts.Namespace, Annotations: map[string]string{}},
		Spec: policyv1.PolicySpec{RemediationAction: policyv1.RemediationAction(strings.ToLower(opts.RemediationAction)),
			PolicyTemplates: templates},
	}
	for ann, vals := range map[string][]string{policyv1.StandardsAnnotation: opts.Standards,
		policyv1.CategoriesAnnotation: opts.Categories, policyv1.ControlsAnnotation: opts.Controls} {
		if len(vals) > 0 {
			p.Annotations[ann] = strings.Join(vals, ",")
		}
	}
	out := &Created{Policy: p}
	if opts.Placement != "" {
		out.Binding = &policyv1.PlacementBinding{
			TypeMeta:     metav1.TypeMeta{APIVersion: policyv1.GroupVersion.String(), Kind: "PlacementBinding"},
			ObjectMeta:   metav1.ObjectMeta{Name: "binding-" + opts.Name, Namespace: opts.Namespace},
			PlacementRef: policyv1.PlacementSubject{APIGroup: propagator.PlacementGroup, Kind: "Placement", Name: opts.Placement},
			Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: "Policy", Name: opts.Name}},
		}
	}
	return out, nil
}

// templateKinds are the policy kinds a policy file may hold.
var templateKinds = map[string]bool{"ConfigurationPolicy": true, "CertificatePolicy": true, "OperatorPolicy": true}

// readTemplates decodes the ConfigurationPolicy, CertificatePolicy and
// OperatorPolicy documents of a file.
func readTemplates(content []byte, name string) ([]*policyv1.PolicyTemplate, error) {
	reader := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(content), 4096)
	var out []*policyv1.PolicyTemplate
	for doc := 1; ; doc++ {
		var obj map[string]any
		if err := reader.Decode(&obj); err != nil {
			if err == io.EOF {
				break
			}
			return nil, fmt.Errorf("%s: document %d: %w", name, doc, err)
		}
		if obj == nil {
			continue
		}
		u := unstructured.Unstructured{Object: obj}
		if !templateKinds[u.GetKind()] || u.GroupVersionKind().Group != policyv1.GroupName {
			return nil, fmt.Errorf("%s: document %d is a %s %q, not a %s ConfigurationPolicy, CertificatePolicy or OperatorPolicy", name, doc, u.GetKind(), u.GetAPIVersion(), policyv1.GroupName)
		}
		if u.GetName() == "" {
			return nil, fmt.Errorf("%s: document %d: the %s has no metadata.name", name, doc, u.GetKind())
		}
		raw, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		out = append(out, &policyv1.PolicyTemplate{ObjectDefinition: runtime.RawExtension{Raw: raw}})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no ConfigurationPolicy, CertificatePolicy or OperatorPolicy", name)
	}
	return out, nil
}

// ReadFile reads a policy file ("-" for stdin) of at most MaxFileSize bytes.
func ReadFile(path string, stdin io.Reader) ([]byte, error) {
	var r io.Reader
	if path == "-" {
		r = stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s is larger than %d MiB", path, MaxFileSize>>20)
	}
	return data, nil
}

// Create reads opts.File and creates the Policy and its PlacementBinding on the hub.
func Create(ctx context.Context, c client.Client, opts CreateOptions) (*Created, error) {
	if opts.File == "" {
		return nil, errors.New("-f FILE is required: a file of ConfigurationPolicies")
	}
	content, err := ReadFile(opts.File, opts.Stdin)
	if err != nil {
		return nil, err
	}
	out, err := Build(opts, content)
	if err != nil {
		return nil, err
	}
	if err := c.Create(ctx, out.Policy); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("policy %s/%s already exists", out.Policy.Namespace, out.Policy.Name)
		}
		return nil, fmt.Errorf("create policy %s/%s: %w", out.Policy.Namespace, out.Policy.Name, err)
	}
	if out.Binding != nil {
		if err := c.Create(ctx, out.Binding); err != nil {
			return out, fmt.Errorf("policy %s/%s created, but its PlacementBinding %s not: %w", out.Policy.Namespace, out.Policy.Name, out.Binding.Name, err)
		}
	}
	return out, nil
}
