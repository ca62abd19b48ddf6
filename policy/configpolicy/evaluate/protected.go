package evaluate

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/hubtemplate"
)

// protected tells whether the policy's object templates hold values the hub
// encrypted (`{{hub ... | protect hub}}`, `$ocm_encrypted:`).
func protected(p *policyv1.ConfigurationPolicy) bool {
	if hubtemplate.HasProtected([]byte(p.Spec.ObjectTemplatesRaw)) {
		return true
	}
	for i := range p.Spec.ObjectTemplates {
		if hubtemplate.HasProtected(p.Spec.ObjectTemplates[i].ObjectDefinition.Raw) {
			return true
		}
	}
	return false
}

// decrypted returns a copy of p whose object templates hold the plain values,
// decrypted in memory with the cluster's key (Secret policy-encryption-key in
// the policy's namespace, which the governance framework agent keeps equal to
// the hub's) and the policy's initialization vector (annotation
// policy.open-cluster-management.io/encryption-iv), as OCM's engine does: the
// ConfigurationPolicy object on the cluster keeps the encrypted text, so who
// may read policies but not Secrets never sees the value.
func decrypted(p *policyv1.ConfigurationPolicy, c Cluster) (*policyv1.ConfigurationPolicy, error) {
	iv, err := base64.StdEncoding.DecodeString(p.GetAnnotations()[hubtemplate.IVAnnotation])
	if err != nil || len(iv) != hubtemplate.IVSize {
		return nil, fmt.Errorf("the policy holds protected values but no valid %s annotation", hubtemplate.IVAnnotation)
	}
	secret, err := reader{c}.Get(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, p.Namespace, hubtemplate.KeySecret)
	if err != nil {
		return nil, fmt.Errorf("read the encryption key %s/%s: %w", p.Namespace, hubtemplate.KeySecret, err)
	}
	if secret == nil {
		return nil, fmt.Errorf("the encryption key %s/%s does not exist", p.Namespace, hubtemplate.KeySecret)
	}
	encoded, _, _ := unstructured.NestedString(secret.Object, "data", "key")
	key, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("the encryption key %s/%s holds no 256-bit key in data.key", p.Namespace, hubtemplate.KeySecret)
	}
	out := p.DeepCopy()
	if raw := out.Spec.ObjectTemplatesRaw; hubtemplate.HasProtected([]byte(raw)) {
		plain, err := hubtemplate.DecryptAll(raw, key, iv)
		if err != nil {
			return nil, fmt.Errorf("object-templates-raw: %w", err)
		}
		out.Spec.ObjectTemplatesRaw = plain.(string)
	}
	for i := range out.Spec.ObjectTemplates {
		def := &out.Spec.ObjectTemplates[i].ObjectDefinition
		if !hubtemplate.HasProtected(def.Raw) {
			continue
		}
		var obj any
		if err := json.Unmarshal(def.Raw, &obj); err != nil {
			return nil, fmt.Errorf("object-templates[%d]: %w", i, err)
		}
		plain, err := hubtemplate.DecryptAll(obj, key, iv)
		if err != nil {
			return nil, fmt.Errorf("object-templates[%d]: %w", i, err)
		}
		if def.Raw, err = json.Marshal(plain); err != nil {
			return nil, err
		}
		def.Object = nil
	}
	return out, nil
}
