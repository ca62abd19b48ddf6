package hubtemplate

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"text/template"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/yaml"
)

// Delimiters of hub templates.
const (
	StartDelim = "{{hub"
	StopDelim  = "hub}}"
	// ProtectedPrefix starts every value protect encrypted.
	ProtectedPrefix = "$ocm_encrypted:"
	// IVSize is the length of an initialization vector in bytes.
	IVSize = 16
)

// Where the per-cluster key and the per-replica initialization vector live,
// as Open Cluster Management keeps them: Secret KeySecret (data "key", 32
// bytes) in the cluster namespace on the hub (and, copied by the framework
// agent, on the managed cluster), and the replica's IVAnnotation (base64).
const (
	KeySecret    = "policy-encryption-key"
	IVAnnotation = "policy.open-cluster-management.io/encryption-iv"
)

// ErrorAnnotation on a policy template carries its hub template error; the
// template is then delivered unresolved and the spoke reports it NonCompliant.
const ErrorAnnotation = "policy.open-cluster-management.io/hub-templates-error"

// Ref is an object a template read.
type Ref struct {
	APIVersion, Kind, Namespace, Name string
}

// Source reads objects for the template functions. Get returns a NotFound
// error for an object that does not exist.
type Source interface {
	Get(ctx context.Context, apiVersion, kind, namespace, name string) (*unstructured.Unstructured, error)
}

// Options are the inputs of one resolution.
type Options struct {
	// Namespace is the root policy's namespace: the only one templates may read.
	Namespace string
	// Cluster is the managed cluster the replica is for.
	Cluster *clusterv1.ManagedCluster
	// Source reads Secrets, ConfigMaps and lookup objects.
	Source Source
	// Key (32 bytes) and IV (IVSize bytes) encrypt protected values; when Key
	// is nil, fromSecret and protect fail.
	Key, IV []byte
}

// HasTemplates reports whether raw holds a hub template.
func HasTemplates(raw []byte) bool { return bytes.Contains(raw, []byte(StartDelim)) }

// NeedsKey reports whether raw uses fromSecret or protect in a hub template.
func NeedsKey(raw []byte) bool {
	return HasTemplates(raw) && (bytes.Contains(raw, []byte("fromSecret")) || bytes.Contains(raw, []byte("protect")))
}

// Resolve resolves the hub templates of the JSON object raw for opts.Cluster
// and returns the resolved JSON and the objects read (also on error, so that
// a fix to a missing object triggers a new resolution).
func Resolve(ctx context.Context, raw []byte, opts Options) ([]byte, []Ref, error) {
	if !HasTemplates(raw) {
		return raw, nil, nil
	}
	r := &resolver{ctx: ctx, opts: opts}
	r.refs = append(r.refs, Ref{APIVersion: "cluster.open-cluster-management.io/v1", Kind: "ManagedCluster", Name: opts.Cluster.Name})
	text, err := yaml.JSONToYAML(raw)
	if err != nil {
		return nil, r.refs, fmt.Errorf("the template is not valid JSON: %w", err)
	}
	tmpl, err := template.New("hub").Delims(StartDelim, StopDelim).Option("missingkey=zero").Funcs(template.FuncMap{
		"fromSecret":       r.fromSecret,
		"fromConfigMap":    r.fromConfigMap,
		"fromClusterClaim": r.fromClusterClaim,
		"lookup":           r.lookup,
		"protect":          r.protect,
		"base64enc":        func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) },
		"base64dec": func(s string) (string, error) {
			b, err := base64.StdEncoding.DecodeString(s)
			return string(b), err
		},
	}).Parse(string(text))
	if err != nil {
		return nil, r.refs, err
	}
	labels := opts.Cluster.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, map[string]any{"ManagedClusterName": opts.Cluster.Name, "ManagedClusterLabels": labels}); err != nil {
		return nil, r.refs, unwrapExec(err)
	}
	resolved, err := yaml.YAMLToJSON(out.Bytes())
	if err != nil {
		return nil, r.refs, fmt.Errorf("the resolved template is not valid YAML: %w", err)
	}
	return resolved, r.refs, nil
}

// unwrapExec returns a template function's own error (which names the
// function and the object), or text/template's error without its prefix.
func unwrapExec(err error) error {
	var ee template.ExecError
	if !errors.As(err, &ee) {
		return err
	}
	if inner := errors.Unwrap(ee.Err); inner != nil {
		return inner
	}
	return errors.New(strings.TrimPrefix(ee.Error(), "template: "))
}

type resolver struct {
	ctx  context.Context
	opts Options
	refs []Ref
}

