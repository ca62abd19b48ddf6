//go:build compare

package compare

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	searchv1alpha1 "flotilla.dev/flotilla/api/search/v1alpha1"
	"flotilla.dev/flotilla/internal/addonagent"
	"flotilla.dev/flotilla/internal/aggregated"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/pgtest"
	"flotilla.dev/flotilla/internal/pki"
	"flotilla.dev/flotilla/test/bench/benchutil"
	"flotilla.dev/flotilla/test/testenv"
)

// The fleet of the search comparison: 10 managed clusters (real
// kube-apiservers, each with its own etcd), each holding 1,000 objects in
// 20 namespaces: 500 Pods (no node: Pending), 150 Deployments (0 replicas:
// no ReplicaSet makes Pods), 200 ConfigMaps, 150 headless Services. Labels
// app=app<i%50>; a Deployment "payments" on every cluster. The shape of
// test/bench/search's cluster at half the size, so 11 control planes, both
// systems and PostgreSQL fit a 2-core machine.
const (
	searchClusters                                                  = 10
	searchNamespaces                                                = 20
	searchPods, searchDeployments, searchConfigMaps, searchServices = 500, 150, 200, 150
	searchQueryRuns                                                 = 50
)

// searchResources are what both systems sync, the same four on both sides.
var searchResources = []schema.GroupVersionResource{
	{Version: "v1", Resource: "pods"},
	{Version: "v1", Resource: "configmaps"},
	{Version: "v1", Resource: "services"},
	{Group: "apps", Version: "v1", Resource: "deployments"},
}

// searchQuery is one query, as each system's Kubernetes-style API spells it
// (both reached through the hub apiserver, as a user would: kubectl, a
// kubeconfig whose server is the API's path).
type searchQuery struct {
	name               string
	flotilla, upstream string // paths with query
	want               int    // items expected (from the clusters themselves)
}

func searchQueries(want map[string]int) []searchQuery {
	const flo, cp = "/apis/search.flotilla.dev/v1alpha1/resources", "/apis/clusterpedia.io/v1beta1/resources"
	return []searchQuery{
		{"pods -l app=app3, all clusters", flo + "/api/v1/pods?labelSelector=app%3Dapp3", cp + "/api/v1/pods?labelSelector=app%3Dapp3", want["label"]},
		{"deployment payments by name, all clusters", flo + "/apis/apps/v1/deployments?fieldSelector=metadata.name%3Dpayments", cp + "/apis/apps/v1/deployments?names=payments", want["name"]},
		{"pods in ns3 of cluster1", flo + "/api/v1/namespaces/ns3/pods?cluster=cluster1", cp + "/clusters/cluster1/api/v1/namespaces/ns3/pods", want["nsCluster"]},
		{"all deployments, all clusters", flo + "/apis/apps/v1/deployments", cp + "/apis/apps/v1/deployments", want["deployments"]},
		{"pods, first page of 500", flo + "/api/v1/pods?limit=500", cp + "/api/v1/pods?limit=500", 500},
	}
}

// searchSide is what one system's run measured.
type searchSide struct {
	sync, syncCPU time.Duration
	answering     time.Duration // start -> the API answers a query through the hub apiserver
	cpu           time.Duration // every process of the side, its whole life
	p50, p99      []time.Duration
	hubRSS        float64 // peak RSS (VmHWM) of the hub-side processes, MiB
	agentRSS      float64 // of the agents (Flotilla's 10; Clusterpedia has none)
	// Anonymous RSS (heap, stacks) after the queries: without the binary's
	// pages, which the 10 agents share but each one's RSS counts.
	hubAnon, agentAnon float64
	dbMiB              float64
	hubCPU, agents     time.Duration
}

