// Package search benchmarks fleet search: the hub's index at fleet scale on
// SQLite and PostgreSQL (initial sync of a cluster, change -> searchable,
// five typical queries, the index's size) and the agent on a real cluster
// apiserver (initial sync, memory, idle CPU). Results: docs/benchmarks.md.
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 60m ./test/bench/search/
//	# FLOTILLA_BENCH_SEARCH_CLUSTERS=1000 for the 2 million objects (default 100)
//	# -bench Index/sqlite or Index/postgres for one database; -bench Agent for the agent
package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	searchv1alpha1 "flotilla.dev/flotilla/api/search/v1alpha1"
	"flotilla.dev/flotilla/internal/pgtest"
	"flotilla.dev/flotilla/search/agent"
	"flotilla.dev/flotilla/search/apigroup"
	"flotilla.dev/flotilla/search/index"
	"flotilla.dev/flotilla/test/bench/benchutil"
	"flotilla.dev/flotilla/test/testenv"
)

var (
	podsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	configMapsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	servicesGVR    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
)

// A cluster's 2,000 objects: 1,000 Pods, 300 Deployments, 400 ConfigMaps,
// 300 Services, in 20 namespaces; images from 50 (nginx:1.25 one Pod in
// 50); one Pod in 20 crash-looping; one Deployment in 10 short of replicas;
// a Deployment "payments" on every cluster.
const (
	podsPer, deploymentsPer, configMapsPer, servicesPer = 1000, 300, 400, 300
	namespaces                                          = 20
)

func pod(c, i int, rv string) *unstructured.Unstructured {
	image := fmt.Sprintf("registry.example/app%d:1.%d", i%50, i%7)
	if i%50 == 0 {
		image = "nginx:1.25"
	}
	state := map[string]any{"running": map[string]any{}}
	if i%20 == 7 {
		state = map[string]any{"waiting": map[string]any{"reason": "CrashLoopBackOff"}}
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"namespace": fmt.Sprintf("ns%d", i%namespaces), "name": fmt.Sprintf("app%d-%d", i%50, i), "uid": fmt.Sprintf("c%d-pod-%d", c, i),
			"resourceVersion": rv, "labels": map[string]any{"app": fmt.Sprintf("app%d", i%50), "tier": "web"},
			"ownerReferences": []any{map[string]any{"kind": "ReplicaSet", "name": fmt.Sprintf("app%d-rs", i%50), "controller": true}}},
		"spec":   map[string]any{"nodeName": "node1", "containers": []any{map[string]any{"name": "app", "image": image}}},
		"status": map[string]any{"phase": "Running", "containerStatuses": []any{map[string]any{"name": "app", "ready": i%20 != 7, "restartCount": int64(i % 3), "state": state}}}}}
}

func deployment(c, i int) *unstructured.Unstructured {
	name := fmt.Sprintf("svc%d", i)
	if i == 0 {
		name = "payments"
	}
	ready := int64(3)
	if i%10 == 3 {
		ready = 1
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": fmt.Sprintf("ns%d", i%namespaces), "name": name, "uid": fmt.Sprintf("c%d-dep-%d", c, i), "resourceVersion": "1",
			"labels": map[string]any{"app": name}},
		"spec":   map[string]any{"replicas": int64(3), "template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "registry.example/" + name + ":2"}}}}},
		"status": map[string]any{"readyReplicas": ready}}}
}

func simple(kind, prefix string, c, i int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind,
		"metadata": map[string]any{"namespace": fmt.Sprintf("ns%d", i%namespaces), "name": fmt.Sprintf("%s%d", prefix, i), "uid": fmt.Sprintf("c%d-%s-%d", c, prefix, i),
			"resourceVersion": "1", "labels": map[string]any{"app": fmt.Sprintf("app%d", i%50)}},
		"data": map[string]any{"config": strings.Repeat("x", 200)}}}
}

