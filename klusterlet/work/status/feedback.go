package status

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/jsonpath"
	workv1 "open-cluster-management.io/api/work/v1"
)

// MaxJSONRawLength caps a JsonRaw feedback value, so one rule cannot bloat the
// ManifestWork status.
const MaxJSONRawLength = 1024

// MaxStringLength caps a String feedback value. The CRD sets no limit, but a
// value of megabytes (a JSONPath to a ConfigMap's data) would make the whole
// status unwritable; like JsonRaw's, a longer value is refused with an error in
// StatusFeedbackSynced.
const MaxStringLength = 4096

// wellKnown lists the feedback values WellKnownStatus reports for each kind.
var wellKnown = map[schema.GroupKind][]workv1.JsonPath{
	{Group: "apps", Kind: "Deployment"}: {
		{Name: "ReadyReplicas", Path: ".status.readyReplicas"},
		{Name: "Replicas", Path: ".status.replicas"},
		{Name: "AvailableReplicas", Path: ".status.availableReplicas"},
	},
	{Group: "batch", Kind: "Job"}: {
		{Name: "JobComplete", Path: `.status.conditions[?(@.type=="Complete")].status`},
		{Name: "JobSucceeded", Path: ".status.succeeded"},
	},
	{Group: "apps", Kind: "DaemonSet"}: {
		{Name: "NumberReady", Path: ".status.numberReady"},
		{Name: "DesiredNumberScheduled", Path: ".status.desiredNumberScheduled"},
		{Name: "NumberAvailable", Path: ".status.numberAvailable"},
		{Name: "CurrentNumberScheduled", Path: ".status.currentNumberScheduled"},
		{Name: "UpdatedNumberScheduled", Path: ".status.updatedNumberScheduled"},
	},
	{Kind: "Pod"}: {
		{Name: "PodPhase", Path: ".status.phase"},
		{Name: "PodReady", Path: `.status.conditions[?(@.type=="Ready")].status`},
	},
}

// Feedback evaluates rules against obj. Well-known values that the object does
// not (yet) carry are left out: a Deployment without nodes has no
// readyReplicas, and that is not an error. A JSONPaths rule whose path is
// invalid or matches nothing is an error naming the rule, and so is a
// WellKnownStatus rule on a kind without well-known values. A value name that
// more than one rule produces is kept once, the first, and is an error too (the
// status keeps values by name; two of one name would make it unwritable).
// Values that were found are returned even when other rules fail.
func Feedback(obj *unstructured.Unstructured, rules []workv1.FeedbackRule) ([]workv1.FeedbackValue, error) {
	values, problems := feedback(obj, rules)
	seen := make(map[string]bool, len(values))
	kept := values[:0]
	for _, v := range values {
		if seen[v.Name] {
			problems = append(problems, fmt.Sprintf("%s: more than one rule names this value; the first is kept", v.Name))
			continue
		}
		seen[v.Name] = true
		kept = append(kept, v)
	}
	if len(problems) > 0 {
		return kept, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return kept, nil
}

func feedback(obj *unstructured.Unstructured, rules []workv1.FeedbackRule) ([]workv1.FeedbackValue, []string) {
	var values []workv1.FeedbackValue
	var problems []string
	for _, rule := range rules {
		switch rule.Type {
		case workv1.WellKnownStatusType:
			gk := obj.GroupVersionKind().GroupKind()
			paths, ok := wellKnown[gk]
			if !ok {
				problems = append(problems, fmt.Sprintf("kind %s has no well-known status values", gk.String()))
				continue
			}
			for _, p := range paths {
				v, found, err := evaluate(obj, p)
				if err == nil && found {
					values = append(values, v)
				}
			}
		case workv1.JSONPathsType:
			for _, p := range rule.JsonPaths {
				v, found, err := evaluate(obj, p)
				switch {
				case err != nil:
					problems = append(problems, fmt.Sprintf("%s: %v", p.Name, err))
				case !found:
					problems = append(problems, fmt.Sprintf("%s: path %s has no value", p.Name, p.Path))
				default:
					values = append(values, v)
				}
			}
		default:
			problems = append(problems, fmt.Sprintf("unknown feedback rule type %q", rule.Type))
		}
	}
	return values, problems
}

func evaluate(obj *unstructured.Unstructured, p workv1.JsonPath) (workv1.FeedbackValue, bool, error) {
	jp := jsonpath.New(p.Name).AllowMissingKeys(true)
	if err := jp.Parse(fmt.Sprintf("{%s}", p.Path)); err != nil {
		return workv1.FeedbackValue{}, false, fmt.Errorf("invalid path %s: %w", p.Path, err)
	}
	results, err := jp.FindResults(obj.Object)
	if err != nil {
		return workv1.FeedbackValue{}, false, err
	}
	if len(results) == 0 || len(results[0]) == 0 {
		return workv1.FeedbackValue{}, false, nil
	}
	if len(results) > 1 || len(results[0]) > 1 {
		return workv1.FeedbackValue{}, false, fmt.Errorf("path %s matches more than one value", p.Path)
	}
	raw := results[0][0].Interface()
	fv, err := fieldValue(raw)
	if err != nil {
		return workv1.FeedbackValue{}, false, fmt.Errorf("path %s: %w", p.Path, err)
	}
	return workv1.FeedbackValue{Name: p.Name, Value: fv}, true, nil
}

func fieldValue(raw interface{}) (workv1.FieldValue, error) {
	switch v := raw.(type) {
	case int64:
		return workv1.FieldValue{Type: workv1.Integer, Integer: &v}, nil
	case int32:
		i := int64(v)
		return workv1.FieldValue{Type: workv1.Integer, Integer: &i}, nil
	case int:
		i := int64(v)
		return workv1.FieldValue{Type: workv1.Integer, Integer: &i}, nil
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			i := int64(v)
			return workv1.FieldValue{Type: workv1.Integer, Integer: &i}, nil
		}
		s := strconv.FormatFloat(v, 'g', -1, 64)
		return workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: &s}, nil
	case string:
		if len(v) > MaxStringLength {
			return workv1.FieldValue{}, fmt.Errorf("value is a string of %d bytes, more than the %d allowed", len(v), MaxStringLength)
		}
		return workv1.FieldValue{Type: workv1.String, String: &v}, nil
	case bool:
		return workv1.FieldValue{Type: workv1.Boolean, Boolean: &v}, nil
	case nil:
		return workv1.FieldValue{}, fmt.Errorf("value is null")
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return workv1.FieldValue{}, err
		}
		if len(b) > MaxJSONRawLength {
			return workv1.FieldValue{}, fmt.Errorf("value is %d bytes of JSON, more than the %d allowed", len(b), MaxJSONRawLength)
		}
		s := string(b)
		return workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: &s}, nil
	}
}