// searchWorkload: the same 10 clusters synced into Flotilla's fleet search
// and into Clusterpedia, one after the other, both on PostgreSQL (one
// server, a database each): the time from the processes' start until the
// API answers through the hub apiserver, then from adding the 10 clusters
// until every object is queryable; five queries through each API, memory
// and CPU.
func searchWorkload(b *testing.B, _ string) []row {
	b.StopTimer()
	cpBin, cpCRDs := clusterpediaBin(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := testenv.Start(b, testenv.Options{Clusters: searchClusters, ClusterCRDs: []string{}})
	pg := pgtest.Start(b)
	logs := searchLogDir(b)
	fillClusters(b, ctx, env)
	total, want := countClusters(b, ctx, env)
	b.Logf("search: %d clusters hold %d objects of the four resources; load average %s", len(env.Clusters), total, loadAvg())
	defer func() { b.Logf("search: load average at the end %s", loadAvg()) }()
	ip, err := aggregated.HostIP()
	must(b, err)

	f := flotillaSearch(b, ctx, env, pg.NewDatabase(b), ip, logs, total, want)
	u := clusterpediaSearch(b, ctx, env, pg.NewDatabase(b), ip, cpBin, cpCRDs, logs, total, want)

	w := fmt.Sprintf("search %d clusters x %d objects", searchClusters, searchPods+searchDeployments+searchConfigMaps+searchServices)
	rows := []row{
		{w, "processes start -> API answering (s)", f.answering.Seconds(), u.answering.Seconds()},
		{w, "sync: 10 clusters added -> all queryable (s)", f.sync.Seconds(), u.sync.Seconds()},
	}
	for i, q := range searchQueries(want) {
		rows = append(rows,
			row{w, q.name + " p50 (ms)", ms(f.p50[i]), ms(u.p50[i])},
			row{w, q.name + " p99 (ms)", ms(f.p99[i]), ms(u.p99[i])})
	}
	return append(rows,
		row{w, "peak RSS, hub side (MiB)", f.hubRSS, u.hubRSS},
		row{w, "peak RSS, agents, sum (MiB)", f.agentRSS, u.agentRSS},
		row{w, "peak RSS, all processes (MiB)", f.hubRSS + f.agentRSS, u.hubRSS + u.agentRSS},
		row{w, "anonymous RSS after queries, hub side (MiB)", f.hubAnon, u.hubAnon},
		row{w, "anonymous RSS after queries, agents, sum (MiB)", f.agentAnon, u.agentAnon},
		row{w, "CPU, clusters added -> synced (s)", f.syncCPU.Seconds(), u.syncCPU.Seconds()},
		row{w, "CPU, hub side, whole run (s)", f.hubCPU.Seconds(), u.hubCPU.Seconds()},
		row{w, "CPU, agents, whole run (s)", f.agents.Seconds(), u.agents.Seconds()},
		row{w, "CPU, all processes, whole run (s)", f.cpu.Seconds(), u.cpu.Seconds()},
		row{w, "PostgreSQL database size (MiB)", f.dbMiB, u.dbMiB},
	)
}

// clusterpediaBin is $FLOTILLA_CLUSTERPEDIA_BIN (a folder holding
// Clusterpedia's apiserver and clustersynchro-manager, built from its source)
// and $FLOTILLA_CLUSTERPEDIA_CRDS (a folder holding its CRD manifests
// cluster.clusterpedia.io_*.yaml, its source's deploy/; default
// $FLOTILLA_CLUSTERPEDIA_BIN/../src/deploy).
func clusterpediaBin(b *testing.B) (bin, crds string) {
	bin = os.Getenv("FLOTILLA_CLUSTERPEDIA_BIN")
	if bin == "" {
		b.Fatal("FLOTILLA_CLUSTERPEDIA_BIN is not set: build Clusterpedia's apiserver and clustersynchro-manager from its source and set it to their folder (docs/benchmarks.md, \"Side by side with Clusterpedia\")")
	}
	for _, name := range []string{"apiserver", "clustersynchro-manager"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			b.Fatalf("FLOTILLA_CLUSTERPEDIA_BIN=%s has no %s binary: %v", bin, name, err)
		}
	}
	crds = os.Getenv("FLOTILLA_CLUSTERPEDIA_CRDS")
	if crds == "" {
		crds = filepath.Join(bin, "..", "src", "deploy")
	}
	files, _ := filepath.Glob(filepath.Join(crds, "cluster.clusterpedia.io_*.yaml"))
	if len(files) == 0 {
		b.Fatalf("no cluster.clusterpedia.io_*.yaml in %s: set FLOTILLA_CLUSTERPEDIA_CRDS to the deploy/ folder of the Clusterpedia source the binaries were built from", crds)
	}
	return bin, crds
}

