package registration

import (
	"context"
	"crypto/rand"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"flotilla.dev/flotilla/internal/tolerant"
)

// Agent is one registration agent. Create it with New and start it with Run.
type Agent struct {
	opts  Options
	spoke kubernetes.Interface
	// spokeClusters reads ClusterClaims on the managed cluster.
	spokeClusters clusterclient.Interface
	clusterID     string
	log           klog.Logger
	// renewed is the lease as the agent last renewed it (stayJoined's
	// goroutine only), nil when it must be read first.
	renewed *coordinationv1.Lease

	mu        sync.Mutex
	agentName string
	hubConfig *rest.Config
	// hub is the connection pool every hub client of the agent and of the
	// klusterlet shares (one per hub address and CA).
	hub    *hubTransport
	joined chan struct{}

	// view is what the agent follows on the hub once joined (hubview.go);
	// statusKick and addonKick start a status or addon round at once.
	view                  hubView
	statusKick, addonKick chan struct{}
	reportMu              sync.Mutex
	reported              reported
}

// New validates opts and connects to the managed cluster.
func New(opts Options) (*Agent, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if opts.HubKubeconfigDir == "" {
		dir, err := os.MkdirTemp("", "flotilla-hub-kubeconfig-")
		if err != nil {
			return nil, err
		}
		opts.HubKubeconfigDir = dir
	}
	spoke, err := kubernetes.NewForConfig(withRate(opts.SpokeConfig))
	if err != nil {
		return nil, fmt.Errorf("managed cluster client: %w", err)
	}
	// A ClusterClaim that cannot be decoded must not hide the others.
	claimScheme := runtime.NewScheme()
	if err := clusterv1alpha1.Install(claimScheme); err != nil {
		return nil, err
	}
	skip, err := tolerant.New(tolerant.Options{Scheme: claimScheme,
		Log: klog.Background().WithValues("cluster", opts.ClusterName).WithName("undecodable-on-cluster")})
	if err != nil {
		return nil, err
	}
	spokeClusters, err := clusterclient.NewForConfig(skip.Wrap(withRate(opts.SpokeConfig)))
	if err != nil {
		return nil, fmt.Errorf("managed cluster client: %w", err)
	}
	return &Agent{opts: opts, spoke: spoke, spokeClusters: spokeClusters, joined: make(chan struct{}),
		statusKick: make(chan struct{}, 1), addonKick: make(chan struct{}, 1),
		log: klog.Background().WithValues("cluster", opts.ClusterName)}, nil
}

// WaitJoined blocks until the agent holds a hub credential and returns a
// rest.Config over the agent's own connections to the hub, which present its
// current certificate (a rotated one from the moment it is issued), and the
// agent name.
func (a *Agent) WaitJoined(ctx context.Context) (*rest.Config, string, error) {
	select {
	case <-ctx.Done():
		return nil, "", ctx.Err()
	case <-a.joined:
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return rest.CopyConfig(a.hubConfig), a.agentName, nil
}

// hubCredential makes data's certificate the one the agent's hub transport
// presents (a transport for data's hub address and CA, made on first use)
// and returns a config over it.
func (a *Agent) hubCredential(data map[string][]byte) (*rest.Config, error) {
	server, ca, err := hubServer(data[KeyKubeconfig])
	if err != nil {
		return nil, fmt.Errorf("stored hub kubeconfig: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.hub == nil || !a.hub.serves(server, ca) {
		// A hub with another address or CA (the agent bootstrapped against a
		// rebuilt hub): clients holding the old config keep the old CA, as
		// they kept the old files' until the klusterlet restarts.
		t, err := newHubTransport(server, ca)
		if err != nil {
			return nil, err
		}
		a.hub = t
	}
	if err := a.hub.set(data[KeyCert], data[KeyKey]); err != nil {
		return nil, err
	}
	return a.hub.config(), nil
}

func (a *Agent) publish(cfg *rest.Config) {
	a.mu.Lock()
	defer a.mu.Unlock()
	first := a.hubConfig == nil
	a.hubConfig = cfg
	if first {
		close(a.joined)
	}
}

func (a *Agent) subject() pkix.Name { return Subject(a.opts.ClusterName, a.agentName) }

// errRebootstrap says the hub credential no longer works.
var errRebootstrap = errors.New("hub credential no longer works; falling back to the bootstrap kubeconfig")

// Run joins the cluster and keeps it joined until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	go a.runHubView(ctx)
	go a.runAddons(ctx)
	for {
		err := a.cycle(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			continue // the certificate was rotated: carry on with the new one
		}
		a.log.Error(err, "registration")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(a.opts.RetryInterval):
		}
	}
}

