package rules

import (
	"fmt"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/lru"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/internal/workrules"
)

// ReasonPrefix starts the reason of every condition a rule produces.
const ReasonPrefix = "ConditionRule"

// ReasonAggregated is the reason of work-level conditions combined from the
// manifests' rule conditions.
const ReasonAggregated = "ConditionRulesAggregated"

// costLimit bounds the work one expression may do on one object, so a
// hostile rule cannot stall the agent.
const costLimit = 1_000_000

// FromRule says whether a condition was produced by a condition rule.
func FromRule(c metav1.Condition) bool { return strings.HasPrefix(c.Reason, ReasonPrefix) }

var (
	envOnce             sync.Once
	ruleEnv, messageEnv *cel.Env
	envErr              error
	// programs caches compiled expressions (per environment): every status
	// sync evaluates the same few rules again.
	programs = lru.New(512)
)

// hasConditions(status) is true when status has a non-empty conditions list
// (OCM offers it to rules).
func hasConditions(v ref.Val) ref.Val {
	m, ok := v.(traits.Mapper)
	if !ok {
		return types.False
	}
	c, found := m.Find(types.String("conditions"))
	if !found {
		return types.False
	}
	l, ok := c.(traits.Lister)
	return types.Bool(ok && l.Size() != types.IntZero)
}

func envs() (*cel.Env, *cel.Env, error) {
	envOnce.Do(func() {
		common := []cel.EnvOption{
			ext.Strings(), ext.Lists(), ext.Sets(),
			cel.Function("hasConditions", cel.Overload("status_has_conditions", []*cel.Type{cel.DynType}, cel.BoolType, cel.UnaryBinding(hasConditions))),
		}
		ruleEnv, envErr = cel.NewEnv(append([]cel.EnvOption{cel.Variable("object", cel.DynType)}, common...)...)
		if envErr != nil {
			return
		}
		messageEnv, envErr = cel.NewEnv(append([]cel.EnvOption{cel.Variable("object", cel.DynType), cel.Variable("result", cel.BoolType)}, common...)...)
	})
	return ruleEnv, messageEnv, envErr
}

type cacheKey struct {
	message bool
	expr    string
}

// compile returns the program of an expression (message selects the message
// environment), or the compiler's complaint.
func compile(expr string, message bool) (cel.Program, error) {
	k := cacheKey{message, expr}
	if p, ok := programs.Get(k); ok {
		return p.(cel.Program), nil
	}
	re, me, err := envs()
	if err != nil {
		return nil, err
	}
	env := re
	if message {
		env = me
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("CEL expression %q does not compile: %s", expr, strings.TrimSpace(iss.Err().Error()))
	}
	prg, err := env.Program(ast, cel.CostLimit(costLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("CEL expression %q: %w", expr, err)
	}
	programs.Add(k, prg)
	return prg, nil
}

// Evaluate returns the conditions rules produce for the live object, in rule
// order, without ObservedGeneration or transition times. A WellKnownConditions
// rule for a kind and condition with no built-in rule produces nothing, as in
// OCM.
func Evaluate(live *unstructured.Unstructured, rs []workv1.ConditionRule) []metav1.Condition {
	var out []metav1.Condition
	for _, r := range rs {
		switch r.Type {
		case workv1.WellKnownConditionsType:
			known, ok := workrules.WellKnown(live.GroupVersionKind().GroupKind().String(), r.Condition)
			if !ok {
				continue
			}
			if r.Message != "" {
				known.Message, known.MessageExpression = r.Message, ""
			}
			if r.MessageExpression != "" {
				known.MessageExpression = r.MessageExpression
			}
			out = append(out, evaluate(live, known))
		case workv1.CelConditionExpressionsType:
			out = append(out, evaluate(live, r))
		default:
			out = append(out, metav1.Condition{Type: r.Condition, Status: metav1.ConditionUnknown, Reason: workv1.ConditionRuleInvalid,
				Message: fmt.Sprintf("condition rule type %q is not supported (want CEL or WellKnownConditions)", r.Type)})
		}
	}
	return out
}

// evaluate runs one CEL rule: its expressions ANDed (the first false one
// decides), then its message.
func evaluate(live *unstructured.Unstructured, r workv1.ConditionRule) metav1.Condition {
	c := metav1.Condition{Type: r.Condition, Status: metav1.ConditionTrue, Reason: workv1.ConditionRuleEvaluated}
	if len(r.CelExpressions) == 0 {
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, workv1.ConditionRuleInvalid, "a CEL condition rule needs at least one expression in celExpressions"
		return c
	}
	vars := map[string]any{"object": live.Object}
	for _, expr := range r.CelExpressions {
		prg, err := compile(expr, false)
		if err != nil {
			// As in OCM, a rule that does not compile reads False.
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, workv1.ConditionRuleExpressionError, err.Error()
			return c
		}
		val, _, err := prg.Eval(vars)
		if err != nil {
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, workv1.ConditionRuleExpressionError, fmt.Sprintf("CEL expression %q: %v", expr, err)
			return c
		}
		b, ok := val.Value().(bool)
		if !ok {
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, workv1.ConditionRuleExpressionError,
				fmt.Sprintf("CEL expression %q must evaluate to a bool, got %s", expr, val.Type().TypeName())
			return c
		}
		if !b {
			c.Status = metav1.ConditionFalse
			break
		}
	}
	c.Message = message(live, r, c.Status == metav1.ConditionTrue)
	return c
}

// message is the condition's message: messageExpression when it yields a
// non-empty string, else message, else "Manifest is (not) <condition>".
func message(live *unstructured.Unstructured, r workv1.ConditionRule, result bool) string {
	if r.MessageExpression != "" {
		prg, err := compile(r.MessageExpression, true)
		if err != nil {
			return "messageExpression: " + err.Error()
		}
		val, _, err := prg.Eval(map[string]any{"object": live.Object, "result": result})
		if err != nil {
			return fmt.Sprintf("messageExpression %q: %v", r.MessageExpression, err)
		}
		s, ok := val.Value().(string)
		if !ok {
			return fmt.Sprintf("messageExpression %q must evaluate to a string, got %s", r.MessageExpression, val.Type().TypeName())
		}
		if s != "" {
			return s
		}
	}
	if r.Message != "" {
		return r.Message
	}
	if result {
		return "Manifest is " + r.Condition
	}
	return "Manifest is not " + r.Condition
}