// loadAvg is /proc/loadavg's 1, 5 and 15 minute averages.
func loadAvg() string {
	data, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(data))
	return strings.Join(f[:min(3, len(f))], " ")
}

// searchLogDir keeps the processes' logs: $FLOTILLA_COMPARE_LOGS, else a
// folder of the benchmark (removed at its end).
func searchLogDir(b *testing.B) string {
	if dir := os.Getenv("FLOTILLA_COMPARE_LOGS"); dir != "" {
		must(b, os.MkdirAll(dir, 0o755))
		return dir
	}
	return b.TempDir()
}

func searchNS(i int) string { return fmt.Sprintf("ns%d", i%searchNamespaces) }

// fillClusters writes every cluster's objects.
func fillClusters(b *testing.B, ctx context.Context, env *testenv.Env) {
	for _, c := range env.Clusters {
		cs := kubernetes.NewForConfigOrDie(rest.CopyConfig(c.Config))
		for n := range searchNamespaces {
			ensureNamespaceCS(b, ctx, cs, searchNS(n))
		}
		// Flotilla's agent's namespace (its hub credential), made now so
		// that its kube-root-ca.crt is counted for both sides.
		ensureNamespaceCS(b, ctx, cs, ocm.DefaultAddonInstallNamespace)
		perCluster := searchPods + searchDeployments + searchConfigMaps + searchServices
		benchutil.Parallel(b, perCluster, func(i int) error {
			var err error
			switch {
			case i < searchPods:
				image := fmt.Sprintf("registry.example/app%d:1.%d", i%50, i%7)
				if i%50 == 0 {
					image = "nginx:1.25"
				}
				_, err = cs.CoreV1().Pods(searchNS(i)).Create(ctx, &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app%d-%d", i%50, i), Labels: map[string]string{"app": fmt.Sprintf("app%d", i%50), "tier": "web"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}}}, metav1.CreateOptions{})
			case i < searchPods+searchDeployments:
				j := i - searchPods
				name := fmt.Sprintf("svc%d", j)
				if j == 0 {
					name = "payments"
				}
				sel := map[string]string{"app": name}
				_, err = cs.AppsV1().Deployments(searchNS(j)).Create(ctx, &appsv1.Deployment{
					ObjectMeta: metav1.ObjectMeta{Name: name, Labels: sel},
					Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: sel},
						Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
							Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/" + name + ":2"}}}}}}, metav1.CreateOptions{})
			case i < searchPods+searchDeployments+searchConfigMaps:
				j := i - searchPods - searchDeployments
				_, err = cs.CoreV1().ConfigMaps(searchNS(j)).Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm%d", j), Labels: map[string]string{"app": fmt.Sprintf("app%d", j%50)}},
					Data:       map[string]string{"config": strings.Repeat("x", 200)}}, metav1.CreateOptions{})
			default:
				j := i - searchPods - searchDeployments - searchConfigMaps
				_, err = cs.CoreV1().Services(searchNS(j)).Create(ctx, &corev1.Service{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc%d", j), Labels: map[string]string{"app": fmt.Sprintf("app%d", j%50)}},
					Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Name: "http", Port: 80}},
						Selector: map[string]string{"app": fmt.Sprintf("app%d", j%50)}}}, metav1.CreateOptions{})
			}
			return err
		})
		// kube-controller-manager puts ConfigMap kube-root-ca.crt in every
		// namespace: wait for them, so that the count below is final.
		must(b, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			cms, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=kube-root-ca.crt"})
			return err == nil && len(cms.Items) == len(nss.Items), nil
		}))
	}
}

