package scheduling

import (
	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
	"flotilla.dev/flotilla/hub/placement/scheduling/plugins/addonscore"
	"flotilla.dev/flotilla/hub/placement/scheduling/plugins/balance"
	"flotilla.dev/flotilla/hub/placement/scheduling/plugins/celselector"
	"flotilla.dev/flotilla/hub/placement/scheduling/plugins/claimselector"
	"flotilla.dev/flotilla/hub/placement/scheduling/plugins/labelselector"
	"flotilla.dev/flotilla/hub/placement/scheduling/plugins/resourceallocatable"
	"flotilla.dev/flotilla/hub/placement/scheduling/plugins/spread"
	"flotilla.dev/flotilla/hub/placement/scheduling/plugins/steady"
	"flotilla.dev/flotilla/hub/placement/scheduling/plugins/tainttoleration"
)

// Registry maps plugin names to constructors. Schedule uses DefaultRegistry; tests
// and embedders may build their own.
type Registry struct {
	// Selectors are built once per predicate and ANDed; predicates are ORed.
	Selectors map[string]framework.SelectorFactory
	// Filters are built once per Placement and all must pass.
	Filters map[string]framework.FilterFactory
	// BuiltIns are the prioritizers scoreCoordinate.builtIn may name.
	BuiltIns map[string]framework.ScoreFactory
	// AddOn builds the prioritizer for scoreCoordinate.type AddOn.
	AddOn framework.ScoreFactory
	// Select is the selection stage (spread); nil plugin means "take the best n".
	Select framework.SelectFactory
}

// DefaultRegistry holds every plugin Flotilla ships.
func DefaultRegistry() *Registry {
	return &Registry{
		Selectors: map[string]framework.SelectorFactory{
			labelselector.Name: labelselector.New,
			claimselector.Name: claimselector.New,
			celselector.Name:   celselector.New,
		},
		Filters: map[string]framework.FilterFactory{
			tainttoleration.Name: tainttoleration.New,
		},
		BuiltIns: map[string]framework.ScoreFactory{
			balance.Name:                   balance.New,
			steady.Name:                    steady.New,
			resourceallocatable.CPUName:    resourceallocatable.NewCPU,
			resourceallocatable.MemoryName: resourceallocatable.NewMemory,
		},
		AddOn:  addonscore.New,
		Select: spread.New,
	}
}

// defaultWeights are the Additive mode's implicit prioritizers.
var defaultWeights = map[string]int32{balance.Name: 1, steady.Name: 1}
