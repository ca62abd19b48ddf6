package registration_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/hub/registration/accept"
	"flotilla.dev/flotilla/klusterlet"
	"flotilla.dev/flotilla/klusterlet/join"
	"flotilla.dev/flotilla/klusterlet/registration"
	"flotilla.dev/flotilla/test/testenv"
)

const (
	timeout = 90 * time.Second
	tick    = 200 * time.Millisecond
)

// agent is one klusterlet running in-process for a test.
type agent struct {
	t         *testing.T
	spoke     *testenv.ControlPlane
	name, ns  string
	opts      klusterlet.Options
	cancel    context.CancelFunc
	done      chan struct{}
	startOnce sync.Mutex
}

// newAgent joins cluster `name` from spoke (agent namespace ns) through the real
// `join` path (CA from cluster-info, token check) and returns an agent not yet started.
func newAgent(t *testing.T, spoke *testenv.ControlPlane, name, ns string, tune ...func(*registration.Options)) *agent {
	t.Helper()
	require.NoError(t, join.Join(context.Background(), join.Options{
		SpokeConfig: spoke.Config, HubAPIServer: env.Hub.URL, HubToken: token,
		ClusterName: name, AgentNamespace: ns, NoDeployment: true,
	}))
	ro := registration.Options{
		ClusterName: name, AgentNamespace: ns, SpokeConfig: spoke.Config, HubKubeconfigDir: t.TempDir(),
		LeaseDurationSeconds: 1, StatusSyncInterval: time.Second, RetryInterval: time.Second,
	}
	for _, f := range tune {
		f(&ro)
	}
	a := &agent{t: t, spoke: spoke, name: name, ns: ns, opts: klusterlet.Options{Registration: ro, DisableWork: true}}
	t.Cleanup(a.stop)
	return a
}

func (a *agent) start() *agent {
	a.startOnce.Lock()
	defer a.startOnce.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel, a.done = cancel, make(chan struct{})
	go func() {
		defer close(a.done)
		if err := klusterlet.Run(ctx, a.opts); err != nil {
			a.t.Errorf("klusterlet %s: %v", a.name, err)
		}
	}()
	return a
}

func (a *agent) stop() {
	a.startOnce.Lock()
	defer a.startOnce.Unlock()
	if a.cancel != nil {
		a.cancel()
		<-a.done
		a.cancel = nil
	}
}

// credential is the cluster's own hub credential, read from hub-kubeconfig-secret.
func (a *agent) credential() *rest.Config {
	a.t.Helper()
	sec, err := kube(a.spoke.Config).CoreV1().Secrets(a.ns).Get(context.Background(), registration.HubKubeconfigSecret, metav1.GetOptions{})
	require.NoError(a.t, err)
	for _, k := range []string{"kubeconfig", "tls.crt", "tls.key", "cluster-name", "agent-name"} {
		require.NotEmpty(a.t, sec.Data[k], "hub-kubeconfig-secret key %s", k)
	}
	kc, err := clientcmd.Load(sec.Data["kubeconfig"])
	require.NoError(a.t, err)
	hub := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]
	return &rest.Config{Host: hub.Server, TLSClientConfig: rest.TLSClientConfig{
		CAData: hub.CertificateAuthorityData, CertData: sec.Data["tls.crt"], KeyData: sec.Data["tls.key"]}}
}

func kube(cfg *rest.Config) kubernetes.Interface { return kubernetes.NewForConfigOrDie(cfg) }

func clusters(cfg *rest.Config) clusterclient.Interface { return clusterclient.NewForConfigOrDie(cfg) }

func hubCluster(t *testing.T, name string) *clusterv1.ManagedCluster {
	t.Helper()
	mc, err := clusters(env.Hub.Config).ClusterV1().ManagedClusters().Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return mc
}

func acceptClusters(t *testing.T, names ...string) {
	t.Helper()
	require.NoError(t, accept.Accept(context.Background(), accept.Options{Config: env.Hub.Config, Clusters: names, Wait: true, Timeout: timeout}))
}

// waitCondition waits until the cluster's condition has status (and reason, if given).
func waitCondition(t *testing.T, name, condType string, status metav1.ConditionStatus, reason ...string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		mc := hubCluster(t, name)
		if !assert.NotNil(c, mc) {
			return
		}
		cond := meta.FindStatusCondition(mc.Status.Conditions, condType)
		if assert.NotNil(c, cond, "condition %s", condType) {
			assert.Equal(c, status, cond.Status, "%s: %s", condType, cond.Message)
			if len(reason) > 0 {
				assert.Equal(c, reason[0], cond.Reason)
			}
		}
	}, timeout, tick)
}

func clusterCSRs(t *testing.T, name string) []certificatesv1.CertificateSigningRequest {
	t.Helper()
	list, err := kube(env.Hub.Config).CertificatesV1().CertificateSigningRequests().List(context.Background(),
		metav1.ListOptions{LabelSelector: "open-cluster-management.io/cluster-name=" + name})
	require.NoError(t, err)
	return list.Items
}

func approved(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved {
			return true
		}
	}
	return false
}

func hasTaint(mc *clusterv1.ManagedCluster, key string) bool {
	for _, t := range mc.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