// countClusters counts, on the clusters themselves, the objects of the four
// resources (theirs and the control planes' own: kube-root-ca.crt in every
// namespace, Service kubernetes) and each query's answer.
func countClusters(b *testing.B, ctx context.Context, env *testenv.Env) (int, map[string]int) {
	total := 0
	want := map[string]int{"name": 0}
	for _, c := range env.Clusters {
		dyn := dynamic.NewForConfigOrDie(c.Config)
		for _, r := range searchResources {
			l, err := dyn.Resource(r).List(ctx, metav1.ListOptions{})
			must(b, err)
			total += len(l.Items)
			for _, o := range l.Items {
				pod, dep := r.Resource == "pods", r.Resource == "deployments"
				count := map[string]bool{
					"label":       pod && o.GetLabels()["app"] == "app3",
					"nsCluster":   pod && c.Name == "cluster1" && o.GetNamespace() == "ns3",
					"deployments": dep,
					"name":        dep && o.GetName() == "payments",
				}
				for k, yes := range count {
					if yes {
						want[k]++
					}
				}
			}
		}
	}
	return total, want
}

// procs are one side's processes by role.
type procs struct{ hub, agents []int }

func (p procs) all() []int { return append(slices.Clone(p.hub), p.agents...) }

// ended: the process is gone or a zombie (it exited; startProcessLog's
// stop reaps it).
func ended(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) == 0 || f[0] == "Z" || f[0] == "X"
}

func anonRSS(pids []int) float64 {
	var m float64
	for _, pid := range pids {
		anon, _, _ := benchutil.MemoryParts(pid)
		m += anon
	}
	return m
}

func cpuOf(pids []int) time.Duration {
	var d time.Duration
	for _, pid := range pids {
		d += benchutil.CPU(pid)
	}
	return d
}

func peakRSS(pids []int) float64 {
	var m float64
	for _, pid := range pids {
		_, hwm := benchutil.Memory(pid)
		m += hwm
	}
	return m
}

