package policy

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"flotilla.dev/flotilla/policy/configpolicy"
	"flotilla.dev/flotilla/policy/gatekeeper/live"
	"flotilla.dev/flotilla/test/testenv"
)

// BenchmarkGatekeeperAudit: 50 ConstraintTemplates (each with one
// constraint matching every ConfigMap) against 5,000 ConfigMaps, audited by
// Flotilla's Rego engine with no Gatekeeper; then the same 50 checks as
// ConfigurationPolicies (unnamed MustNotHave with an objectSelector) under
// the ConfigurationPolicy engine. Each check: ConfigMaps labelled bench=1
// must carry the label "team". Results: docs/benchmarks.md.
//
//	go test -run '^$' -bench Gatekeeper -benchtime 1x ./test/bench/policy/
func BenchmarkGatekeeperAudit(b *testing.B) {
	const checks = 50
	env := testenv.Start(b, testenv.Options{Clusters: 1, NoHub: true})
	cfg := rest.CopyConfig(env.Clusters[0].Config)
	cfg.QPS, cfg.Burst = 500, 1000
	kube := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	ctx := b.Context()

	b.Logf("creating %d namespaces and %d labelled ConfigMaps", namespaces, namespaces*objectsPerNS)
	parallel(b, namespaces, func(i int) error {
		_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName(i)}}, metav1.CreateOptions{})
		return err
	})
	parallel(b, namespaces*objectsPerNS, func(i int) error {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i%objectsPerNS), Namespace: nsName(i / objectsPerNS), Labels: map[string]string{"bench": "1", "team": "t"}},
			Data:       map[string]string{"level": "info"},
		}
		_, err := kube.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		return err
	})
	flip := func(label bool) {
		patch := `{"metadata":{"labels":{"team":null}}}`
		if label {
			patch = `{"metadata":{"labels":{"team":"t"}}}`
		}
		if _, err := kube.CoreV1().ConfigMaps(nsName(7)).Patch(ctx, "cm-7", "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
			b.Fatal(err)
		}
	}

	for n := 0; n < b.N; n++ {
		// Gatekeeper templates and constraints, audited by Flotilla
		// (FLOTILLA_BENCH_SKIP_REGO=1 skips this part).
		if os.Getenv("FLOTILLA_BENCH_SKIP_REGO") == "" {
			benchRego(b, dyn, flip, checks, env.Clusters[0].Config)
		}
		runtime.GC()

		// The same checks as ConfigurationPolicies.
		runCtx, stop := context.WithCancel(ctx)

		metrics := configpolicy.NewMetrics(nil)
		start, cpu0 := time.Now(), cpuTime()
		if _, err := configpolicy.Start(runCtx, configpolicy.Options{Config: env.Clusters[0].Config, Metrics: metrics}); err != nil {
			b.Fatal(err)
		}
		parallel(b, checks, func(i int) error {
			_, err := dyn.Resource(policiesGVR).Namespace(nsName(0)).Create(ctx, labelPolicy(i), metav1.CreateOptions{})
			return err
		})
		pstates := func(want string) func() bool {
			return func() bool { return policyStates(b, dyn, want) == checks }
		}
		pollUntil(b, 4*time.Minute, pstates("Compliant"))
		first, firstCPU := time.Since(start), cpuTime()-cpu0
		b.ReportMetric(first.Seconds(), "s/configpolicy-first-full-evaluation")
		b.Logf("ConfigurationPolicy: first full evaluation of %d policies x %d ConfigMaps: %s, engine CPU %s",
			checks, namespaces*objectsPerNS, first.Round(time.Millisecond), firstCPU.Round(time.Millisecond))
		lat := flipTimes(b, flip, pstates)
		b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "ms/configpolicy-change-to-50-statuses-p50")
		b.Logf("ConfigurationPolicy: one ConfigMap change -> all %d policy statuses (%d changes): p50 %s, max %s", checks, len(lat), lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
		heap, rss := memory()
		b.ReportMetric(heap, "MiB-configpolicy-heap")
		b.Logf("ConfigurationPolicy: memory after GC: heap %.1f MiB, RSS %.1f MiB", heap, rss)
		stop()
	}
}

// benchRego runs the Gatekeeper part: templates and constraints audited by
// Flotilla's Rego engine.
func benchRego(b *testing.B, dyn dynamic.Interface, flip func(bool), checks int, cfg *rest.Config) {
	ctx := b.Context()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	start, cpu0 := time.Now(), cpuTime()
	if _, err := live.Start(runCtx, live.Options{Config: cfg, InstallTemplateCRD: true}); err != nil {
		b.Fatal(err)
	}
	parallel(b, checks, func(i int) error {
		_, err := dyn.Resource(live.TemplatesGVR).Create(ctx, benchTemplate(i), metav1.CreateOptions{})
		return err
	})
	parallel(b, checks, func(i int) error {
		c := benchConstraint(i)
		gvr := schema.GroupVersionResource{Group: "constraints.gatekeeper.sh", Version: "v1beta1", Resource: strings.ToLower(c.GetKind())}
		var err error
		waitUntil(b, 5*time.Minute, func() bool {
			_, err = dyn.Resource(gvr).Create(ctx, c.DeepCopy(), metav1.CreateOptions{})
			return err == nil
		})
		return err
	})
	states := func(want string) func() bool {
		return func() bool { return constraintStates(b, dyn, checks, want) == checks }
	}
	pollUntil(b, 4*time.Minute, states("Compliant"))
	first, firstCPU := time.Since(start), cpuTime()-cpu0
	b.ReportMetric(first.Seconds(), "s/rego-first-full-audit")
	b.Logf("Rego: first full audit of %d constraints x %d ConfigMaps (CRDs for 50 kinds created on the way): %s, engine CPU %s",
		checks, namespaces*objectsPerNS, first.Round(time.Millisecond), firstCPU.Round(time.Millisecond))
	lat := flipTimes(b, flip, states)
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "ms/rego-change-to-50-statuses-p50")
	b.Logf("Rego: one ConfigMap change -> all %d constraint statuses (%d changes): p50 %s, max %s", checks, len(lat), lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	heap, rss := memory()
	b.ReportMetric(heap, "MiB-rego-heap")
	b.Logf("Rego: memory after GC: heap %.1f MiB, RSS %.1f MiB", heap, rss)
}

