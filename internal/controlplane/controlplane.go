package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"flotilla.dev/flotilla/internal/pki"
)

// Config describes one control plane. Zero values take the documented defaults.
type Config struct {
	// Name identifies the control plane in messages and in its kubeconfig ("hub",
	// "cluster1", ...). Required.
	Name string
	// Dir holds everything the control plane keeps (PKI, etcd data, logs,
	// kubeconfigs, state). Required. Reusing a Dir restarts on the same data.
	Dir string
	// Binaries to run. Default: FindBinaries("").
	Binaries Binaries
	// Ports to listen on (all on 127.0.0.1). Zero ports are picked free, except
	// that a restart on an existing Dir reuses the ports it had.
	Ports Ports
	// Detached processes outlive this program (for `flotilla dev up`); attached
	// ones (the default, for tests) are killed when it dies.
	Detached bool
	// FastEtcd turns off etcd's fsync: much faster, but data may be lost on a
	// machine crash. For tests only. Default false.
	FastEtcd bool
	// StartTimeout bounds the wait for every component to be ready. Default 2m.
	StartTimeout time.Duration
	// Progress, when set, receives one line per step for a person to read.
	Progress func(format string, args ...any)
	// Address is the IP the kube-apiserver listens on and advertises. Default
	// 127.0.0.1. With nodes it is an address Pods can reach (the environment's
	// bridge); it is also in the serving certificate, which is made on first start.
	Address string
	// Nodes prepares the control plane for kubelets: kube-scheduler runs too,
	// kube-controller-manager adds the node controllers (CSR approval, node
	// lifecycle, Pod GC), and kube-apiserver accepts bootstrap tokens and talks to
	// kubelets (logs, exec) by InternalIP. Default false (no nodes, no scheduler).
	Nodes bool
}

// Ports are the loopback ports a control plane listens on.
type Ports struct {
	EtcdClient        int `json:"etcdClient"`
	EtcdPeer          int `json:"etcdPeer"`
	APIServer         int `json:"apiServer"`
	ControllerManager int `json:"controllerManager"`
	// Scheduler is 0 when the control plane runs no kube-scheduler (no nodes).
	Scheduler int `json:"scheduler,omitempty"`
}

// ControlPlane is a running control plane.
type ControlPlane struct {
	Name string
	Dir  string
	// URL of the kube-apiserver, https://127.0.0.1:PORT.
	URL   string
	Ports Ports
	// CAPEM is the control plane's CA: it signs the serving certificate, the
	// client certificates the apiserver trusts, and approved
	// kubernetes.io/kube-apiserver-client CSRs (kube-controller-manager's signer).
	CAPEM []byte
	// KubeconfigPath is an admin (system:masters) kubeconfig file.
	KubeconfigPath string
	// Config is the admin rest config.
	Config *rest.Config

	procs []*process // in start order: etcd, kube-apiserver, kube-controller-manager[, kube-scheduler]
	// address is the apiserver's IP (Config.Address).
	address string
}

// state is what Dir/state.json records, so that `flotilla dev` can find a
// detached control plane again.
type state struct {
	Name    string         `json:"name"`
	Ports   Ports          `json:"ports"`
	PIDs    map[string]int `json:"pids"`
	Address string         `json:"address,omitempty"`
}

const (
	compEtcd = "etcd"
	compAPI  = "kube-apiserver"
	compKCM  = "kube-controller-manager"
	compSch  = "kube-scheduler"
)

// components in start order.
var components = []string{compEtcd, compAPI, compKCM, compSch}

// NodeKCMControllers are added to KCMControllers when the control plane has
// nodes: kubelet client CSRs are approved (bootstrap and rotation), nodes that
// stop reporting are marked and their Pods evicted, orphaned Pods are removed,
// Services get their endpoints (webhooks served by Pods).
var NodeKCMControllers = []string{
	"certificatesigningrequest-approving-controller",
	"node-lifecycle-controller",
	"taint-eviction-controller",
	"pod-garbage-collector-controller",
	"endpoints-controller",
	"endpointslice-controller",
}

