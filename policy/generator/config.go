package generator

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// APIVersion and Kind identify a PolicyGenerator configuration.
const (
	APIVersion = "policy.open-cluster-management.io/v1"
	Kind       = "PolicyGenerator"
)

// Config is a PolicyGenerator configuration as written. Booleans and the
// interval and message strings are pointers so that "not set" (inherit the
// default) differs from an explicit false or "".
type Config struct {
	APIVersion               string            `yaml:"apiVersion"`
	Kind                     string            `yaml:"kind"`
	Metadata                 Metadata          `yaml:"metadata"`
	PlacementBindingDefaults BindingDefaults   `yaml:"placementBindingDefaults"`
	PolicyDefaults           PolicyDefaults    `yaml:"policyDefaults"`
	PolicySetDefaults        PolicySetDefaults `yaml:"policySetDefaults"`
	Policies                 []PolicyConfig    `yaml:"policies"`
	PolicySets               []PolicySetConfig `yaml:"policySets"`

	// File is where the configuration was read from, for messages.
	File string `yaml:"-"`
	// BaseDir is the directory manifest and placement paths are relative to,
	// and must stay inside.
	BaseDir string `yaml:"-"`
}

// Metadata names the configuration.
type Metadata struct {
	Name        string            `yaml:"name"`
	Annotations map[string]string `yaml:"annotations"`
}

// BindingDefaults names the PlacementBinding of a placement shared by several
// policies or policy sets.
type BindingDefaults struct {
	Name string `yaml:"name"`
}

// PolicyOptions are the options of a Policy, in policyDefaults and per policy.
type PolicyOptions struct {
	Categories                     []string           `yaml:"categories"`
	Controls                       []string           `yaml:"controls"`
	Standards                      []string           `yaml:"standards"`
	Description                    string             `yaml:"description"`
	CopyPolicyMetadata             *bool              `yaml:"copyPolicyMetadata"`
	Dependencies                   []Dependency       `yaml:"dependencies"`
	ExtraDependencies              []Dependency       `yaml:"extraDependencies"`
	Placement                      PlacementConfig    `yaml:"placement"`
	ConsolidateManifests           *bool              `yaml:"consolidateManifests"`
	OrderManifests                 *bool              `yaml:"orderManifests"`
	Disabled                       *bool              `yaml:"disabled"`
	IgnorePending                  *bool              `yaml:"ignorePending"`
	InformGatekeeperPolicies       *bool              `yaml:"informGatekeeperPolicies"`
	InformKyvernoPolicies          *bool              `yaml:"informKyvernoPolicies"`
	GeneratePolicyPlacement        *bool              `yaml:"generatePolicyPlacement"`
	GeneratePlacementWhenInSet     *bool              `yaml:"generatePlacementWhenInSet"`
	PolicySets                     []string           `yaml:"policySets"`
	PolicyAnnotations              map[string]string  `yaml:"policyAnnotations"`
	PolicyLabels                   map[string]string  `yaml:"policyLabels"`
	ConfigurationPolicyAnnotations map[string]string  `yaml:"configurationPolicyAnnotations"`
	HubTemplateOptions             HubTemplateOptions `yaml:"hubTemplateOptions"`
}

// TemplateOptions are the options of a generated ConfigurationPolicy, in
// policyDefaults, per policy and per manifest.
type TemplateOptions struct {
	RemediationAction      string            `yaml:"remediationAction"`
	Severity               string            `yaml:"severity"`
	ComplianceType         string            `yaml:"complianceType"`
	MetadataComplianceType string            `yaml:"metadataComplianceType"`
	EvaluationInterval     Pair              `yaml:"evaluationInterval"`
	CustomMessage          Pair              `yaml:"customMessage"`
	NamespaceSelector      NamespaceSelector `yaml:"namespaceSelector"`
	ObjectSelector         LabelSelector     `yaml:"objectSelector"`
	PruneObjectBehavior    string            `yaml:"pruneObjectBehavior"`
	RecordDiff             string            `yaml:"recordDiff"`
	RecreateOption         string            `yaml:"recreateOption"`
	// GatekeeperEnforcementAction overrides spec.enforcementAction of
	// Gatekeeper constraints.
	GatekeeperEnforcementAction string `yaml:"gatekeeperEnforcementAction"`
}