// flipTimes removes and restores a label 5 times each, timing until every
// status shows the change.
func flipTimes(b *testing.B, flip func(bool), states func(string) func() bool) []time.Duration {
	var lat []time.Duration
	for c := 0; c < 5; c++ {
		for _, step := range []struct {
			label bool
			want  string
		}{{false, "NonCompliant"}, {true, "Compliant"}} {
			t0 := time.Now()
			flip(step.label)
			pollUntil(b, time.Minute, states(step.want))
			lat = append(lat, time.Since(t0))
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat
}

func memory() (heap, rss float64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / (1 << 20), rssMiB()
}

func benchKind(i int) string { return fmt.Sprintf("K8sBenchLabels%02d", i) }

func benchTemplate(i int) *unstructured.Unstructured {
	kind := benchKind(i)
	pkg := strings.ToLower(kind)
	rego := "package " + pkg + `

violation[{"msg": msg}] {
  have := {k | input.review.object.metadata.labels[k]}
  want := {k | k := input.parameters.labels[_]}
  missing := want - have
  count(missing) > 0
  msg := sprintf("missing labels %v", [missing])
}
`
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "templates.gatekeeper.sh/v1", "kind": "ConstraintTemplate",
		"metadata": map[string]any{"name": pkg},
		"spec": map[string]any{
			"crd":     map[string]any{"spec": map[string]any{"names": map[string]any{"kind": kind}}},
			"targets": []any{map[string]any{"target": "admission.k8s.gatekeeper.sh", "rego": rego}},
		},
	}}
}

func benchConstraint(i int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "constraints.gatekeeper.sh/v1beta1", "kind": benchKind(i),
		"metadata": map[string]any{"name": "team-label"},
		"spec": map[string]any{
			"match": map[string]any{
				"kinds":         []any{map[string]any{"apiGroups": []any{""}, "kinds": []any{"ConfigMap"}}},
				"namespaces":    []any{"bench-*"},
				"labelSelector": map[string]any{"matchLabels": map[string]any{"bench": "1"}},
			},
			"parameters": map[string]any{"labels": []any{"team"}},
		},
	}}
}

func constraintStates(b *testing.B, dyn dynamic.Interface, checks int, want string) int {
	n := 0
	for i := 0; i < checks; i++ {
		gvr := schema.GroupVersionResource{Group: "constraints.gatekeeper.sh", Version: "v1beta1", Resource: strings.ToLower(benchKind(i))}
		c, err := dyn.Resource(gvr).Get(b.Context(), "team-label", metav1.GetOptions{})
		if err != nil {
			continue
		}
		if s, _, _ := unstructured.NestedString(c.Object, "status", "compliant"); s == want {
			n++
		}
	}
	return n
}

// labelPolicy is check i as a ConfigurationPolicy: no ConfigMap without the
// label "team" in the bench namespaces.
func labelPolicy(i int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.open-cluster-management.io/v1", "kind": "ConfigurationPolicy",
		"metadata": map[string]any{"name": fmt.Sprintf("team-label-%02d", i)},
		"spec": map[string]any{
			"remediationAction": "inform",
			"namespaceSelector": map[string]any{"include": []any{"bench-*"}},
			"object-templates": []any{map[string]any{
				"complianceType": "mustnothave",
				"objectSelector": map[string]any{
					"matchLabels":      map[string]any{"bench": "1"},
					"matchExpressions": []any{map[string]any{"key": "team", "operator": "DoesNotExist"}},
				},
				"objectDefinition": map[string]any{"apiVersion": "v1", "kind": "ConfigMap"},
			}},
		},
	}}
}

func policyStates(b *testing.B, dyn dynamic.Interface, want string) int {
	list, err := dyn.Resource(policiesGVR).Namespace(nsName(0)).List(b.Context(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	seen := map[string]int{}
	for _, p := range list.Items {
		if !strings.HasPrefix(p.GetName(), "team-label-") {
			continue
		}
		s, _, _ := unstructured.NestedString(p.Object, "status", "compliant")
		seen[s]++
		if s == want {
			n++
		} else if seen[s] == 1 {
			msg, _, _ := unstructured.NestedSlice(p.Object, "status", "compliancyDetails")
			lastSeen = fmt.Sprintf("%v %v", s, msg)
		}
	}
	lastCounts = fmt.Sprint(seen)
	return n
}

// pollUntil polls cond every 100ms: each poll reads 50 objects, so a finer
// poll would load the apiserver the engines share.
func pollUntil(b *testing.B, limit time.Duration, cond func() bool) {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("condition not met within %s (states %s; e.g. %s)", limit, lastCounts, lastSeen)
		}
		<-time.After(100 * time.Millisecond)
	}
}

var lastCounts, lastSeen string