// cycle: load or obtain a credential, then stay joined until it fails or is
// rotated (nil error).
func (a *Agent) cycle(ctx context.Context) error {
	if a.clusterID == "" {
		ns, err := a.spoke.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("read the managed cluster's kube-system namespace: %w", err)
		}
		a.clusterID = string(ns.UID)
	}
	sec, err := a.loadSecret(ctx)
	if err != nil {
		return err
	}
	if a.agentName == "" {
		a.agentName = a.opts.AgentName
	}
	if a.agentName == "" && string(sec.Data[KeyClusterName]) == a.opts.ClusterName {
		a.agentName = string(sec.Data[KeyAgentName])
	}
	if a.agentName == "" {
		a.agentName = randomName()
	}
	data, issued := sec.Data, false
	if !a.usable(data) {
		a.log.Info("no usable hub credential; bootstrapping", "agent", a.agentName)
		if data, err = a.bootstrap(ctx); err != nil {
			return err
		}
		issued = true
	}
	cfg, err := a.hubCredential(data)
	if err != nil {
		return err
	}
	// A stored credential is checked with the hub first (it may have been
	// revoked, or the hub's CA changed); one the hub has just issued for this
	// key is not: that round trip was on every join's path. Should it fail
	// all the same, stayJoined's first failing round finds out.
	if !issued {
		ok, err := a.works(ctx, cfg)
		if err != nil {
			return err
		}
		if !ok {
			a.log.Info("stored hub credential is rejected by the hub; bootstrapping")
			if err := a.forgetCredential(ctx); err != nil {
				return err
			}
			return errRebootstrap
		}
	}
	// The files are for whoever reads the hub kubeconfig outside this
	// process; the klusterlet's own clients use the shared transport.
	if err := writeCredentialFiles(a.opts.HubKubeconfigDir, data); err != nil {
		return err
	}
	a.publish(cfg)
	err = a.stayJoined(ctx, cfg)
	if errors.Is(err, errRebootstrap) {
		if ferr := a.forgetCredential(ctx); ferr != nil {
			return ferr
		}
	}
	return err
}

// usable: the secret holds a certificate for this cluster and agent that is
// valid now.
func (a *Agent) usable(data map[string][]byte) bool {
	return string(data[KeyClusterName]) == a.opts.ClusterName && len(data[KeyKubeconfig]) > 0 && len(data[KeyKey]) > 0 &&
		validFor(data[KeyCert], a.subject(), time.Now())
}

