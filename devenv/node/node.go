package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"flotilla.dev/flotilla/devenv/host"
	"flotilla.dev/flotilla/internal/controlplane"
)

// Config describes one node. All fields are required unless documented.
type Config struct {
	// Index of the node in the plan (0 the hub, i the i-th managed cluster).
	Index int
	// Name of the Node object.
	Name string
	// Dir holds everything of the node (containerd's root and state, kubelet's
	// root, certificates, logs, state.json).
	Dir  string
	Plan Plan
	// APIServer is the cluster's apiserver URL (on Plan.HostIP) and CAPEM its CA.
	APIServer string
	CAPEM     []byte
	// Token is a bootstrap token of the cluster (see PrepareCluster); needed
	// only until the kubelet holds its certificate.
	Token string
	// Kubelet is the kubelet binary.
	Kubelet string
	// SandboxImage is the pause image each Pod's sandbox runs; Archives are
	// image archives imported into the node's containerd (one must hold it).
	SandboxImage string
	Archives     []string
	// Journal records the host changes. Required.
	Journal *host.Journal
	// Progress receives one line per step. Default: discarded.
	Progress func(format string, args ...any)
}

// state is Dir/state.json.
type state struct {
	Containerd int `json:"containerd"`
	Kubelet    int `json:"kubelet"`
}

func readState(dir string) (state, error) {
	var st state
	data, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(data, &st)
}

func writeState(dir string, st state) error {
	data, _ := json.Marshal(st)
	return os.WriteFile(filepath.Join(dir, "state.json"), data, 0o644)
}

// PIDs of the node's processes that run.
func PIDs(dir string) map[string]int {
	out := map[string]int{}
	st, err := readState(dir)
	if err != nil {
		return out
	}
	ctrd, kubelet := Running(dir)
	if ctrd {
		out["containerd"] = st.Containerd
	}
	if kubelet {
		out["kubelet"] = st.Kubelet
	}
	return out
}

// Running reports which of the node's processes run.
func Running(dir string) (containerd, kubelet bool) {
	st, err := readState(dir)
	if err != nil {
		return false, false
	}
	p := Paths{Dir: dir}
	return controlplane.PIDRunning(st.Containerd, p.ContainerdConfig()), controlplane.PIDRunning(st.Kubelet, p.KubeletConfig())
}

