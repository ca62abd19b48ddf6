package workreplicaset

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
	"flotilla.dev/flotilla/hub/workreplicaset"
	"flotilla.dev/flotilla/hub/workreplicaset/distribute"
	"flotilla.dev/flotilla/internal/placementread/placementtest"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/test/bench/benchutil"
	"flotilla.dev/flotilla/test/testenv"
)

const ns = "bench"

var regions = []string{"eu", "us", "ap", "sa"}

// tenOverrides is a policy of 10 rules that all apply to every cluster,
// most with templates, and a weighted division over four regions.
func tenOverrides() distv1alpha1.DistributionPolicySpec {
	value := func(v any) *apiextensionsv1.JSON { raw, _ := json.Marshal(v); return &apiextensionsv1.JSON{Raw: raw} }
	spec := distv1alpha1.DistributionPolicySpec{Overrides: []distv1alpha1.OverrideRule{
		{Name: "registry", Images: []distv1alpha1.ImageOverride{{Component: distv1alpha1.Registry, Value: "registry.{{ cluster.labels[region] }}.example.com"}}},
		{Name: "tag", Images: []distv1alpha1.ImageOverride{{Container: "web", Component: distv1alpha1.Tag, Value: "1.27.3"}}},
		{Name: "region-label", Labels: []distv1alpha1.MetadataOverride{{Key: "region", Value: "{{ cluster.labels[region] }}"}}},
		{Name: "cluster-label", Labels: []distv1alpha1.MetadataOverride{{Key: "example.com/cluster", Value: "{{ cluster.name }}"}}},
		{Name: "claim-annotation", Annotations: []distv1alpha1.MetadataOverride{{Key: "example.com/id", Value: "{{ cluster.claims[id.k8s.io] }}"}}},
		{Name: "args", Args: []distv1alpha1.ArgsOverride{{Container: "web", Operation: distv1alpha1.ArgsAppend, Values: []string{"--cluster={{ cluster.name }}"}}}},
		{Name: "no-debug", Args: []distv1alpha1.ArgsOverride{{Operation: distv1alpha1.ArgsRemove, Values: []string{"--debug"}}}},
		{Name: "command", Command: []distv1alpha1.ArgsOverride{{Container: "sidecar", Operation: distv1alpha1.ArgsAppend, Values: []string{"envoy"}}}},
		{Name: "priority", Manifests: []distv1alpha1.ManifestSelector{{Group: "apps", Kind: "Deployment"}},
			JSONPatch: []distv1alpha1.JSONPatchOperation{{Op: "add", Path: "/spec/template/spec/priorityClassName", Value: value("high")}}},
		{Name: "config", Manifests: []distv1alpha1.ManifestSelector{{Kind: "ConfigMap"}},
			JSONPatch: []distv1alpha1.JSONPatchOperation{{Op: "replace", Path: "/data/region", Value: value("{{ cluster.labels[region] }}")}}},
	}}
	spec.Replicas = &distv1alpha1.ReplicaDivision{Type: distv1alpha1.Weighted}
	for i, r := range regions {
		spec.Replicas.Weights = append(spec.Replicas.Weights, distv1alpha1.ClusterWeight{Weight: int32(i + 1),
			Clusters: distv1alpha1.ClusterSelector{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": r}}}})
	}
	return spec
}

func template() workv1.ManifestWorkSpec {
	raws := []string{
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default","labels":{"app":"web"}},"spec":{"replicas":3000,
"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[
{"name":"web","image":"docker.io/library/nginx:1.27","args":["--port=80","--debug"],"resources":{"requests":{"cpu":"100m","memory":"128Mi"}}},
{"name":"sidecar","image":"envoyproxy/envoy:v1.31"}]}}}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web-config","namespace":"default"},"data":{"region":"unset","mode":"production"}}`,
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"default"},"spec":{"selector":{"app":"web"},"ports":[{"port":80}]}}`,
	}
	var s workv1.ManifestWorkSpec
	for _, r := range raws {
		s.Workload.Manifests = append(s.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(r)}})
	}
	return s
}

func clusterName(i int) string { return fmt.Sprintf("c%04d", i) }

func fleet(n int) []distribute.Cluster {
	out := make([]distribute.Cluster, n)
	for i := range out {
		name := clusterName(i)
		out[i] = distribute.Cluster{Name: name, Labels: map[string]string{"region": regions[i%len(regions)]}, Claims: map[string]string{"id.k8s.io": "id-" + name}}
	}
	return out
}

// BenchmarkRender1000Clusters is the render alone, in memory: the template
// for 1,000 clusters with no policy (a deep copy each) and with 10 overrides
// and the division (metrics ms/render).
func BenchmarkRender1000Clusters(b *testing.B) {
	clusters := fleet(1000)
	in := distribute.Input{Template: template(), Clusters: clusters}
	p, err := distribute.Compile(tenOverrides())
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range []struct {
		name   string
		policy *distribute.Policy
	}{{"none", nil}, {"10-overrides", p}} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				out := v.policy.Render(in)
				for _, w := range out.Works {
					if w.Err != nil {
						b.Fatal(w.Err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/render")
		})
	}
}

// BenchmarkControllerWithOverrides1000Clusters runs the replica set
// controller (its own manager at the hub's client limits, QPS 100, burst 200)
// on a real hub with 1,000 accepted clusters decided by one placement, and
// measures the time from creating a replica set to its status counting
// 1,000 works written: alternately without a policy and with tenOverrides,
// FLOTILLA_BENCH_ROUNDS times each (default 2). Metrics: the mean wall time
// of each and overhead-% (with / without - 1), and the same for the
// benchmark process's CPU time (the controller's, plus one watch), which a
// busy machine disturbs less.
func BenchmarkControllerWithOverrides1000Clusters(b *testing.B) {
	n := benchutil.EnvInt(b, "FLOTILLA_BENCH_CLUSTERS", 1000, 1)
	rounds := benchutil.EnvInt(b, "FLOTILLA_BENCH_ROUNDS", 2, 1)
	log.SetLogger(logr.Discard())
	env := testenv.Start(b, testenv.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	admin, err := client.NewWithWatch(env.Hub.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	mustCreate := func(o client.Object) error { return admin.Create(ctx, o) }
	if err := mustCreate(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	clusters := fleet(n)
	benchutil.Parallel(b, n, func(i int) error {
		c := clusters[i]
		if err := mustCreate(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.Name}}); err != nil {
			return err
		}
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: c.Name, Labels: c.Labels}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
		if err := mustCreate(mc); err != nil {
			return err
		}
		mc.Status.ClusterClaims = []clusterv1.ManagedClusterClaim{{Name: "id.k8s.io", Value: c.Claims["id.k8s.io"]}}
		if err := admin.Status().Update(ctx, mc); err != nil {
			return err
		}
		return testenv.MarkAccepted(ctx, admin, c.Name)
	})
	// One placement deciding every cluster, 100 per decision as OCM pages them.
	p := placementtest.Placement(ns, int32(n), true)
	p.UID = ""
	status := p.Status
	if err := mustCreate(p); err != nil {
		b.Fatal(err)
	}
	p.Status = status
	for i := range p.Status.Conditions {
		p.Status.Conditions[i].LastTransitionTime = metav1.Now()
		p.Status.Conditions[i].ObservedGeneration = p.Generation
	}
	if err := admin.Status().Update(ctx, p); err != nil {
		b.Fatal(err)
	}
	for page := 0; page*100 < n; page++ {
		var names []string
		for i := page * 100; i < min(n, (page+1)*100); i++ {
			names = append(names, clusters[i].Name)
		}
		d := placementtest.Decision(ns, fmt.Sprintf("%s-decision-%d", placementtest.Name, page+1), string(p.UID), names...)
		st := d.Status
		if err := mustCreate(d); err != nil {
			b.Fatal(err)
		}
		d.Status = st
		if err := admin.Status().Update(ctx, d); err != nil {
			b.Fatal(err)
		}
	}
	policy := &distv1alpha1.DistributionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "ten", Namespace: ns}, Spec: tenOverrides()}
	if err := mustCreate(policy); err != nil {
		b.Fatal(err)
	}

	cfg := *env.Hub.Config
	cfg.QPS, cfg.Burst = 100, 200 // the hub's defaults (hub.Options)
	mgr, err := ctrl.NewManager(&cfg, ctrl.Options{Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		b.Fatal(err)
	}
	if err := workreplicaset.Setup(mgr, workreplicaset.Options{}); err != nil {
		b.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		b.Fatal("cache did not sync")
	}

	// cpu is the benchmark process's CPU time (user + system): the
	// controller's, and the benchmark's own watch of the replica set.
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	run := func(name string, withPolicy bool) (time.Duration, time.Duration) {
		m := &workv1alpha1.ManifestWorkReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: workv1alpha1.ManifestWorkReplicaSetSpec{ManifestWorkTemplate: template(),
				PlacementRefs: []workv1alpha1.LocalPlacementReference{{Name: placementtest.Name}}}}
		if withPolicy {
			m.Annotations = map[string]string{distv1alpha1.PolicyAnnotation: "ten"}
		}
		start, startCPU := time.Now(), cpu()
		if err := mustCreate(m); err != nil {
			b.Fatal(err)
		}
		benchutil.WaitWatch(b, admin, &workv1alpha1.ManifestWorkReplicaSetList{}, &workv1alpha1.ManifestWorkReplicaSet{ObjectMeta: m.ObjectMeta},
			func(got *workv1alpha1.ManifestWorkReplicaSet) bool { return got.Status.Summary.Total == n }, 10*time.Minute)
		return time.Since(start), cpu() - startCPU
	}
	var plain, with, plainCPU, withCPU time.Duration
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			d, dc := run(fmt.Sprintf("plain-%d-%d", i, r), false)
			e, ec := run(fmt.Sprintf("policy-%d-%d", i, r), true)
			plain, plainCPU, with, withCPU = plain+d, plainCPU+dc, with+e, withCPU+ec
			b.Logf("round %d: without policy %v (CPU %v), with 10 overrides %v (CPU %v)", r,
				d.Round(time.Millisecond), dc.Round(time.Millisecond), e.Round(time.Millisecond), ec.Round(time.Millisecond))
		}
	}
	runs := time.Duration(b.N * rounds)
	b.ReportMetric((plain / runs).Seconds(), "s-without")
	b.ReportMetric((with / runs).Seconds(), "s-with-10-overrides")
	b.ReportMetric((float64(with)/float64(plain)-1)*100, "overhead-%")
	b.ReportMetric((plainCPU / runs).Seconds(), "cpu-s-without")
	b.ReportMetric((withCPU / runs).Seconds(), "cpu-s-with-10-overrides")
	b.ReportMetric((float64(withCPU)/float64(plainCPU)-1)*100, "cpu-overhead-%")
}