// works asks the hub who this credential is. A rejected or unverifiable
// credential (expired, revoked CA, changed hub CA) gives false; an unreachable
// hub gives an error (try again later, keep the credential).
func (a *Agent) works(ctx context.Context, cfg *rest.Config) (bool, error) {
	cs, err := kubernetes.NewForConfig(withTimeout(cfg))
	if err != nil {
		return false, err
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	switch {
	case err == nil:
		return review.Status.UserInfo.Username == a.subject().CommonName, nil
	case rejects(err):
		return false, nil
	case apierrors.IsForbidden(err):
		// Every authenticated user may ask who it is (system:basic-user): a
		// 403 says the hub authenticated the credential but its authorizer
		// does not serve the question (a hub apiserver that has just
		// restarted refuses for a few seconds while it loads RBAC; an admin
		// may have removed system:basic-user). The credential is kept: giving
		// it up sent the agent back to its bootstrap token, which may have
		// expired (test/chaos, the hub-etcd fault). It is given up on 401.
		a.log.Info("the hub authenticated the stored credential but refuses to say whose it is; keeping it", "error", err.Error())
		return true, nil
	default:
		return false, fmt.Errorf("reach the hub: %w", err)
	}
}

// withTimeout bounds each request and lifts client-go's default rate limit.
func withTimeout(cfg *rest.Config) *rest.Config {
	c := withRate(cfg)
	c.Timeout = 15 * time.Second
	return c
}

// withRate raises client-go's default 5 QPS / burst 10, which made the agent's
// first status report wait a second behind its own bootstrap requests. The agent
// makes a handful of requests per status interval; the limit only guards bursts.
func withRate(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	if c.QPS <= 0 {
		c.QPS, c.Burst = 20, 40
	}
	return c
}

func (a *Agent) loadSecret(ctx context.Context) (*corev1.Secret, error) {
	sec, err := a.spoke.CoreV1().Secrets(a.opts.AgentNamespace).Get(ctx, HubKubeconfigSecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: HubKubeconfigSecret, Namespace: a.opts.AgentNamespace}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read secret %s/%s on the managed cluster: %w", a.opts.AgentNamespace, HubKubeconfigSecret, err)
	}
	return sec, nil
}

// saveSecret merges data into hub-kubeconfig-secret (nil values delete keys).
func (a *Agent) saveSecret(ctx context.Context, data map[string][]byte) error {
	for attempt := 0; ; attempt++ {
		sec, err := a.loadSecret(ctx)
		if err != nil {
			return err
		}
		if sec.Data == nil {
			sec.Data = map[string][]byte{}
		}
		for k, v := range data {
			if v == nil {
				delete(sec.Data, k)
			} else {
				sec.Data[k] = v
			}
		}
		sec.Data[KeyClusterName] = []byte(a.opts.ClusterName)
		sec.Data[KeyAgentName] = []byte(a.agentName)
		secrets := a.spoke.CoreV1().Secrets(a.opts.AgentNamespace)
		if sec.ResourceVersion == "" {
			_, err = secrets.Create(ctx, sec, metav1.CreateOptions{})
		} else {
			_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
		}
		if (apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) && attempt < 5 {
			continue
		}
		if err != nil {
			return fmt.Errorf("write secret %s/%s on the managed cluster: %w", a.opts.AgentNamespace, HubKubeconfigSecret, err)
		}
		return nil
	}
}

// forgetCredential drops the certificate (keeping agent name) so the next cycle bootstraps.
func (a *Agent) forgetCredential(ctx context.Context) error {
	return a.saveSecret(ctx, map[string][]byte{KeyCert: nil, KeyKey: nil, KeyKubeconfig: nil})
}

// bootstrapConfig reads the bootstrap kubeconfig (option, else the secret).
func (a *Agent) bootstrapConfig(ctx context.Context) (*rest.Config, []byte, error) {
	kc := a.opts.BootstrapKubeconfig
	if len(kc) == 0 {
		sec, err := a.spoke.CoreV1().Secrets(a.opts.AgentNamespace).Get(ctx, BootstrapKubeconfigSecret, metav1.GetOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("read bootstrap kubeconfig secret %s/%s on the managed cluster (run `flotilla join` first): %w", a.opts.AgentNamespace, BootstrapKubeconfigSecret, err)
		}
		kc = sec.Data["kubeconfig"]
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		return nil, nil, fmt.Errorf("bootstrap kubeconfig: %w", err)
	}
	return cfg, kc, nil
}

func randomName() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