// measureSearch waits until the side's API answers through the hub
// apiserver (a GET of probe, its group version's discovery; its processes, p.hub, were started at start), then adds the
// clusters (addClusters: Flotilla starts the agents, Clusterpedia gets its
// PediaClusters; it returns the agents' PIDs) and waits until its database
// holds every object (count reads it); then runs the queries, reads memory
// and CPU, and stops the processes.
func measureSearch(b *testing.B, ctx context.Context, side, probe string, hub *rest.Config, start time.Time, p procs, addClusters func() []int, stop func(),
	count func(context.Context) (int, error), total int, queries []searchQuery, path func(searchQuery) string, logs string) searchSide {
	hc, host := hubClient(b, hub)
	var last int
	var lastErr error
	running := func() error {
		for _, pid := range p.all() {
			if ended(pid) {
				return fmt.Errorf("process %d ended", pid)
			}
		}
		return nil
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := running(); err != nil {
			return false, err
		}
		lastErr = get(ctx, hc, host, probe)
		return lastErr == nil, nil
	})
	if err != nil {
		b.Fatalf("%s: the API does not answer (last error: %v): %v; logs in %s", side, lastErr, err, logs)
	}
	res := searchSide{answering: time.Since(start)}
	cpu0 := cpuOf(p.hub)
	added := time.Now()
	p.agents = addClusters()
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := running(); err != nil {
			return false, err
		}
		last, lastErr = count(ctx)
		return lastErr == nil && last >= total, nil
	})
	if err != nil {
		b.Fatalf("%s: not synced: %d of %d objects in its database (last error: %v): %v; logs in %s", side, last, total, lastErr, err, logs)
	}
	res.sync, res.syncCPU = time.Since(added), cpuOf(p.all())-cpu0
	b.Logf("%s: API answering %s after start; clusters added, then %d objects queryable after %s (CPU %s)", side, res.answering.Round(time.Millisecond), total,
		res.sync.Round(time.Millisecond), res.syncCPU.Round(time.Millisecond))
	for _, q := range queries {
		var took []time.Duration
		for run := -3; run < searchQueryRuns; run++ { // 3 warm-up runs
			t := time.Now()
			n, err := listItems(ctx, hc, host, path(q))
			d := time.Since(t)
			if err != nil {
				b.Fatalf("%s: query %q: %v", side, q.name, err)
			}
			if run == -3 && n != q.want {
				b.Errorf("%s: query %q answered %d items, the clusters hold %d", side, q.name, n, q.want)
			}
			if run >= 0 {
				took = append(took, d)
			}
		}
		slices.Sort(took)
		res.p50 = append(res.p50, took[len(took)/2])
		res.p99 = append(res.p99, took[(len(took)*99+99)/100-1])
		b.Logf("%s: %s: p50 %s p99 %s", side, q.name, res.p50[len(res.p50)-1].Round(10*time.Microsecond), res.p99[len(res.p99)-1].Round(10*time.Microsecond))
	}
	res.hubRSS, res.agentRSS = peakRSS(p.hub), peakRSS(p.agents)
	res.hubAnon, res.agentAnon = anonRSS(p.hub), anonRSS(p.agents)
	res.hubCPU, res.agents = cpuOf(p.hub), cpuOf(p.agents)
	res.cpu = res.hubCPU + res.agents
	b.Logf("%s: peak RSS hub side %.0f MiB, agents %.0f MiB; anonymous RSS after the queries %.0f, %.0f MiB; CPU hub side %s, agents %s", side,
		res.hubRSS, res.agentRSS, res.hubAnon, res.agentAnon,
		res.hubCPU.Round(time.Millisecond), res.agents.Round(time.Millisecond))
	stop()
	return res
}

// hubClient is an HTTP client of the hub apiserver as its admin, and the
// apiserver's URL.
func hubClient(b *testing.B, hub *rest.Config) (*http.Client, string) {
	hc, err := rest.HTTPClientFor(hub)
	must(b, err)
	return hc, strings.TrimSuffix(hub.Host, "/")
}

// get GETs path and wants a 200.
func get(ctx context.Context, hc *http.Client, host, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, host+path, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(body[:min(len(body), 300)]))
	}
	return nil
}

// listItems GETs a list (path and query) and counts its items.
func listItems(ctx context.Context, hc *http.Client, host, pathQuery string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, host+pathQuery, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(body[:min(len(body), 300)]))
	}
	var l struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(body, &l); err != nil {
		return 0, fmt.Errorf("not a list: %v", err)
	}
	return len(l.Items), nil
}

// pgCount returns a func counting with query in database url.
func pgCount(b *testing.B, ctx context.Context, url, query string) func(context.Context) (int, error) {
	conn, err := pgx.Connect(ctx, url)
	must(b, err)
	b.Cleanup(func() { _ = conn.Close(context.Background()) })
	return func(ctx context.Context) (int, error) {
		var n int
		err := conn.QueryRow(ctx, query).Scan(&n)
		return n, err
	}
}

func pgSize(b *testing.B, ctx context.Context, url string) float64 {
	size, err := pgCount(b, ctx, url, `SELECT pg_database_size(current_database())`)(ctx)
	must(b, err)
	return float64(size) / (1 << 20)
}

