//go:build compare

package compare

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/test/bench/benchutil"
	"flotilla.dev/flotilla/test/testenv"
)

const accepted = 50

// registrationWorkload measures the hub side of acceptance: 50 ManagedClusters
// (as agents would create them) are accepted at once (hubAcceptsClient set by
// 50 concurrent patches), and the clock runs until every one shows
// HubAcceptedManagedCluster=True. Flotilla's whole hub process, then upstream's
// `registration controller`, each on its own clusters.
func registrationWorkload(b *testing.B, upstream string) []row {
	b.StopTimer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := testenv.Start(b, testenv.Options{})
	f := acceptRun(b, ctx, env, "flo", func() (int, func()) {
		return startProcess(b, ctx, "flotilla-hub", benchutil.Flotilla(b), append([]string{"hub", "--kubeconfig", env.Hub.KubeconfigPath,
			"--compliance-db", "off", "--remove-webhooks-on-stop"}, limitArgs(b, "--kube-api-qps", "--kube-api-burst")...)...)
	})
	u := acceptRun(b, ctx, env, "up", func() (int, func()) {
		ensureNamespaceCS(b, ctx, kubernetes.NewForConfigOrDie(env.Hub.Config), "open-cluster-management-hub")
		return startProcess(b, ctx, "upstream-registration", filepath.Join(upstream, "registration"), append([]string{"controller",
			"--kubeconfig", env.Hub.KubeconfigPath, "--namespace", "open-cluster-management-hub",
			"--disable-leader-election", "--listen", fmt.Sprintf("127.0.0.1:%d", freePort(b))},
			limitArgs(b, "--kube-api-qps", "--kube-api-burst")...)...)
	})
	const w = "registration 50 accepted"
	return []row{
		{w, "all HubAccepted (ms)", ms(f.all), ms(u.all)},
		{w, "accept -> HubAccepted p50 (ms)", ms(f.p50), ms(u.p50)},
		{w, "accept -> HubAccepted p99 (ms)", ms(f.p99), ms(u.p99)},
	}
}

func acceptRun(b *testing.B, ctx context.Context, env *testenv.Env, prefix string, start func() (int, func())) workResult {
	c := clusterclient.NewForConfigOrDie(env.Hub.Config)
	var mu sync.Mutex
	acceptedAt := map[string]time.Time{}
	observe := func(obj interface{}) {
		mc, ok := obj.(*clusterv1.ManagedCluster)
		if !ok || !strings.HasPrefix(mc.Name, prefix+"-") || // the other run's clusters are accepted too
			!meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted) {
			return
		}
		mu.Lock()
		if _, seen := acceptedAt[mc.Name]; !seen {
			acceptedAt[mc.Name] = time.Now()
		}
		mu.Unlock()
	}
	inf := clusterinformers.NewSharedInformerFactory(c, 0).Cluster().V1().ManagedClusters().Informer()
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: observe, UpdateFunc: func(_, o interface{}) { observe(o) }})
	ictx, icancel := context.WithCancel(ctx)
	defer icancel()
	go inf.Run(ictx.Done())
	toolscache.WaitForCacheSync(ictx.Done(), inf.HasSynced)

	name := func(i int) string { return fmt.Sprintf("%s-%03d", prefix, i) }
	for i := 0; i <= accepted; i++ { // i == 0 is the probe
		if _, err := c.ClusterV1().ManagedClusters().Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name(i)},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: i == 0, LeaseDurationSeconds: 60}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	pid, stop := start()
	defer stop()
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		_, ok := acceptedAt[name(0)]
		return ok, nil
	}); err != nil {
		b.Fatalf("%s: the controller (pid %d) did not accept a first cluster within 3 minutes", prefix, pid)
	}

	b.StartTimer()
	patched := make([]time.Time, accepted+1)
	begin := time.Now()
	benchutil.ParallelN(b, accepted, accepted, func(i int) error {
		patched[i+1] = time.Now()
		_, err := c.ClusterV1().ManagedClusters().Patch(ctx, name(i+1), types.MergePatchType,
			[]byte(`{"spec":{"hubAcceptsClient":true}}`), metav1.PatchOptions{})
		return err
	})
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(acceptedAt) == accepted+1, nil
	}); err != nil {
		b.Fatalf("%s: not every cluster HubAccepted after 5 minutes", prefix)
	}
	all := time.Since(begin)
	b.StopTimer()
	mu.Lock()
	var lat []time.Duration
	for i := 1; i <= accepted; i++ {
		lat = append(lat, acceptedAt[name(i)].Sub(patched[i]))
	}
	mu.Unlock()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	res := workResult{all: all, p50: lat[len(lat)*50/100], p99: lat[(len(lat)*99+99)/100-1]}
	b.Logf("%s: %d clusters all HubAccepted in %s; accept -> HubAccepted p50 %s p99 %s", prefix, accepted,
		all.Round(time.Millisecond), res.p50.Round(time.Millisecond), res.p99.Round(time.Millisecond))
	stop()
	return res
}