// syncCluster writes cluster c's objects as its agent's first sync does
// (a Replace per resource).
func syncCluster(ctx context.Context, idx *index.Store, c int) error {
	name := fmt.Sprintf("cluster%d", c)
	changes := []index.Change{
		{Cluster: name, Resource: podsGVR, Kind: "Pod", Namespaced: true, Replace: true},
		{Cluster: name, Resource: deploymentsGVR, Kind: "Deployment", Namespaced: true, Replace: true},
		{Cluster: name, Resource: configMapsGVR, Kind: "ConfigMap", Namespaced: true, Replace: true},
		{Cluster: name, Resource: servicesGVR, Kind: "Service", Namespaced: true, Replace: true},
	}
	for i := range podsPer {
		changes[0].Upserts = append(changes[0].Upserts, pod(c, i, "1"))
	}
	for i := range deploymentsPer {
		changes[1].Upserts = append(changes[1].Upserts, deployment(c, i))
	}
	for i := range configMapsPer {
		changes[2].Upserts = append(changes[2].Upserts, simple("ConfigMap", "cm", c, i))
	}
	for i := range servicesPer {
		s := simple("Service", "svc", c, i)
		delete(s.Object, "data")
		changes[3].Upserts = append(changes[3].Upserts, s)
	}
	for _, ch := range changes {
		if _, err := idx.Apply(ctx, ch); err != nil {
			return err
		}
	}
	return nil
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func BenchmarkIndex(b *testing.B) {
	clusters := benchutil.EnvInt(b, "FLOTILLA_BENCH_SEARCH_CLUSTERS", 100, 2)
	b.Run("sqlite", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "search.db")
		benchIndex(b, path, clusters, func() float64 {
			var total int64
			for _, suffix := range []string{"", "-wal"} {
				if st, err := os.Stat(path + suffix); err == nil {
					total += st.Size()
				}
			}
			return float64(total) / (1 << 20)
		})
	})
	b.Run("postgres", func(b *testing.B) {
		pg := pgtest.Start(b)
		url := pg.NewDatabase(b)
		benchIndex(b, url, clusters, func() float64 {
			conn, err := pgx.Connect(context.Background(), url)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close(context.Background())
			var size int64
			if err := conn.QueryRow(context.Background(), `SELECT pg_database_size(current_database())`).Scan(&size); err != nil {
				b.Fatal(err)
			}
			return float64(size) / (1 << 20)
		})
	})
}

