// Package celselector is the predicate plugin for requiredClusterSelector.celSelector:
// CEL expressions over the variable `managedCluster` (the ManagedCluster as JSON),
// ANDed. An expression that does not compile or is not boolean makes the Placement
// misconfigured; one that fails at evaluation (a missing field) does not match.
package celselector

import (
	"fmt"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/lru"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
)

// Name is the plugin's registry name.
const Name = "CELSelector"

// Variable is the name the cluster has inside expressions.
const Variable = "managedCluster"

// costLimit bounds the work one expression may do against one cluster, so a
// hostile expression cannot stall the scheduler.
const costLimit = 1_000_000

// Plugin keeps clusters for which every expression evaluates to true.
type Plugin struct {
	exprs    []string
	programs []cel.Program
}

var _ framework.FilterPlugin = &Plugin{}

var (
	envOnce sync.Once
	env     *cel.Env
	envErr  error
	// programs caches compiled expressions: thousands of placements often share a
	// handful of expressions, and compiling is far costlier than evaluating.
	programs = lru.New(1024)
)

func celEnv() (*cel.Env, error) {
	envOnce.Do(func() {
		env, envErr = cel.NewEnv(
			cel.Variable(Variable, cel.MapType(cel.StringType, cel.DynType)),
			ext.Strings(), ext.Lists(), ext.Sets(),
		)
	})
	return env, envErr
}

// Compile checks one expression and returns its program, or an error saying what
// is wrong with it.
func Compile(expr string) (cel.Program, error) {
	if p, ok := programs.Get(expr); ok {
		return p.(cel.Program), nil
	}
	e, err := celEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := e.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("CEL expression %q does not compile: %s", expr, strings.TrimSpace(iss.Err().Error()))
	}
	if ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
		return nil, fmt.Errorf("CEL expression %q must evaluate to a bool, not %s", expr, ast.OutputType())
	}
	prg, err := e.Program(ast, cel.CostLimit(costLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("CEL expression %q: %w", expr, err)
	}
	programs.Add(expr, prg)
	return prg, nil
}

// New compiles the predicate's expressions.
func New(sel clusterv1beta1.ClusterSelector) (framework.FilterPlugin, error) {
	p := &Plugin{exprs: sel.CelSelector.CelExpressions}
	for i, expr := range sel.CelSelector.CelExpressions {
		prg, err := Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("celSelector.celExpressions[%d]: %w", i, err)
		}
		p.programs = append(p.programs, prg)
	}
	return p, nil
}

func (p *Plugin) Name() string { return Name }

func (p *Plugin) Filter(c *framework.ClusterInfo) *framework.Status {
	if len(p.programs) == 0 {
		return nil
	}
	vars := map[string]any{Variable: c.CELValue(toMap)}
	for i, prg := range p.programs {
		out, _, err := prg.Eval(vars)
		if err != nil {
			return framework.NewStatus(framework.Unschedulable, "CEL expression %q: %v", p.exprs[i], err)
		}
		if b, ok := out.Value().(bool); !ok || !b {
			return framework.NewStatus(framework.Unschedulable, "CEL expression %q is not true", p.exprs[i])
		}
	}
	return nil
}

func toMap(c *clusterv1.ManagedCluster) map[string]any {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		return map[string]any{}
	}
	return m
}
