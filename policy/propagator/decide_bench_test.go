package propagator

import (
	"fmt"
	"testing"
)

// BenchmarkDecide: one policy bound by 10 bindings (two of them restricted
// enforce overrides) to placements of 1,000 clusters each.
func BenchmarkDecide(b *testing.B) {
	in := Inputs{Placements: map[string]PlacementState{}}
	for i := 0; i < 10; i++ {
		var clusters []string
		for c := 0; c < 1000; c++ {
			clusters = append(clusters, fmt.Sprintf("cluster-%04d", (c+i*100)%2000))
		}
		name := fmt.Sprintf("p%d", i)
		in.Placements[name] = PlacementState{Clusters: clusters}
		x := binding(fmt.Sprintf("b%d", i), name).policy("p")
		if i >= 8 {
			x = x.enforce().restrict()
		}
		in.Bindings = append(in.Bindings, x.obj())
	}
	r := root("p")
	b.ReportAllocs()
	for b.Loop() {
		if d := Decide(r, in); len(d.Clusters) == 0 {
			b.Fatal("no clusters")
		}
	}
}