// flotillaSearch runs Flotilla's side: the `flotilla hub` process with the
// search index on PostgreSQL and its aggregated API registered in the hub
// apiserver, and one `flotilla addon-agent search` process per cluster with
// a hub credential of that cluster's search agent (the identity and right
// addon registration gives it; here minted with the hub's CA, as no
// klusterlet runs).
func flotillaSearch(b *testing.B, ctx context.Context, env *testenv.Env, db string, ip net.IP, logs string, total int, want map[string]int) searchSide {
	kube := kubernetes.NewForConfigOrDie(env.Hub.Config)
	clusters := clusterclient.NewForConfigOrDie(env.Hub.Config)
	addons := addonclient.NewForConfigOrDie(env.Hub.Config)
	ca, err := pki.LoadCA(filepath.Join(env.Hub.Dir, "pki", "ca.crt"), filepath.Join(env.Hub.Dir, "pki", "ca.key"))
	must(b, err)
	for _, c := range env.Clusters {
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: c.Name}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true, LeaseDurationSeconds: 60}}
		_, err := clusters.ClusterV1().ManagedClusters().Create(ctx, mc, metav1.CreateOptions{})
		must(b, err)
		ensureNamespaceCS(b, ctx, kube, c.Name)
		_, err = addons.AddonV1alpha1().ManagedClusterAddOns(c.Name).Create(ctx, &addonv1alpha1.ManagedClusterAddOn{
			ObjectMeta: metav1.ObjectMeta{Namespace: c.Name, Name: ocm.SearchAddon}}, metav1.CreateOptions{})
		must(b, err)
		group := ocm.AddonClusterGroup(c.Name, ocm.SearchAddon)
		_, err = kube.RbacV1().Roles(c.Name).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "bench-search-agent"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{searchv1alpha1.GroupName}, Resources: []string{"syncs"}, Verbs: []string{"create"}}}}, metav1.CreateOptions{})
		must(b, err)
		_, err = kube.RbacV1().RoleBindings(c.Name).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bench-search-agent"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "bench-search-agent"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: group}}}, metav1.CreateOptions{})
		must(b, err)
		kp, err := ca.Issue(pki.CertRequest{CommonName: ocm.AddonAgentUser(c.Name, ocm.SearchAddon, "bench"), Organizations: []string{group}, Client: true})
		must(b, err)
		kc := clientcmdapi.NewConfig()
		kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: env.Hub.URL, CertificateAuthorityData: env.Hub.CAPEM}
		kc.AuthInfos["agent"] = &clientcmdapi.AuthInfo{ClientCertificate: "tls.crt", ClientKey: "tls.key"}
		kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "agent"}
		kc.CurrentContext = "hub"
		data, err := clientcmd.Write(*kc)
		must(b, err)
		spoke := kubernetes.NewForConfigOrDie(c.Config)
		ensureNamespaceCS(b, ctx, spoke, ocm.DefaultAddonInstallNamespace)
		_, err = spoke.CoreV1().Secrets(ocm.DefaultAddonInstallNamespace).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: ocm.AddonHubKubeconfigSecret(ocm.SearchAddon)},
			Data: map[string][]byte{addonagent.SecretKeyKubeconfig: data, addonagent.SecretKeyCert: kp.CertPEM, addonagent.SecretKeyKey: kp.KeyPEM,
				addonagent.SecretKeyClusterName: []byte(c.Name), addonagent.SecretKeyAgentName: []byte("bench")}}, metav1.CreateOptions{})
		must(b, err)
	}
	flotilla := benchutil.Flotilla(b)
	var p procs
	var stops []func()
	start := time.Now()
	pid, stop := startProcessLog(b, ctx, filepath.Join(logs, "flotilla-hub.log"), flotilla, nil, "hub", "--kubeconfig", env.Hub.KubeconfigPath,
		"--search-db", db, "--compliance-db", "off", "--api-address", ip.String(), "--data-dir", b.TempDir(), "--remove-webhooks-on-stop")
	p.hub, stops = append(p.hub, pid), append(stops, stop)
	addAgents := func() []int {
		var pids []int
		for _, c := range env.Clusters {
			pid, stop := startProcessLog(b, ctx, filepath.Join(logs, "flotilla-agent-"+c.Name+".log"), benchutil.SearchAgent(b, flotilla), nil, "addon-agent", ocm.SearchAddon,
				"--cluster-name", c.Name, "--kubeconfig", c.KubeconfigPath, "--resources", "pods,configmaps,services,deployments.apps")
			pids, stops = append(pids, pid), append(stops, stop)
		}
		return pids
	}
	stopAll := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	count := pgCount(b, ctx, db, `SELECT count(*) FROM search_objects`)
	res := measureSearch(b, ctx, "flotilla", "/apis/search.flotilla.dev/v1alpha1", env.Hub.Config, start, p, addAgents, stopAll, func(ctx context.Context) (int, error) {
		n, err := count(ctx)
		var pgErr interface{ SQLState() string }
		if errors.As(err, &pgErr) && pgErr.SQLState() == "42P01" { // the hub has not created the table yet
			return 0, nil
		}
		return n, err
	}, total, searchQueries(want), func(q searchQuery) string { return q.flotilla }, logs)
	res.dbMiB = pgSize(b, ctx, db)
	return res
}