// Pair is evaluationInterval or customMessage: a value for the compliant and
// one for the noncompliant state.
type Pair struct {
	Compliant    *string `yaml:"compliant"`
	NonCompliant *string `yaml:"noncompliant"`
}

// HubTemplateOptions is copied to the Policy's spec.hubTemplateOptions.
type HubTemplateOptions struct {
	ServiceAccountName string `yaml:"serviceAccountName" json:"serviceAccountName,omitempty"`
}

// LabelSelector is a Kubernetes label selector whose parts may be unset.
type LabelSelector struct {
	MatchLabels      *map[string]string                 `yaml:"matchLabels"`
	MatchExpressions *[]metav1.LabelSelectorRequirement `yaml:"matchExpressions"`
}

// IsUnset says whether neither part is given.
func (s LabelSelector) IsUnset() bool { return s.MatchLabels == nil && s.MatchExpressions == nil }

// NamespaceSelector is a ConfigurationPolicy's namespaceSelector.
type NamespaceSelector struct {
	LabelSelector `yaml:",inline"`
	Include       []string `yaml:"include"`
	Exclude       []string `yaml:"exclude"`
}

// IsUnset says whether no part is given.
func (s NamespaceSelector) IsUnset() bool {
	return s.Include == nil && s.Exclude == nil && s.LabelSelector.IsUnset()
}

// PlacementConfig says where a policy or policy set goes: a generated
// Placement from a label selector (clusterSelectors and clusterSelector are
// accepted as older spellings of labelSelector), a Placement read from a file
// (placementPath), or one that exists on the hub (placementName).
type PlacementConfig struct {
	LabelSelector    map[string]any `yaml:"labelSelector"`
	ClusterSelectors map[string]any `yaml:"clusterSelectors"`
	ClusterSelector  map[string]any `yaml:"clusterSelector"`
	Name             string         `yaml:"name"`
	PlacementPath    string         `yaml:"placementPath"`
	PlacementName    string         `yaml:"placementName"`

	// placement is the documents of the PlacementPath file, read by Load.
	placement []map[string]any
}

// selector is the label selector the configuration gives, under any of its
// names.
func (p PlacementConfig) selector() map[string]any {
	switch {
	case len(p.LabelSelector) > 0:
		return p.LabelSelector
	case len(p.ClusterSelectors) > 0:
		return p.ClusterSelectors
	default:
		return p.ClusterSelector
	}
}

func (p PlacementConfig) isUnset() bool {
	return len(p.selector()) == 0 && p.PlacementPath == "" && p.PlacementName == ""
}

// Dependency is an object (by default a Policy in the policies' namespace)
// that must reach a compliance state first.
type Dependency struct {
	APIVersion string `yaml:"apiVersion" json:"apiVersion,omitempty"`
	Compliance string `yaml:"compliance" json:"compliance,omitempty"`
	Kind       string `yaml:"kind" json:"kind,omitempty"`
	Name       string `yaml:"name" json:"name"`
	Namespace  string `yaml:"namespace" json:"namespace,omitempty"`
}

// PolicyDefaults apply to every policy unless it says otherwise.
type PolicyDefaults struct {
	PolicyOptions   `yaml:",inline"`
	TemplateOptions `yaml:",inline"`
	// Namespace of every generated object. Required.
	Namespace string `yaml:"namespace"`
	// OrderPolicies makes each policy depend on the one before it.
	OrderPolicies bool `yaml:"orderPolicies"`
}

