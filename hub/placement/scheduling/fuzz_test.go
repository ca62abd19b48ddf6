package scheduling

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/yaml"

	st "flotilla.dev/flotilla/hub/placement/scheduling/schedtest"
)

// FuzzSchedule feeds arbitrary Placement specs (the bytes a tenant writes) to
// Schedule over a small fleet. Whatever the spec, Schedule returns (no panic,
// no hang), and a Placement that is not misconfigured decides only clusters of
// the fleet, each once, and never more than numberOfClusters.
func FuzzSchedule(f *testing.F) {
	for _, dir := range mustGlob(f, "testdata/scenarios/*/scenario.yaml") {
		raw, err := os.ReadFile(dir)
		if err != nil {
			f.Fatal(err)
		}
		var sc scenario
		if err := yaml.Unmarshal(raw, &sc); err == nil {
			if b, err := yaml.Marshal(sc.Placement.Spec); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte(`numberOfClusters: 2147483647`))
	f.Add([]byte(`numberOfClusters: -1`))
	f.Add([]byte(`predicates: [{requiredClusterSelector: {celSelector: {celExpressions: ["managedCluster.metadata.labels['env'] == 'prod'"]}}}]`))
	f.Add([]byte(`predicates: [{requiredClusterSelector: {labelSelector: {matchExpressions: [{key: env, operator: Bogus}]}}}]`))
	f.Add([]byte(`tolerations: [{key: k, operator: Bogus, tolerationSeconds: -5}]`))
	f.Add([]byte(`prioritizerPolicy: {mode: Exact, configurations: [{scoreCoordinate: {type: AddOn, addOn: {resourceName: x, scoreName: y}}, weight: -11}]}`))
	f.Add([]byte(`spreadPolicy: {spreadConstraints: [{topologyKey: zone, topologyKeyType: Claim, maxSkew: 0}]}`))
	f.Add([]byte(`decisionStrategy: {groupStrategy: {clustersPerDecisionGroup: "0%", decisionGroups: [{groupName: a, groupClusterSelector: {}}]}}`))

	fleet := []*clusterv1.ManagedCluster{
		st.Cluster("c1").Label("env", "prod").Claim("zone", "a").Allocatable("4", "8Gi").Obj(),
		st.Cluster("c2").Label("env", "dev").Claim("zone", "b").Allocatable("2", "4Gi").Obj(),
		st.Cluster("c3").Label("env", "prod").Claim("zone", "b").Taint("k", "v", clusterv1.TaintEffectNoSelect, now.Add(-time.Hour)).Obj(),
		st.Cluster("c4").Obj(),
	}
	f.Fuzz(func(t *testing.T, spec []byte) {
		p := &clusterv1beta1.Placement{}
		p.Name, p.Namespace = "fuzz", ns
		if err := yaml.Unmarshal(spec, &p.Spec); err != nil {
			return // the apiserver's schema refuses what does not decode
		}
		res := Schedule(world{clusters: fleet, decided: []string{"c2"}, counts: map[string]int{"c1": 3}}.snapshot(), p)
		if res.Misconfigured != nil {
			if res.Misconfigured.Error() == "" {
				t.Fatal("a misconfiguration must say what is wrong")
			}
			return
		}
		seen := map[string]bool{}
		for _, d := range res.Decisions {
			if seen[d.ClusterName] {
				t.Fatalf("cluster %s decided twice", d.ClusterName)
			}
			seen[d.ClusterName] = true
			if !inFleet(fleet, d.ClusterName) {
				t.Fatalf("decided %s, which is not in the fleet", d.ClusterName)
			}
		}
		if n := p.Spec.NumberOfClusters; n != nil && *n >= 0 && len(res.Decisions) > int(*n) {
			t.Fatalf("%d decisions for numberOfClusters %d", len(res.Decisions), *n)
		}
		if len(res.Groups) == 0 {
			t.Fatal("a result always has at least one group")
		}
	})
}

func inFleet(fleet []*clusterv1.ManagedCluster, name string) bool {
	for _, c := range fleet {
		if c.Name == name {
			return true
		}
	}
	return false
}

func mustGlob(f *testing.F, pattern string) []string {
	m, err := filepath.Glob(pattern)
	if err != nil {
		f.Fatal(err)
	}
	return m
}