func benchIndex(b *testing.B, db string, clusters int, size func() float64) {
	ctx := context.Background()
	idx, err := index.Open(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	defer idx.Close()
	perCluster := podsPer + deploymentsPer + configMapsPer + servicesPer
	var syncs []time.Duration
	start := time.Now()
	for c := range clusters {
		t := time.Now()
		if err := syncCluster(ctx, idx, c); err != nil {
			b.Fatal(err)
		}
		syncs = append(syncs, time.Since(t))
	}
	load := time.Since(start)
	b.ReportMetric(float64(clusters*perCluster), "objects")
	b.ReportMetric(load.Seconds(), "load-s")
	b.ReportMetric(ms(percentile(syncs, 0.5)), "cluster-sync-p50-ms")
	b.ReportMetric(size(), "index-MiB")

	// Change -> searchable on the hub: one Pod's new version written as an
	// agent's delta, then found by a search.
	r := rand.New(rand.NewPCG(1, 2))
	var changes []time.Duration
	for n := range 50 {
		c, i := r.IntN(clusters), r.IntN(podsPer)
		p := pod(c, i, fmt.Sprintf("v%d", n+2))
		p.SetLabels(map[string]string{"app": "changed", "round": fmt.Sprint(n)})
		t := time.Now()
		if _, err := idx.Apply(ctx, index.Change{Cluster: fmt.Sprintf("cluster%d", c), Resource: podsGVR, Kind: "Pod", Namespaced: true, Upserts: []*unstructured.Unstructured{p}}); err != nil {
			b.Fatal(err)
		}
		page, err := idx.Search(ctx, index.Query{Resource: podsGVR.GroupResource(), AllClusters: true, Labels: labels.SelectorFromSet(labels.Set{"round": fmt.Sprint(n)})})
		if err != nil || len(page.Items) != 1 {
			b.Fatalf("change %d: %d found, %v", n, len(page.Items), err)
		}
		changes = append(changes, time.Since(t))
	}
	b.ReportMetric(ms(percentile(changes, 0.5)), "change-p50-ms")
	b.ReportMetric(ms(percentile(changes, 0.99)), "change-p99-ms")

	// Five typical queries, as a user who may see every cluster (first page
	// of 500) and, for the third, one who may see a third of them.
	third := []string{}
	for c := 0; c < clusters; c += 3 {
		third = append(third, fmt.Sprintf("cluster%d", c))
	}
	queries := []struct {
		name string
		q    index.Query
	}{
		{"image", index.Query{Resource: podsGVR.GroupResource(), AllClusters: true, Image: "nginx:1.25", Limit: 500}},
		{"crashloop", index.Query{Resource: podsGVR.GroupResource(), AllClusters: true, Reason: "CrashLoopBackOff", Limit: 500}},
		{"notready-third", index.Query{Resource: deploymentsGVR.GroupResource(), Clusters: third, Ready: "false", Limit: 500}},
		{"name", index.Query{Resource: deploymentsGVR.GroupResource(), AllClusters: true, Names: []string{"payments"}, Limit: 500}},
		{"label-ns-cluster", index.Query{Resource: podsGVR.GroupResource(), Clusters: []string{"cluster1"}, Namespaces: []string{"ns3"}, Labels: labels.SelectorFromSet(labels.Set{"app": "app3"})}},
	}
	for _, q := range queries {
		var took []time.Duration
		found := 0
		for range 20 {
			t := time.Now()
			page, err := idx.Search(ctx, q.q)
			if err != nil {
				b.Fatal(err)
			}
			took = append(took, time.Since(t))
			found = len(page.Items)
		}
		if found == 0 {
			b.Fatalf("query %s found nothing", q.name)
		}
		b.ReportMetric(ms(percentile(took, 0.5)), q.name+"-p50-ms")
		b.ReportMetric(ms(percentile(took, 0.99)), q.name+"-p99-ms")
	}
}

// hub applies an agent's Syncs to an index as the search API does, and
// tells what happened: posts receives the index's object count after every
// post, checks the time of every digest check.
type hub struct {
	idx    *index.Store
	posts  chan int
	checks chan time.Time
}

func (h hub) Sync(ctx context.Context, cluster string, s *searchv1alpha1.Sync) (*searchv1alpha1.SyncResult, error) {
	res, err := apigroup.Apply(ctx, h.idx, cluster, s)
	if err != nil {
		return nil, err
	}
	if len(s.Resources) > 0 && s.Resources[0].Mode == searchv1alpha1.ModeCheck {
		select {
		case h.checks <- time.Now():
		default:
		}
	}
	if st, err := h.idx.Stats(ctx); err == nil {
		select {
		case h.posts <- st.Objects:
		default:
		}
	}
	return res, nil
}

func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAgent: the agent on a real cluster apiserver holding 2,000
// objects (its default resources; 1,000 ConfigMaps, 1,000 Secrets in 10
// namespaces, besides what the cluster has): the initial sync, the Go heap
// after it, and the CPU of 30 idle seconds. The agent runs in this process
// (the apiserver is another): the process's CPU is the agent's.
func BenchmarkAgent(b *testing.B) {
	env := testenv.Start(b, testenv.Options{NoHub: true, Clusters: 1})
	spoke := env.Clusters[0]
	cs := kubernetes.NewForConfigOrDie(spoke.Config)
	ctx := context.Background()
	for n := range 10 {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns%d", n)}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	benchutil.Parallel(b, 2000, func(i int) error {
		ns := fmt.Sprintf("ns%d", i%10)
		if i%2 == 0 {
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm%d", i), Labels: map[string]string{"app": fmt.Sprint(i % 50)}},
				Data: map[string]string{"config": strings.Repeat("x", 500)}}, metav1.CreateOptions{})
			return err
		}
		_, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%d", i)},
			Data: map[string][]byte{"key": []byte(strings.Repeat("s", 500))}}, metav1.CreateOptions{})
		return err
	})
	idx, err := index.Open(ctx, filepath.Join(b.TempDir(), "search.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer idx.Close()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	actx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	h := hub{idx: idx, posts: make(chan int, 1), checks: make(chan time.Time, 1)}
	start := time.Now()
	// The idle window below is one digest check to the next: a resync
	// period of 30 s.
	const resync = 30 * time.Second
	go func() {
		done <- agent.Sync(actx, agent.Options{SpokeConfig: spoke.Config, ClusterName: "c1", ResyncInterval: resync}, h)
	}()
	for synced := false; !synced; {
		select {
		case n := <-h.posts:
			synced = n >= 2000
		case err := <-done:
			b.Fatalf("agent stopped: %v", err)
		}
	}
	b.ReportMetric(time.Since(start).Seconds(), "initial-sync-s")
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapInuse)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(after.HeapInuse-min(after.HeapInuse, before.HeapInuse))/(1<<20), "agent-heap-MiB")
	rss, _ := benchutil.Memory(os.Getpid())
	b.ReportMetric(rss, "process-rss-MiB")
	// Idle: what the agent burns when nothing changes, from the end of the
	// initial sync to its next digest check, one resync period later.
	<-h.checks // the initial sync's own check, sent before the objects
	c0, t0 := cpu(), time.Now()
	select {
	case <-h.checks:
	case err := <-done:
		b.Fatalf("agent stopped: %v", err)
	}
	idle := time.Since(t0)
	b.ReportMetric(float64((cpu()-c0).Milliseconds())/idle.Seconds(), "idle-cpu-ms-per-s")
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
