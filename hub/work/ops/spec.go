package ops

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/internal/workrules"
)

// SpecOptions are the ManifestWork spec fields the CLI sets besides the
// manifests. The zero value leaves them all unset.
type SpecOptions struct {
	// Executor is "namespace/name" of a ServiceAccount on the managed cluster
	// to apply the work as (spec.executor). Default "": the agent's identity.
	Executor string
	// UpdateStrategy for every manifest: Update, CreateOnly, ServerSideApply
	// or ReadOnly. Default "": Update (ServerSideApply when IgnoreFields).
	UpdateStrategy string
	// IgnoreFields are paths every manifest leaves to the managed cluster
	// (serverSideApply.ignoreFields): a JSON pointer ("/spec/replicas") or a
	// JSONPath (".spec.replicas"), optionally followed by ":OnSpokeChange"
	// (default OnSpokePresent). Requires ServerSideApply.
	IgnoreFields []string
	// TTLAfterFinished (seconds) deletes the work that long after it is
	// Complete (deleteOption.ttlSecondsAfterFinished). Default nil: never.
	TTLAfterFinished *int64
	// WellKnownConditions adds every built-in condition rule for each
	// manifest's kind (Job: Complete, Degraded; Pod: Complete; Deployment:
	// Progressing, Degraded). Default false.
	WellKnownConditions bool
}

// Spec builds the ManifestWork spec for manifests and opts, naming the flag at
// fault when an option is unusable.
func Spec(manifests []workv1.Manifest, opts SpecOptions) (workv1.ManifestWorkSpec, error) {
	spec := workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: manifests}}
	if opts.Executor != "" {
		ns, name, ok := strings.Cut(opts.Executor, "/")
		if !ok || len(validation.IsDNS1123Subdomain(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			return spec, fmt.Errorf("--executor %q: want NAMESPACE/NAME of a ServiceAccount on the managed cluster", opts.Executor)
		}
		spec.Executor = &workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{
			Type: workv1.ExecutorSubjectTypeServiceAccount, ServiceAccount: &workv1.ManifestWorkSubjectServiceAccount{Namespace: ns, Name: name}}}
	}
	if opts.TTLAfterFinished != nil {
		if *opts.TTLAfterFinished < 0 {
			return spec, fmt.Errorf("--ttl-after-finished %d must not be negative", *opts.TTLAfterFinished)
		}
		spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeForeground, TTLSecondsAfterFinished: opts.TTLAfterFinished}
	}
	strategy, err := updateStrategy(opts)
	if err != nil {
		return spec, err
	}
	if strategy == nil && !opts.WellKnownConditions {
		return spec, nil
	}
	for i, m := range manifests {
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(m.Raw, &u.Object); err != nil {
			return spec, fmt.Errorf("manifest %d: %w", i, err)
		}
		gvk := u.GroupVersionKind()
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		cfg := workv1.ManifestConfigOption{ResourceIdentifier: workv1.ResourceIdentifier{
			Group: gvk.Group, Resource: plural.Resource, Namespace: u.GetNamespace(), Name: u.GetName()}}
		if strategy != nil {
			s := *strategy
			cfg.UpdateStrategy = &s
		}
		if opts.WellKnownConditions {
			for _, c := range workrules.WellKnownFor(gvk.GroupKind().String()) {
				cfg.ConditionRules = append(cfg.ConditionRules, workv1.ConditionRule{Type: workv1.WellKnownConditionsType, Condition: c})
			}
		}
		if cfg.UpdateStrategy == nil && len(cfg.ConditionRules) == 0 {
			continue
		}
		spec.ManifestConfigs = append(spec.ManifestConfigs, cfg)
	}
	return spec, nil
}

func updateStrategy(opts SpecOptions) (*workv1.UpdateStrategy, error) {
	typ := workv1.UpdateStrategyType(opts.UpdateStrategy)
	switch typ {
	case "":
		if len(opts.IgnoreFields) == 0 {
			return nil, nil
		}
		typ = workv1.UpdateStrategyTypeServerSideApply
	case workv1.UpdateStrategyTypeUpdate, workv1.UpdateStrategyTypeCreateOnly, workv1.UpdateStrategyTypeServerSideApply, workv1.UpdateStrategyTypeReadOnly:
	default:
		return nil, fmt.Errorf("--update-strategy %q: want Update, CreateOnly, ServerSideApply or ReadOnly", opts.UpdateStrategy)
	}
	s := &workv1.UpdateStrategy{Type: typ}
	if typ != workv1.UpdateStrategyTypeServerSideApply {
		if len(opts.IgnoreFields) > 0 {
			return nil, errors.New("--ignore-field needs --update-strategy ServerSideApply (the default when --ignore-field is given)")
		}
		return s, nil
	}
	s.ServerSideApply = &workv1.ServerSideApplyConfig{Force: true, FieldManager: workv1.DefaultFieldManager}
	byCondition := map[workv1.IgnoreFieldsCondition]*workv1.IgnoreField{}
	var order []workv1.IgnoreFieldsCondition
	for _, f := range opts.IgnoreFields {
		path, cond := f, workv1.IgnoreFieldsConditionOnSpokePresent
		if i := strings.LastIndex(f, ":"); i > 0 {
			switch c := workv1.IgnoreFieldsCondition(f[i+1:]); c {
			case workv1.IgnoreFieldsConditionOnSpokePresent, workv1.IgnoreFieldsConditionOnSpokeChange:
				path, cond = f[:i], c
			}
		}
		if path == "" || (path[0] != '/' && path[0] != '.') {
			return nil, fmt.Errorf("--ignore-field %q: want a JSON pointer (/spec/replicas) or a JSONPath (.spec.replicas), optionally followed by :OnSpokePresent or :OnSpokeChange", f)
		}
		e := byCondition[cond]
		if e == nil {
			e = &workv1.IgnoreField{Condition: cond}
			byCondition[cond] = e
			order = append(order, cond)
		}
		if path[0] == '/' {
			e.JSONPointers = append(e.JSONPointers, path)
		} else {
			e.JSONPaths = append(e.JSONPaths, path)
		}
	}
	for _, c := range order {
		s.ServerSideApply.IgnoreFields = append(s.ServerSideApply.IgnoreFields, *byCondition[c])
	}
	return s, nil
}