// hostChanges records (and makes) every host change of the node before anything runs.
func (c *Config) hostChanges(apiPort int) error {
	j, p, i := c.Journal, Paths{Dir: c.Dir}, c.Index
	steps := []func() error{
		func() error { return j.EnsureAddr(c.Plan.Bridge(), c.Plan.NodeIP(i)+"/16") },
		func() error { return j.EnsureCgroup(c.Plan.CgroupRoot(i)) },
		// What the CNI bridge plugin, libcni, containerd and the kubelet make.
		func() error { return j.KeepSysctl("net.ipv4.ip_forward") },
		func() error { return j.ForeignLink(c.Plan.PodBridge(i)) },
		func() error { return j.EnsureDir("/var/lib/cni") },
		func() error { return j.EnsureDir("/var/lib/cni/results") },
		func() error { return j.Files("/var/lib/cni/results/" + c.Plan.Network(i) + "-*") },
		func() error { return j.EnsureDir("/var/log/containers") },
		func() error { return j.Symlinks("/var/log/containers", p.PodLogs()) },
		func() error { return j.Mounts(c.Dir) },
		func() error { return j.Procs(p.Socket()) },
		// Pods reach their apiserver at the Service IP.
		func() error {
			return j.EnsureRule("nat", "PREROUTING", "-s", c.Plan.PodCIDR(i), "-d", ServiceIP+"/32", "-p", "tcp", "-m", "tcp", "--dport", "443",
				"-m", "comment", "--comment", "flotilla-"+c.Plan.ID+" "+c.Name+" apiserver",
				"-j", "DNAT", "--to-destination", net.JoinHostPort(c.Plan.HostIP(), strconv.Itoa(apiPort)))
		},
	}
	for _, key := range kubeletSysctls {
		steps = append(steps, func() error { return j.KeepSysctl(key) })
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}

// kubeletSysctls are the kernel settings the kubelet sets at start.
var kubeletSysctls = []string{"vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops", "kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes"}

// Start starts the node's containerd and kubelet (those not running) and
// returns once the Node is Ready.
func Start(ctx context.Context, c Config) error {
	progress := c.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	p := Paths{Dir: c.Dir}
	if err := checkSocketPath(p); err != nil {
		return err
	}
	u, err := parsePort(c.APIServer)
	if err != nil {
		return err
	}
	// The node's directory is root's alone: its kubelet's credentials, the
	// Pods' Secret volumes and logs live under it. What is inside keeps the
	// modes the kubelet and containerd give it.
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(p.Dir, 0o700); err != nil { // made before this rule
		return err
	}
	for _, d := range []string{p.Containerd(), p.CNIConfDir(), p.IPAMDir(), p.Kubelet(), p.CertDir(), p.PodLogs(), p.Logs()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := c.hostChanges(u); err != nil {
		return fmt.Errorf("node %s: %w", c.Name, err)
	}
	cni, err := cniConfig(p, c.Plan.Network(c.Index), c.Plan.PodBridge(c.Index), c.Plan.PodCIDR(c.Index))
	if err != nil {
		return err
	}
	files := map[string][]byte{
		p.ContainerdConfig(): []byte(containerdConfig(p, c.SandboxImage)),
		filepath.Join(p.CNIConfDir(), "10-flotilla.conflist"): cni,
		p.KubeletConfig(): []byte(kubeletConfig(p, c.Plan.NodeIP(c.Index), c.Plan.CgroupRoot(c.Index))),
		p.ResolvConf():    []byte("# Pods of flotilla dev nodes have no DNS server\n"),
		p.ClientCA():      c.CAPEM,
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	st, _ := readState(c.Dir)
	ctrdUp, kubeletUp := Running(c.Dir)
	if !ctrdUp {
		progress("%s: starting containerd (socket %s)", c.Name, p.Socket())
		// No image is ever pulled from outside: any pull goes to a proxy that is not there.
		pid, err := controlplane.StartDetachedEnv("containerd", "containerd", []string{"--config", p.ContainerdConfig()},
			[]string{"HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9", "NO_PROXY=", "http_proxy=http://127.0.0.1:9", "https_proxy=http://127.0.0.1:9", "no_proxy="},
			filepath.Join(p.Logs(), "containerd.log"))
		if err != nil {
			return err
		}
		st.Containerd = pid
		if err := writeState(c.Dir, st); err != nil {
			return err
		}
		if err := waitContainerd(ctx, p, pid); err != nil {
			return fmt.Errorf("node %s: %w\n--- last lines of %s ---\n%s", c.Name, err, filepath.Join(p.Logs(), "containerd.log"), controlplane.Tail(filepath.Join(p.Logs(), "containerd.log"), 15))
		}
	}
	for _, a := range c.Archives {
		progress("%s: importing %s", c.Name, filepath.Base(a))
		if out, err := exec.CommandContext(ctx, "ctr", "--address", p.Socket(), "-n", "k8s.io", "images", "import", a).CombinedOutput(); err != nil {
			return fmt.Errorf("node %s: import %s: %w: %s", c.Name, a, err, strings.TrimSpace(string(out)))
		}
	}
	if !kubeletUp {
		if err := writeKubeconfigs(p, c); err != nil {
			return err
		}
		progress("%s: starting kubelet (node IP %s, Pods on %s)", c.Name, c.Plan.NodeIP(c.Index), c.Plan.PodCIDR(c.Index))
		pid, err := controlplane.StartDetached("kubelet", c.Kubelet, []string{
			"--config=" + p.KubeletConfig(),
			"--kubeconfig=" + p.Kubeconfig(),
			"--bootstrap-kubeconfig=" + p.Bootstrap(),
			"--cert-dir=" + p.CertDir(),
			"--root-dir=" + p.Kubelet(),
			"--hostname-override=" + c.Name,
			"--node-ip=" + c.Plan.NodeIP(c.Index),
			"--v=1",
		}, filepath.Join(p.Logs(), "kubelet.log"))
		if err != nil {
			return err
		}
		st.Kubelet = pid
		if err := writeState(c.Dir, st); err != nil {
			return err
		}
	}
	return nil
}

// WaitReady waits until the Node reports Ready (or the kubelet dies).
func WaitReady(ctx context.Context, c Config, admin kubernetes.Interface, timeout time.Duration) error {
	p := Paths{Dir: c.Dir}
	// A resumed node still shows the Ready of before: wait for a heartbeat from now.
	since := metav1.NewTime(time.Now().Add(-time.Second).Truncate(time.Second))
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, err := readState(c.Dir)
	if err != nil {
		return err
	}
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		// By PID alone: a process that has just been started may not show its
		// command line yet (the exec is still setting it up).
		if !controlplane.PIDRunning(st.Kubelet, "") {
			return false, errors.New("the kubelet exited")
		}
		n, err := admin.CoreV1().Nodes().Get(ctx, c.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue && !cond.LastHeartbeatTime.Before(&since) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("node %s did not become Ready within %s: %w\n--- last lines of %s ---\n%s", c.Name, timeout, err,
			filepath.Join(p.Logs(), "kubelet.log"), controlplane.Tail(filepath.Join(p.Logs(), "kubelet.log"), 20))
	}
	return nil
}

func parsePort(url string) (int, error) {
	i := strings.LastIndex(url, ":")
	if i < 0 {
		return 0, fmt.Errorf("apiserver URL %q has no port", url)
	}
	return strconv.Atoi(url[i+1:])
}

func waitContainerd(ctx context.Context, p Paths, pid int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if !controlplane.PIDRunning(pid, "") {
			return false, errors.New("containerd exited")
		}
		return exec.CommandContext(ctx, "ctr", "--address", p.Socket(), "version").Run() == nil, nil
	})
}

// writeKubeconfigs writes the bootstrap kubeconfig (bootstrap token) the kubelet
// uses to ask for its certificate; the kubelet writes kubelet.kubeconfig itself.
func writeKubeconfigs(p Paths, c Config) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = &clientcmdapi.Cluster{Server: c.APIServer, CertificateAuthorityData: c.CAPEM}
	cfg.AuthInfos["kubelet-bootstrap"] = &clientcmdapi.AuthInfo{Token: c.Token}
	cfg.Contexts["bootstrap"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "kubelet-bootstrap"}
	cfg.CurrentContext = "bootstrap"
	return clientcmd.WriteToFile(*cfg, p.Bootstrap())
}

// Stop stops the kubelet, removes every Pod sandbox (containers, Pod network,
// mounts) through the CRI, then stops containerd. It reports what it stopped.
func Stop(ctx context.Context, dir string) ([]string, error) {
	st, err := readState(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p := Paths{Dir: dir}
	var stopped []string
	var errs []error
	if controlplane.PIDRunning(st.Kubelet, p.KubeletConfig()) {
		if err := controlplane.StopPID("kubelet", st.Kubelet, 15*time.Second); err != nil {
			errs = append(errs, err)
		} else {
			stopped = append(stopped, "kubelet")
		}
	}
	if controlplane.PIDRunning(st.Containerd, p.ContainerdConfig()) {
		if err := removeSandboxes(ctx, p.Socket()); err != nil {
			errs = append(errs, err)
		}
		if err := controlplane.StopPID("containerd", st.Containerd, 15*time.Second); err != nil {
			errs = append(errs, err)
		} else {
			stopped = append(stopped, "containerd")
		}
	}
	return stopped, errors.Join(errs...)
}