// clusterpediaSearch runs Clusterpedia's side: its CRDs in the hub
// apiserver, a PediaCluster per cluster (the cluster's admin kubeconfig, the
// same four resources), clustersynchro-manager (leader election off) and its
// apiserver (authentication and authorization delegated to the hub
// apiserver), registered as APIService v1beta1.clusterpedia.io through a
// Service without selector and an EndpointSlice with this host's address, as
// Flotilla registers its own. Storage: its internalstorage on PostgreSQL.
func clusterpediaSearch(b *testing.B, ctx context.Context, env *testenv.Env, db string, ip net.IP, bin, crds, logs string, total int, want map[string]int) searchSide {
	installCRDFiles(b, ctx, env.Hub.Config, crds)
	kube := kubernetes.NewForConfigOrDie(env.Hub.Config)
	const ns = "clusterpedia-system"
	ensureNamespaceCS(b, ctx, kube, ns)
	port := freePort(b)
	_, err := kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "clusterpedia-apiserver"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt(port), Protocol: corev1.ProtocolTCP}}}}, metav1.CreateOptions{})
	must(b, err)
	_, err = kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "clusterpedia-apiserver", Labels: map[string]string{discoveryv1.LabelServiceName: "clusterpedia-apiserver"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip.String()}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}, metav1.CreateOptions{})
	must(b, err)
	_, err = aggregator.NewForConfigOrDie(env.Hub.Config).ApiregistrationV1().APIServices().Create(ctx, &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1beta1.clusterpedia.io"},
		Spec: apiregistrationv1.APIServiceSpec{Group: "clusterpedia.io", Version: "v1beta1", GroupPriorityMinimum: 1000, VersionPriority: 100,
			InsecureSkipTLSVerify: true, // its serving certificate is self-signed at start
			Service:               &apiregistrationv1.ServiceReference{Namespace: ns, Name: "clusterpedia-apiserver", Port: ptr.To[int32](443)}},
	}, metav1.CreateOptions{})
	must(b, err)
	dir := b.TempDir()
	storage := filepath.Join(dir, "storage.yaml")
	must(b, os.WriteFile(storage, []byte(fmt.Sprintf("type: postgres\ndsn: %q\n", db)), 0o600))

	dyn := dynamic.NewForConfigOrDie(env.Hub.Config)
	pediaclusters := schema.GroupVersionResource{Group: "cluster.clusterpedia.io", Version: "v1alpha2", Resource: "pediaclusters"}
	addPediaClusters := func() []int {
		for _, c := range env.Clusters {
			kc, err := os.ReadFile(c.KubeconfigPath)
			must(b, err)
			_, err = dyn.Resource(pediaclusters).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "cluster.clusterpedia.io/v1alpha2", "kind": "PediaCluster", "metadata": map[string]any{"name": c.Name},
				"spec": map[string]any{"kubeconfig": base64.StdEncoding.EncodeToString(kc), "syncResources": []any{
					map[string]any{"group": "", "resources": []any{"pods", "configmaps", "services"}},
					map[string]any{"group": "apps", "resources": []any{"deployments"}}}}}}, metav1.CreateOptions{})
			must(b, err)
		}
		return nil // no agents: clustersynchro-manager pulls from every cluster
	}
	var p procs
	var stops []func()
	start := time.Now()
	cpEnv := []string{"CLUSTERPEDIA_NAMESPACE=" + ns}
	pid, stop := startProcessLog(b, ctx, filepath.Join(logs, "clusterpedia-clustersynchro-manager.log"), filepath.Join(bin, "clustersynchro-manager"), cpEnv,
		"--kubeconfig", env.Hub.KubeconfigPath, "--storage-config", storage, "--leader-elect=false",
		"--metrics-host", "127.0.0.1", "--metrics-port", strconv.Itoa(freePort(b)),
		"--feature-gates=PruneManagedFields=true,PruneLastAppliedConfiguration=true")
	p.hub, stops = append(p.hub, pid), append(stops, stop)
	// Both processes migrate the database as they start; started together
	// on an empty database, one of them fails (PostgreSQL: duplicate key in
	// pg_type_typname_nsp_index, as both create table resources). So the
	// apiserver starts once clustersynchro-manager has created it.
	count := pgCount(b, ctx, db, `SELECT count(*) FROM resources WHERE deleted_at IS NULL`)
	must(b, wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if ended(pid) {
			return false, fmt.Errorf("clustersynchro-manager ended; log in %s", logs)
		}
		_, err := count(ctx)
		return err == nil, nil
	}))
	pid, stop = startProcessLog(b, ctx, filepath.Join(logs, "clusterpedia-apiserver.log"), filepath.Join(bin, "apiserver"), cpEnv,
		"--kubeconfig", env.Hub.KubeconfigPath, "--authentication-kubeconfig", env.Hub.KubeconfigPath, "--authorization-kubeconfig", env.Hub.KubeconfigPath,
		"--bind-address", ip.String(), "--secure-port", strconv.Itoa(port), "--cert-dir", dir, "--storage-config", storage)
	p.hub, stops = append(p.hub, pid), append(stops, stop)
	stopAll := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	res := measureSearch(b, ctx, "clusterpedia", "/apis/clusterpedia.io/v1beta1", env.Hub.Config, start, p, addPediaClusters, stopAll, func(ctx context.Context) (int, error) {
		n, err := count(ctx)
		var pgErr interface{ SQLState() string }
		if errors.As(err, &pgErr) && pgErr.SQLState() == "42P01" { // not migrated yet
			return 0, nil
		}
		return n, err
	}, total, searchQueries(want), func(q searchQuery) string { return q.upstream }, logs)
	res.dbMiB = pgSize(b, ctx, db)
	return res
}

// installCRDFiles creates the CRDs of dir's cluster.clusterpedia.io_*.yaml
// and waits until they are established.
func installCRDFiles(b *testing.B, ctx context.Context, cfg *rest.Config, dir string) {
	c := apiextensionsclient.NewForConfigOrDie(cfg)
	files, _ := filepath.Glob(filepath.Join(dir, "cluster.clusterpedia.io_*.yaml"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		must(b, err)
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := dec.Decode(&crd); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				b.Fatalf("%s: %v", file, err)
			}
			if crd.Name == "" {
				continue
			}
			if _, err := c.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, &crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				b.Fatalf("%s: %v", file, err)
			}
			must(b, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				got, err := c.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				for _, cond := range got.Status.Conditions {
					if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
						return true, nil
					}
				}
				return false, nil
			}))
		}
	}
}
