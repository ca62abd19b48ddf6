//go:build interop && linux

package interop

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// upstream runs the upstream binaries found in .upstream/bin (docs/interop.md).
type upstream struct {
	bin  string // directory with registration, work, clusteradm
	logs string // directory for the processes' logs
}

// clusteradm runs `clusteradm args... --kubeconfig kubeconfig` and returns its output.
func (u upstream) clusteradm(ctx context.Context, kubeconfig string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(u.bin, "clusteradm"), append(args, "--kubeconfig", kubeconfig)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("clusteradm %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// start runs an upstream binary until the test ends; its output goes to
// <logs>/<name>.log, whose path it returns.
func (u upstream) start(t *testing.T, name, binary string, args ...string) string {
	t.Helper()
	log := filepath.Join(u.logs, name+".log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatalf("log for %s: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, filepath.Join(u.bin, binary), args...)
	cmd.Stdout, cmd.Stderr = f, f
	// Dies with the test binary, even when it is killed before its cleanups run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", name, err)
	}
	t.Logf("started %s (pid %d), log %s", name, cmd.Process.Pid, log)
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		f.Close()
	})
	return log
}

// listenFlag is a --listen value on a free local port: upstream's binaries
// serve metrics there (default 0.0.0.0:8443, which two of them cannot share;
// port 0 is refused).
func listenFlag(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// logHas says whether the log at path contains s.
func logHas(path, s string) bool {
	data, err := os.ReadFile(path)
	return err == nil && bytes.Contains(data, []byte(s))
}

// logLines returns the lines of the log at path that contain every one of subs.
func logLines(path string, subs ...string) []string {
	data, _ := os.ReadFile(path)
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(l, s)
		}
		if all && l != "" {
			out = append(out, l)
		}
	}
	return out
}

// tokenKubeconfig writes a kubeconfig reaching server (trusting ca) with token.
func tokenKubeconfig(path, server string, ca []byte, token string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	kc.AuthInfos["bootstrap"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["bootstrap"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "bootstrap"}
	kc.CurrentContext = "bootstrap"
	return clientcmd.WriteToFile(*kc, path)
}

// tokenFrom reads the token out of `clusteradm get token` output.
func tokenFrom(out string) (string, error) {
	for _, l := range strings.Split(out, "\n") {
		if tok, ok := strings.CutPrefix(strings.TrimSpace(l), "token="); ok && tok != "" {
			return tok, nil
		}
	}
	return "", fmt.Errorf("no token= line in %q", out)
}