// KCMControllers are the kube-controller-manager controllers a Flotilla control
// plane runs: client-certificate signing, namespace deletion, garbage collection,
// service accounts and their tokens, and the workload controllers (so that a
// Deployment gets its ReplicaSet even without nodes), and the status controller of
// ValidatingAdmissionPolicies (it reports type-checking warnings).
var KCMControllers = []string{
	"certificatesigningrequest-signing-controller",
	"certificatesigningrequest-cleaner-controller",
	"namespace-controller",
	"garbage-collector-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"root-ca-certificate-publisher-controller",
	"clusterrole-aggregation-controller",
	"deployment-controller",
	"replicaset-controller",
	"job-controller",
	"daemonset-controller",
	"statefulset-controller",
	"validatingadmissionpolicy-status-controller",
}

// Start starts (or restarts, on an existing Dir) a control plane and waits until
// etcd, kube-apiserver and kube-controller-manager are all ready.
func Start(ctx context.Context, cfg Config) (*ControlPlane, error) {
	if cfg.Name == "" || cfg.Dir == "" {
		return nil, errors.New("control plane needs a Name and a Dir")
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 2 * time.Minute
	}
	progress := cfg.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	if cfg.Binaries == (Binaries{}) {
		b, err := FindBinaries("")
		if err != nil {
			return nil, err
		}
		cfg.Binaries = b
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	for _, sub := range []string{"pki", "etcd", "logs", "kcm"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, err
		}
	}
	// Ports picked here (not given, not kept from an earlier start) may be
	// picked again when another process takes one before its component binds it.
	fresh := cfg.Ports == (Ports{})
	if prev, err := readState(dir); err == nil {
		fresh = false
		if running := prev.runningComponents(dir); len(running) > 0 {
			return nil, fmt.Errorf("control plane %q in %s is already running (%v); stop it first", cfg.Name, dir, running)
		}
		if cfg.Ports == (Ports{}) {
			cfg.Ports = prev.Ports
		}
	}
	if cfg.Address == "" {
		cfg.Address = "127.0.0.1"
	}
	if net.ParseIP(cfg.Address) == nil {
		return nil, fmt.Errorf("control plane %s: address %q is not an IP", cfg.Name, cfg.Address)
	}
	if cfg.Nodes && cfg.Binaries.Scheduler == "" {
		return nil, fmt.Errorf("control plane %s: nodes need kube-scheduler next to kube-apiserver: run `make controlplane`", cfg.Name)
	}
	ports, err := fillPorts(cfg.Ports, cfg.Nodes)
	if err != nil {
		return nil, err
	}

	cp := &ControlPlane{Name: cfg.Name, Dir: dir, Ports: ports, address: cfg.Address, URL: apiURL(cfg.Address, ports.APIServer)}
	if err := cp.ensurePKI(); err != nil {
		return nil, fmt.Errorf("control plane %s: certificates: %w", cfg.Name, err)
	}

	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	ok := false
	defer func() {
		if !ok {
			_ = cp.Stop()
		}
	}()

	steps := []struct {
		comp  string
		bin   string
		args  func() []string // read when the component starts: ports may have been picked again
		ready func(context.Context) error
	}{
		{compEtcd, cfg.Binaries.Etcd, func() []string { return cp.etcdArgs(cfg.FastEtcd) }, cp.etcdReady},
		{compAPI, cfg.Binaries.APIServer, func() []string {
			args := cp.apiServerArgs()
			if cfg.Nodes {
				args = append(args, cp.apiServerNodeArgs()...)
			}
			return args
		}, cp.apiServerReady},
		{compKCM, cfg.Binaries.ControllerManager, func() []string { return cp.kcmArgs(cfg.Nodes) }, cp.kcmReady},
	}
	if cfg.Nodes {
		steps = append(steps, struct {
			comp  string
			bin   string
			args  func() []string
			ready func(context.Context) error
		}{compSch, cfg.Binaries.Scheduler, cp.schedulerArgs, cp.schedulerReady})
	}
	for _, s := range steps {
		if err := checkPortFree(s.comp, cp.portsOf(s.comp)); err != nil {
			if !fresh {
				return nil, fmt.Errorf("control plane %s: %w", cfg.Name, err)
			}
			if err := cp.repickPorts(s.comp); err != nil {
				return nil, fmt.Errorf("control plane %s: %w", cfg.Name, err)
			}
			progress("%s: a port of %s was taken meanwhile; using %v", cfg.Name, s.comp, cp.portsOf(s.comp))
		}
		progress("%s: starting %s", cfg.Name, s.comp)
		var env []string
		if s.comp == compAPI {
			if env, err = apiServerEnv(); err != nil {
				return nil, fmt.Errorf("control plane %s: %w", cfg.Name, err)
			}
		}
		p, err := startProcess(s.comp, s.bin, s.args(), filepath.Join(dir, "logs", s.comp+".log"), cfg.Detached, env...)
		if err != nil {
			return nil, err
		}
		cp.procs = append(cp.procs, p)
		if err := cp.writeState(); err != nil {
			return nil, err
		}
		if err := waitReady(ctx, p, s.ready); err != nil {
			return nil, fmt.Errorf("control plane %s: %s did not become ready: %w\n--- last lines of %s ---\n%s",
				cfg.Name, s.comp, err, p.logFile, tail(p.logFile, 15))
		}
	}
	if err := cp.publishClusterInfo(ctx); err != nil {
		return nil, fmt.Errorf("control plane %s: %w", cfg.Name, err)
	}
	progress("%s: ready at %s", cfg.Name, cp.URL)
	ok = true
	return cp, nil
}