// PolicyConfig is one entry of policies.
type PolicyConfig struct {
	PolicyOptions   `yaml:",inline"`
	TemplateOptions `yaml:",inline"`
	Name            string     `yaml:"name"`
	Manifests       []Manifest `yaml:"manifests"`
}

// Manifest is one entry of a policy's manifests: a path and the options of
// the templates made from it.
type Manifest struct {
	TemplateOptions   `yaml:",inline"`
	Path              string           `yaml:"path"`
	Name              string           `yaml:"name"`
	Patches           []map[string]any `yaml:"patches"`
	ExtraDependencies []Dependency     `yaml:"extraDependencies"`
	IgnorePending     *bool            `yaml:"ignorePending"`
	OpenAPI           struct {
		Path string `yaml:"path"`
	} `yaml:"openapi"`

	// objects are the manifests read from Path by Load, patched.
	objects []map[string]any
}

// PolicySetDefaults apply to every policy set.
type PolicySetDefaults struct {
	Placement                  PlacementConfig `yaml:"placement"`
	GeneratePolicySetPlacement *bool           `yaml:"generatePolicySetPlacement"`
}

// PolicySetConfig is one entry of policySets.
type PolicySetConfig struct {
	Name                       string          `yaml:"name"`
	Description                string          `yaml:"description"`
	Policies                   []string        `yaml:"policies"`
	Placement                  PlacementConfig `yaml:"placement"`
	GeneratePolicySetPlacement *bool           `yaml:"generatePolicySetPlacement"`
}

// sections names the configuration's Go types as a reader of the YAML knows
// them, for unknown-field messages.
var sections = map[string]string{
	"generator.Config":             "the PolicyGenerator",
	"generator.Metadata":           "metadata",
	"generator.BindingDefaults":    "placementBindingDefaults",
	"generator.PolicyDefaults":     "policyDefaults",
	"generator.PolicySetDefaults":  "policySetDefaults",
	"generator.PolicyConfig":       "a policies entry",
	"generator.PolicySetConfig":    "a policySets entry",
	"generator.Manifest":           "a manifests entry",
	"generator.PlacementConfig":    "placement",
	"generator.Pair":               "evaluationInterval/customMessage",
	"generator.Dependency":         "a dependency",
	"generator.HubTemplateOptions": "hubTemplateOptions",
	"generator.NamespaceSelector":  "namespaceSelector",
	"generator.LabelSelector":      "a label selector",
}

// hints follow the unknown-field message of fields older generators took.
var hints = map[string]string{
	"placementRulePath": " (PlacementRule is deprecated in OCM and Flotilla does not serve it: use placementPath with a Placement)",
	"placementRuleName": " (PlacementRule is deprecated in OCM and Flotilla does not serve it: use placementName with a Placement)",
}

var unknownField = regexp.MustCompile(`field (\S+) not found in type (\S+)`)

// Parse decodes one PolicyGenerator configuration strictly: an unknown field
// is an error naming the field, its section, the line and file.
func Parse(data []byte, file string) (*Config, error) {
	cfg := &Config{File: file}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			msgs := make([]string, len(te.Errors))
			for i, m := range te.Errors {
				msgs[i] = unknownField.ReplaceAllStringFunc(m, func(s string) string {
					sub := unknownField.FindStringSubmatch(s)
					sec := sections[sub[2]]
					if sec == "" {
						sec = sub[2]
					}
					return fmt.Sprintf("unknown field %q in %s%s", sub[1], sec, hints[sub[1]])
				})
			}
			return nil, fmt.Errorf("%s: invalid PolicyGenerator: %s", file, strings.Join(msgs, "; "))
		}
		return nil, fmt.Errorf("%s: invalid PolicyGenerator: %w", file, err)
	}
	if cfg.APIVersion != APIVersion || cfg.Kind != Kind {
		return nil, fmt.Errorf("%s: apiVersion/kind is %q/%q, want %s/%s", file, cfg.APIVersion, cfg.Kind, APIVersion, Kind)
	}
	return cfg, nil
}
