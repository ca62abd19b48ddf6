package registration_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/hub/registration/accept"
	"flotilla.dev/flotilla/hub/registration/bootstrap"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/klusterlet"
	"flotilla.dev/flotilla/klusterlet/join"
	"flotilla.dev/flotilla/klusterlet/registration"
	"flotilla.dev/flotilla/test/bench/benchutil"
	"flotilla.dev/flotilla/test/testenv"
)

func BenchmarkAcceptToJoined(b *testing.B) {
	klog.SetOutput(ioDiscard{})
	klog.LogToStderr(false)
	for _, n := range []int{1, 50} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				runJoin(b, n)
			}
		})
	}
}

type ioDiscard struct{}

func (ioDiscard) Write(p []byte) (int, error) { return len(p), nil }

func runJoin(b *testing.B, n int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := testenv.Start(b, testenv.Options{Clusters: 1})
	tok, err := bootstrap.Init(ctx, bootstrap.Options{Config: env.Hub.Config})
	if err != nil {
		b.Fatal(err)
	}
	hubPID := benchutil.StartHub(b, ctx, env)
	benchutil.WaitHub(b, ctx, env)

	spoke := env.Clusters[0]
	names := make([]string, n)
	var wg sync.WaitGroup
	for i := range names {
		names[i] = fmt.Sprintf("sim%03d", i+1)
		ns := "agent-" + names[i]
		if err := join.Join(ctx, join.Options{SpokeConfig: spoke.Config, HubAPIServer: env.Hub.URL, HubToken: tok.Token,
			ClusterName: names[i], AgentNamespace: ns, NoDeployment: true}); err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func(name, ns string) {
			defer wg.Done()
			_ = klusterlet.Run(ctx, klusterlet.Options{DisableWork: true, Registration: registration.Options{
				ClusterName: name, AgentNamespace: ns, SpokeConfig: spoke.Config, HubKubeconfigDir: b.TempDir(),
			}})
		}(names[i], ns)
	}
	defer wg.Wait()
	defer cancel()

	// Every agent has asked (ManagedCluster and CSR), and the hub has taken
	// each ManagedCluster in (its finalizer), before the clock starts: the
	// clock times the hub's reaction to accept, not its start-up (the agents
	// ask as soon as the hub serves, about a second before its controllers
	// run).
	clusters := clusterclient.NewForConfigOrDie(env.Hub.Config)
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := clusters.ClusterV1().ManagedClusters().List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) < n {
			return false, nil
		}
		for _, mc := range list.Items {
			if !slices.Contains(mc.Finalizers, clusterv1.ManagedClusterFinalizer) {
				return false, nil
			}
		}
		csrs, err := kubernetes.NewForConfigOrDie(env.Hub.Config).CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		return err == nil && len(csrs.Items) >= n, nil
	}); err != nil {
		b.Fatalf("agents did not register: %v", err)
	}
	list, _ := clusters.ClusterV1().ManagedClusters().List(ctx, metav1.ListOptions{})
	w, err := clusters.ClusterV1().ManagedClusters().Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { w.Stop() }()

	// The stages of each cluster's path, from watches: the hub's HubAccepted,
	// the CSR approved, the CSR signed (certificate issued), Joined.
	csrs := kubernetes.NewForConfigOrDie(env.Hub.Config).CertificatesV1().CertificateSigningRequests()
	csrList, err := csrs.List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	cw, err := csrs.Watch(ctx, metav1.ListOptions{ResourceVersion: csrList.ResourceVersion})
	if err != nil {
		b.Fatal(err)
	}
	defer cw.Stop()
	var stageMu sync.Mutex
	approvedAt, issuedAt := map[string]time.Duration{}, map[string]time.Duration{}

	start := time.Now()
	go func() {
		for ev := range cw.ResultChan() {
			r, ok := ev.Object.(*certificatesv1.CertificateSigningRequest)
			if !ok {
				continue
			}
			cluster := r.Labels[ocm.ClusterNameLabel]
			stageMu.Lock()
			for _, c := range r.Status.Conditions {
				if _, seen := approvedAt[cluster]; c.Type == certificatesv1.CertificateApproved && !seen {
					approvedAt[cluster] = time.Since(start)
				}
			}
			if _, seen := issuedAt[cluster]; len(r.Status.Certificate) > 0 && !seen {
				issuedAt[cluster] = time.Since(start)
			}
			stageMu.Unlock()
		}
	}()
	acceptedAt := map[string]time.Duration{}
	b.ResetTimer()
	for _, name := range names {
		go func() {
			if err := accept.Accept(ctx, accept.Options{Config: env.Hub.Config, Clusters: []string{name}, Wait: true}); err != nil && ctx.Err() == nil {
				b.Errorf("accept %s: %v", name, err)
			}
		}()
	}
	joined := map[string]time.Duration{}
	timeout := time.After(10 * time.Minute)
	for len(joined) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				// The apiserver ended the watch (a busy machine): what changed
				// meanwhile is seen in a list, stamped now; then watch again.
				w = rewatch(b, ctx, clusters, func(mc *clusterv1.ManagedCluster) {
					if _, seen := acceptedAt[mc.Name]; !seen && meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted) {
						acceptedAt[mc.Name] = time.Since(start)
					}
					if _, seen := joined[mc.Name]; !seen && meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined) {
						joined[mc.Name] = time.Since(start)
					}
				})
				continue
			}
			mc, isMC := ev.Object.(*clusterv1.ManagedCluster)
			if !isMC {
				continue
			}
			if _, seen := acceptedAt[mc.Name]; !seen && meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted) {
				acceptedAt[mc.Name] = time.Since(start)
			}
			if ev.Type == watch.Modified && meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined) {
				if _, seen := joined[mc.Name]; !seen {
					joined[mc.Name] = time.Since(start)
				}
			}
		case <-timeout:
			b.Fatalf("only %d of %d clusters joined", len(joined), n)
		}
	}
	b.StopTimer()
	d := make([]time.Duration, 0, n)
	for _, v := range joined {
		d = append(d, v)
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	b.ReportMetric(ms(percentile(d, 50)), "ms-p50")
	b.ReportMetric(ms(percentile(d, 99)), "ms-p99")
	b.ReportMetric(ms(d[len(d)-1]), "ms-all-joined")
	// Where the time went: each stage's p50 and p99 over the clusters (the
	// time from the previous stage to this one, per cluster).
	stageMu.Lock()
	stages := []struct {
		name string
		at   map[string]time.Duration
	}{{"accepted", acceptedAt}, {"approved", approvedAt}, {"signed", issuedAt}, {"joined", joined}}
	var breakdown []string
	for i, st := range stages {
		var gaps []time.Duration
		for _, name := range names {
			at, ok := st.at[name]
			if !ok {
				continue
			}
			if i > 0 {
				prev, ok := stages[i-1].at[name]
				if !ok {
					continue
				}
				at -= prev
			}
			gaps = append(gaps, at)
		}
		if len(gaps) == 0 {
			continue
		}
		sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
		breakdown = append(breakdown, fmt.Sprintf("%s +%s/+%s", st.name,
			percentile(gaps, 50).Round(time.Millisecond), percentile(gaps, 99).Round(time.Millisecond)))
	}
	stageMu.Unlock()
	b.Logf("%d clusters: p50 %s, p99 %s, all %s; stages (p50/p99 from the previous one; accepted from the accepts): %s; load %s",
		n, percentile(d, 50).Round(time.Millisecond), percentile(d, 99).Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond),
		strings.Join(breakdown, ", "), loadavg())
	rss, hwm := benchutil.Memory(hubPID)
	b.ReportMetric(rss, "MiB-hub-rss")
	b.ReportMetric(hwm, "MiB-hub-peak-rss")
}

// rewatch lists the ManagedClusters (each seen by see) and watches them from there.
func rewatch(b *testing.B, ctx context.Context, clusters clusterclient.Interface, see func(*clusterv1.ManagedCluster)) watch.Interface {
	list, err := clusters.ClusterV1().ManagedClusters().List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatalf("list ManagedClusters after the watch ended: %v", err)
	}
	for i := range list.Items {
		see(&list.Items[i])
	}
	w, err := clusters.ClusterV1().ManagedClusters().Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		b.Fatalf("watch ManagedClusters again: %v", err)
	}
	return w
}

func loadavg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(raw))[:3], " ")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}
