package hubrbac_test

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/hub"
	"flotilla.dev/flotilla/hub/deploy"
	"flotilla.dev/flotilla/internal/aggregated"
	"flotilla.dev/flotilla/internal/pki"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/policy/compliance/apigroup"
	"flotilla.dev/flotilla/policy/compliance/history"
	"flotilla.dev/flotilla/policy/compliance/web"
	"flotilla.dev/flotilla/test/testenv"
)

// TestAggregatedAPIWithShippedRBAC: the aggregated API as the hub Pods
// serve it (behind the Service of manifests/hub, with no Service or
// EndpointSlice of its own), run as the hub's ServiceAccount with exactly the
// shipped RBAC, reads the front-proxy settings, writes the reader ClusterRole
// of every resource of compliance.flotilla.dev (it must hold each to bind it)
// and the APIService; with the Service's endpoint at this host (as the
// EndpointSlice controller writes a Pod's), the APIService turns Available
// and every resource answers through the hub apiserver.
func TestAggregatedAPIWithShippedRBAC(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := testenv.Start(t, testenv.Options{})
	objs, err := deploy.Render(deploy.Options{Image: "flotilla.local/unused:1"})
	require.NoError(t, err)
	admin, err := client.New(env.Hub.Config, client.Options{})
	require.NoError(t, err)
	for _, obj := range objs {
		if obj.GetKind() != "Deployment" {
			require.NoError(t, admin.Create(ctx, obj), "%s %s", obj.GetKind(), obj.GetName())
		}
	}
	hubIdentity := rest.CopyConfig(env.Hub.Config)
	hubIdentity.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + deploy.Namespace + ":" + deploy.Name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + deploy.Namespace, "system:authenticated"},
	}

	// A Pod's address, as the EndpointSlice controller gives the Service's
	// named ports: this host, on a port of its own for "api".
	ip, err := aggregated.HostIP()
	require.NoError(t, err)
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	admincs := kubernetes.NewForConfigOrDie(env.Hub.Config)
	_, err = admincs.DiscoveryV1().EndpointSlices(deploy.Namespace).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: deploy.Name + "-pod", Labels: map[string]string{discoveryv1.LabelServiceName: deploy.Name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip.String()}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("webhook"), Port: ptr.To[int32](9443), Protocol: ptr.To(corev1.ProtocolTCP)},
			{Name: ptr.To("api"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	dir := t.TempDir()
	ca, err := pki.NewCA("flotilla-hub-serving-ca", time.Hour)
	require.NoError(t, err)
	kp, err := ca.Issue(pki.CertRequest{CommonName: deploy.Name, DNSNames: []string{deploy.Name + "." + deploy.Namespace + ".svc"}})
	require.NoError(t, err)
	require.NoError(t, pki.WriteFiles(dir, "serving", kp.CertPEM, kp.KeyPEM))
	store, err := history.OpenSQLite(ctx, filepath.Join(dir, "compliance.db"))
	require.NoError(t, err)
	defer store.Close()
	reader, err := client.New(hubIdentity, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	group, err := apigroup.New(apigroup.Options{Reader: reader, Access: web.NewAuthorizer(kubernetes.NewForConfigOrDie(hubIdentity)), History: store})
	require.NoError(t, err)
	srv, err := aggregated.New(aggregated.Options{Config: hubIdentity, Groups: []aggregated.Group{group},
		BindAddress: net.JoinHostPort(ip.String(), strconv.Itoa(port)), CertFile: filepath.Join(dir, "serving.crt"), KeyFile: filepath.Join(dir, "serving.key"),
		CABundle: ca.CertPEM, Service: types.NamespacedName{Namespace: deploy.Namespace, Name: deploy.Name}, ServicePort: hub.DefaultAPIPort, Log: testr.New(t)})
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Start(ctx) }()

	apis := aggregator.NewForConfigOrDie(env.Hub.Config).ApiregistrationV1().APIServices()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		s, err := apis.Get(ctx, apigroup.APIServiceName, metav1.GetOptions{})
		require.NoError(c, err, "registered as the hub's ServiceAccount")
		for _, cond := range s.Status.Conditions {
			if cond.Type == apiregistrationv1.Available {
				assert.Equal(c, apiregistrationv1.ConditionTrue, cond.Status, "%s: %s", cond.Reason, cond.Message)
				return
			}
		}
		assert.Fail(c, "no Available condition yet")
	}, time.Minute, 200*time.Millisecond)
	_, err = admincs.RbacV1().ClusterRoleBindings().Get(ctx, aggregated.ReaderRoleName(group), metav1.GetOptions{})
	require.NoError(t, err, "the reader ClusterRole bound to system:authenticated")

	api, err := apigroup.NewClient(env.Hub.Config)
	require.NoError(t, err)
	doc, err := api.Report(ctx, nil)
	require.NoError(t, err)
	assert.NotNil(t, doc.Report)
	_, err = api.History(ctx, nil)
	require.NoError(t, err)
	v, err := api.Verify(ctx, "")
	require.NoError(t, err)
	assert.True(t, v.OK())

	cancel()
	require.NoError(t, <-served)
	_, err = apis.Get(context.Background(), apigroup.APIServiceName, metav1.GetOptions{})
	require.NoError(t, err, "Pods behind a Service leave the APIService when they stop")
}