func (r *resolver) namespace(fn, ns string) (string, error) {
	if ns == "" {
		return r.opts.Namespace, nil
	}
	if ns != r.opts.Namespace {
		return "", fmt.Errorf("%s: namespace %q is not allowed: hub templates only read the policy's namespace %q", fn, ns, r.opts.Namespace)
	}
	return ns, nil
}

func (r *resolver) get(fn, apiVersion, kind, ns, name string) (*unstructured.Unstructured, error) {
	r.refs = append(r.refs, Ref{APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: name})
	return r.opts.Source.Get(r.ctx, apiVersion, kind, ns, name)
}

func (r *resolver) fromSecret(ns, name, key string) (string, error) {
	ns, err := r.namespace("fromSecret", ns)
	if err != nil {
		return "", err
	}
	o, err := r.get("fromSecret", "v1", "Secret", ns, name)
	if err != nil {
		return "", fmt.Errorf("fromSecret: Secret %s/%s: %w", ns, name, err)
	}
	v, ok, _ := unstructured.NestedString(o.Object, "data", key)
	if !ok {
		return "", fmt.Errorf("fromSecret: Secret %s/%s has no key %q", ns, name, key)
	}
	return r.protect(v)
}

func (r *resolver) fromConfigMap(ns, name, key string) (string, error) {
	ns, err := r.namespace("fromConfigMap", ns)
	if err != nil {
		return "", err
	}
	o, err := r.get("fromConfigMap", "v1", "ConfigMap", ns, name)
	if err != nil {
		return "", fmt.Errorf("fromConfigMap: ConfigMap %s/%s: %w", ns, name, err)
	}
	v, ok, _ := unstructured.NestedString(o.Object, "data", key)
	if !ok {
		return "", fmt.Errorf("fromConfigMap: ConfigMap %s/%s has no key %q", ns, name, key)
	}
	return v, nil
}

func (r *resolver) fromClusterClaim(name string) (string, error) {
	for _, c := range r.opts.Cluster.Status.ClusterClaims {
		if c.Name == name {
			return c.Value, nil
		}
	}
	return "", fmt.Errorf("fromClusterClaim: ManagedCluster %s reports no claim %q", r.opts.Cluster.Name, name)
}

func (r *resolver) lookup(apiVersion, kind, ns, name string) (map[string]any, error) {
	if kind == "ManagedCluster" {
		if name != r.opts.Cluster.Name {
			return nil, fmt.Errorf("lookup: ManagedCluster %q is not allowed: hub templates only read the replica's own cluster %q", name, r.opts.Cluster.Name)
		}
		ns = ""
	} else {
		var err error
		if ns, err = r.namespace("lookup", ns); err != nil {
			return nil, err
		}
	}
	o, err := r.get("lookup", apiVersion, kind, ns, name)
	if apierrors.IsNotFound(err) {
		return map[string]any{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lookup: %s %s/%s: %w", kind, ns, name, err)
	}
	return o.Object, nil
}

// protect encrypts value with AES-CBC (PKCS #7 padding) under the cluster's
// key and the replica's IV. An empty value stays empty, and a value protect
// already encrypted (fromSecret's) is not encrypted twice, so
// `fromSecret ... | protect` means what it says.
func (r *resolver) protect(value string) (string, error) {
	if value == "" || strings.HasPrefix(value, ProtectedPrefix) {
		return value, nil
	}
	if r.opts.Key == nil {
		return "", errors.New("protect: no encryption key for the cluster")
	}
	enc, err := Encrypt(r.opts.Key, r.opts.IV, []byte(value))
	if err != nil {
		return "", fmt.Errorf("protect: %w", err)
	}
	return ProtectedPrefix + base64.StdEncoding.EncodeToString(enc), nil
}

// Encrypt is AES-CBC with PKCS #7 padding.
func Encrypt(key, iv, plain []byte) ([]byte, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	if len(iv) != IVSize {
		return nil, fmt.Errorf("initialization vector must be %d bytes, not %d", IVSize, len(iv))
	}
	pad := aes.BlockSize - len(plain)%aes.BlockSize
	buf := append(append([]byte(nil), plain...), bytes.Repeat([]byte{byte(pad)}, pad)...)
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(buf, buf)
	return buf, nil
}

// Decrypt reverses Encrypt (for tests and the spoke).
func Decrypt(key, iv, enc []byte) ([]byte, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	if len(iv) != IVSize || len(enc) == 0 || len(enc)%aes.BlockSize != 0 {
		return nil, errors.New("invalid ciphertext or initialization vector")
	}
	buf := append([]byte(nil), enc...)
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(buf, buf)
	pad := int(buf[len(buf)-1])
	if pad == 0 || pad > aes.BlockSize || pad > len(buf) {
		return nil, errors.New("invalid padding")
	}
	return buf[:len(buf)-pad], nil
}