// Stop ends the control plane's processes (controller-manager, apiserver, etcd),
// keeping its Dir so that it can start again on the same data.
func (cp *ControlPlane) Stop() error {
	var errs []error
	for i := len(cp.procs) - 1; i >= 0; i-- {
		if err := cp.procs[i].stop(15 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Running lists the components still running.
func (cp *ControlPlane) Running() []string {
	var out []string
	for _, p := range cp.procs {
		if p.alive() {
			out = append(out, p.name)
		}
	}
	return out
}

// PIDs maps each component to its process ID.
func (cp *ControlPlane) PIDs() map[string]int {
	out := map[string]int{}
	for _, p := range cp.procs {
		out[p.name] = p.pid
	}
	return out
}

// Attach finds a detached control plane again through its Dir. It does not check
// that the processes still run: see Running.
func Attach(dir string) (*ControlPlane, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	st, err := readState(dir)
	if err != nil {
		return nil, err
	}
	addr := st.Address
	if addr == "" {
		addr = "127.0.0.1"
	}
	cp := &ControlPlane{Name: st.Name, Dir: dir, Ports: st.Ports, address: addr, URL: apiURL(addr, st.Ports.APIServer)}
	for _, comp := range components {
		if pid, ok := st.PIDs[comp]; ok {
			cp.procs = append(cp.procs, &process{name: comp, pid: pid, logFile: filepath.Join(dir, "logs", comp+".log")})
		}
	}
	if err := cp.loadAdmin(); err != nil {
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) writeState() error {
	st := state{Name: cp.Name, Ports: cp.Ports, PIDs: cp.PIDs(), Address: cp.address}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(cp.Dir, "state.json.tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(cp.Dir, "state.json"))
}

func readState(dir string) (*state, error) {
	data, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		return nil, err
	}
	st := &state{}
	if err := json.Unmarshal(data, st); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "state.json"), err)
	}
	return st, nil
}

// runningComponents lists the recorded processes that still run. Each process
// has dir in its command line, so a recycled PID is not taken for ours.
func (st *state) runningComponents(dir string) []string {
	var out []string
	for _, comp := range components {
		if pidAlive(st.PIDs[comp], dir) {
			out = append(out, comp)
		}
	}
	return out
}

func (cp *ControlPlane) portsOf(comp string) []int {
	switch comp {
	case compEtcd:
		return []int{cp.Ports.EtcdClient, cp.Ports.EtcdPeer}
	case compAPI:
		return []int{cp.Ports.APIServer}
	case compSch:
		return []int{cp.Ports.Scheduler}
	default:
		return []int{cp.Ports.ControllerManager}
	}
}

// repickPorts picks new free ports for one component of a fresh control plane.
func (cp *ControlPlane) repickPorts(comp string) error {
	p := cp.Ports
	switch comp {
	case compEtcd:
		p.EtcdClient, p.EtcdPeer = 0, 0
	case compAPI:
		p.APIServer = 0
	case compSch:
		p.Scheduler = 0
	default:
		p.ControllerManager = 0
	}
	p, err := fillPorts(p, cp.Ports.Scheduler != 0)
	if err != nil {
		return err
	}
	if err := checkPortFree(comp, (&ControlPlane{Ports: p}).portsOf(comp)); err != nil {
		return err
	}
	cp.Ports = p
	cp.URL = apiURL(cp.address, p.APIServer)
	if comp == compAPI {
		// The kubeconfigs of the admin, controller-manager and scheduler name the URL.
		return cp.ensurePKI()
	}
	return nil
}

func fillPorts(p Ports, scheduler bool) (Ports, error) {
	want := []*int{&p.EtcdClient, &p.EtcdPeer, &p.APIServer, &p.ControllerManager}
	if scheduler {
		want = append(want, &p.Scheduler)
	}
	for _, port := range want {
		if *port != 0 {
			continue
		}
		free, err := freePort()
		if err != nil {
			return p, err
		}
		*port = free
	}
	return p, nil
}

// freePort picks a free port below the kernel's ephemeral range (32768 and
// up on Linux), where outgoing connections take their local ports: a port
// picked there can be taken by any client between the pick and the bind.
func freePort() (int, error) {
	for range 100 {
		port := 20000 + rand.IntN(12000)
		if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			l.Close()
			return port, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func checkPortFree(comp string, ports []int) error {
	for _, port := range ports {
		// Checked on 127.0.0.1 for every component: the apiserver's ports are
		// picked there too, so a clash shows up either way.
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			return fmt.Errorf("%s needs 127.0.0.1:%d, which another process is using: stop that process "+
				"(`ss -ltnp 'sport = :%d'` shows it), or remove this control plane's data folder to pick new ports", comp, port, port)
		}
		l.Close()
	}
	return nil
}

// waitReady polls ready until it succeeds, the process dies, or ctx ends.
func waitReady(ctx context.Context, p *process, ready func(context.Context) error) error {
	var last error
	for {
		if !p.alive() {
			return fmt.Errorf("%s exited", p.name)
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		last = ready(rctx)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last check: %v)", ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (cp *ControlPlane) etcdReady(ctx context.Context) error {
	return httpOK(ctx, http.DefaultClient, "http://127.0.0.1:"+strconv.Itoa(cp.Ports.EtcdClient)+"/health")
}

func (cp *ControlPlane) apiServerReady(ctx context.Context) error {
	client, err := rest.HTTPClientFor(cp.Config)
	if err != nil {
		return err
	}
	return httpOK(ctx, client, cp.URL+"/readyz")
}

func (cp *ControlPlane) schedulerReady(ctx context.Context) error {
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback health probe only
	return httpOK(ctx, client, "https://127.0.0.1:"+strconv.Itoa(cp.Ports.Scheduler)+"/healthz")
}

// Expected is the number of processes this control plane runs when complete.
func (cp *ControlPlane) Expected() int {
	if cp.Ports.Scheduler != 0 {
		return 4
	}
	return 3
}

// Address is the IP the kube-apiserver listens on.
func (cp *ControlPlane) Address() string { return cp.address }

func apiURL(addr string, port int) string {
	return "https://" + net.JoinHostPort(addr, strconv.Itoa(port))
}

func (cp *ControlPlane) kcmReady(ctx context.Context) error {
	// The controller-manager serves a self-signed certificate of its own.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback health probe only
	return httpOK(ctx, client, "https://127.0.0.1:"+strconv.Itoa(cp.Ports.ControllerManager)+"/healthz")
}

func httpOK(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	return nil
}

// Clientset returns a typed admin client.
func (cp *ControlPlane) Clientset() (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(cp.Config)
}

// writeKubeconfig writes an admin kubeconfig for user with embedded credentials.
func writeKubeconfig(path, name, server string, caPEM, certPEM, keyPEM []byte) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[name+"-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name + "-admin"}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, path)
}

// adminPKI reads the CA and the admin key pair written by ensurePKI.
func (cp *ControlPlane) loadAdmin() error {
	p := cp.pkiPath
	ca, err := os.ReadFile(p("ca.crt"))
	if err != nil {
		return err
	}
	cert, err := os.ReadFile(p("admin.crt"))
	if err != nil {
		return err
	}
	key, err := os.ReadFile(p("admin.key"))
	if err != nil {
		return err
	}
	cp.CAPEM = ca
	cp.KubeconfigPath = filepath.Join(cp.Dir, "admin.kubeconfig")
	cp.Config = &rest.Config{
		Host:            cp.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca, CertData: cert, KeyData: key},
		QPS:             200,
		Burst:           400,
	}
	return writeKubeconfig(cp.KubeconfigPath, cp.Name, cp.URL, ca, cert, key)
}

func (cp *ControlPlane) pkiPath(name string) string { return filepath.Join(cp.Dir, "pki", name) }

// ensurePKI creates the CA and certificates on first start and reuses them after.
func (cp *ControlPlane) ensurePKI() error {
	p := cp.pkiPath
	var ca *pki.CA
	if _, err := os.Stat(p("ca.key")); err == nil {
		if ca, err = pki.LoadCA(p("ca.crt"), p("ca.key")); err != nil {
			return err
		}
	} else {
		var err error
		if ca, err = pki.NewCA("flotilla-"+cp.Name+"-ca", 10*365*24*time.Hour); err != nil {
			return err
		}
		if err := pki.WriteFiles(filepath.Join(cp.Dir, "pki"), "ca", ca.CertPEM, ca.KeyPEM); err != nil {
			return err
		}
		issue := []struct {
			file string
			req  pki.CertRequest
		}{
			{"apiserver", pki.CertRequest{
				CommonName: "kube-apiserver",
				DNSNames:   []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
				IPs:        apiserverIPs(cp.address),
			}},
			{"admin", pki.CertRequest{CommonName: "flotilla-admin", Organizations: []string{"system:masters"}, Client: true}},
			// The controller-manager acts for the whole control plane; on this
			// single-machine control plane it gets admin rights rather than one
			// service account per controller.
			{"kcm", pki.CertRequest{CommonName: "system:kube-controller-manager", Organizations: []string{"system:masters"}, Client: true}},
			// The scheduler likewise; the apiserver's client for kubelets (logs, exec).
			{"scheduler", pki.CertRequest{CommonName: "system:kube-scheduler", Organizations: []string{"system:masters"}, Client: true}},
			{"apiserver-kubelet-client", pki.CertRequest{CommonName: "kube-apiserver-kubelet-client", Organizations: []string{"system:masters"}, Client: true}},
		}
		for _, c := range issue {
			kp, err := ca.Issue(c.req)
			if err != nil {
				return err
			}
			if err := pki.WriteFiles(filepath.Join(cp.Dir, "pki"), c.file, kp.CertPEM, kp.KeyPEM); err != nil {
				return err
			}
		}
		priv, pub, err := pki.NewSigningKey()
		if err != nil {
			return err
		}
		if err := os.WriteFile(p("sa.key"), priv, 0o600); err != nil {
			return err
		}
		if err := os.WriteFile(p("sa.pub"), pub, 0o644); err != nil {
			return err
		}
	}
	if err := cp.ensureFrontProxyPKI(); err != nil {
		return err
	}
	if err := cp.loadAdmin(); err != nil {
		return err
	}
	kcmCert, err := os.ReadFile(p("kcm.crt"))
	if err != nil {
		return err
	}
	kcmKey, err := os.ReadFile(p("kcm.key"))
	if err != nil {
		return err
	}
	if err := writeKubeconfig(filepath.Join(cp.Dir, "kcm", "kubeconfig"), cp.Name, cp.URL, ca.CertPEM, kcmCert, kcmKey); err != nil {
		return err
	}
	if err := cp.checkServingAddress(); err != nil {
		return err
	}
	schCert, errC := os.ReadFile(p("scheduler.crt"))
	schKey, errK := os.ReadFile(p("scheduler.key"))
	if errC != nil || errK != nil {
		return nil // a control plane made before schedulers existed runs without one
	}
	if err := os.MkdirAll(filepath.Join(cp.Dir, "scheduler"), 0o700); err != nil {
		return err
	}
	return writeKubeconfig(filepath.Join(cp.Dir, "scheduler", "kubeconfig"), cp.Name, cp.URL, ca.CertPEM, schCert, schKey)
}

// apiserverIPs are the serving certificate's IP SANs: loopback, the first
// Service IP (in-cluster clients) and the listen address.
func apiserverIPs(addr string) []net.IP {
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")}
	if ip := net.ParseIP(addr); ip != nil && !ip.IsLoopback() {
		ips = append(ips, ip)
	}
	return ips
}

// checkServingAddress refuses to serve on an address the certificate (made on
// first start) does not name.
func (cp *ControlPlane) checkServingAddress() error {
	data, err := os.ReadFile(cp.pkiPath("apiserver.crt"))
	if err != nil {
		return err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return fmt.Errorf("%s holds no PEM certificate", cp.pkiPath("apiserver.crt"))
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return fmt.Errorf("%s: %w", cp.pkiPath("apiserver.crt"), err)
	}
	ip := net.ParseIP(cp.address)
	for _, san := range cert.IPAddresses {
		if san.Equal(ip) {
			return nil
		}
	}
	return fmt.Errorf("the apiserver certificate in %s was made for other addresses than %s: this control plane cannot move; remove its folder to start afresh",
		cp.pkiPath("apiserver.crt"), cp.address)
}

// FrontProxyClientName is the common name of the front-proxy client
// certificate the apiserver presents to aggregated API servers (its
// --requestheader-allowed-names).
const FrontProxyClientName = "front-proxy-client"

// ensureFrontProxyPKI makes the front-proxy CA and the apiserver's client
// certificate signed by it, when missing (a control plane made before they
// existed gets them on its next start). An aggregated API server trusts the
// X-Remote-* identity headers only from a client certificate this CA signed.
func (cp *ControlPlane) ensureFrontProxyPKI() error {
	p := cp.pkiPath
	if _, err := os.Stat(p("front-proxy-client.key")); err == nil {
		return nil
	}
	ca, err := pki.NewCA("flotilla-"+cp.Name+"-front-proxy-ca", 10*365*24*time.Hour)
	if err != nil {
		return err
	}
	kp, err := ca.Issue(pki.CertRequest{CommonName: FrontProxyClientName, Client: true, Validity: 10 * 365 * 24 * time.Hour})
	if err != nil {
		return err
	}
	dir := filepath.Join(cp.Dir, "pki")
	if err := pki.WriteFiles(dir, "front-proxy-ca", ca.CertPEM, ca.KeyPEM); err != nil {
		return err
	}
	return pki.WriteFiles(dir, "front-proxy-client", kp.CertPEM, kp.KeyPEM)
}
