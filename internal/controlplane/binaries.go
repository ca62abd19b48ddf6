package controlplane

import (
	"fmt"
	"os"
	"path/filepath"
)

// EnvBinDir names the environment variable that points at the folder holding
// etcd, kube-apiserver and kube-controller-manager.
const EnvBinDir = "FLOTILLA_CONTROLPLANE_DIR"

// EnvAPIServerProfiling set to "true" serves the kube-apiservers' Go profiles
// (/debug/pprof, to a user allowed that path: an admin), for benchmarks that
// look into an apiserver's memory. Off otherwise, as the control planes'
// default.
const EnvAPIServerProfiling = "FLOTILLA_APISERVER_PROFILING"

// Binaries are the paths of the three control-plane programs, and of the two
// that nodes need (empty when not built).
type Binaries struct {
	Etcd, APIServer, ControllerManager string
	// Scheduler and Kubelet are found beside the others when built (`make
	// controlplane` builds them); only `flotilla dev up --nodes` needs them.
	Scheduler, Kubelet string
}

// FindBinaries locates the control-plane programs. It looks in dir when given,
// else in $FLOTILLA_CONTROLPLANE_DIR, else in bin/controlplane beside the running
// executable, else in bin/controlplane of the enclosing Go module (walking up from
// the working directory). The error says how to build what is missing.
func FindBinaries(dir string) (Binaries, error) {
	var candidates []string
	switch {
	case dir != "":
		candidates = []string{dir}
	case os.Getenv(EnvBinDir) != "":
		candidates = []string{os.Getenv(EnvBinDir)}
	default:
		if exe, err := os.Executable(); err == nil {
			candidates = append(candidates, filepath.Join(filepath.Dir(exe), "controlplane"))
		}
		if root, ok := moduleRoot(); ok {
			candidates = append(candidates, filepath.Join(root, "bin", "controlplane"))
		}
	}
	var lastErr error
	for _, d := range candidates {
		b := Binaries{
			Etcd:              filepath.Join(d, "etcd"),
			APIServer:         filepath.Join(d, "kube-apiserver"),
			ControllerManager: filepath.Join(d, "kube-controller-manager"),
		}
		if lastErr = b.check(); lastErr == nil {
			for _, opt := range []struct {
				field *string
				name  string
			}{{&b.Scheduler, "kube-scheduler"}, {&b.Kubelet, "kubelet"}} {
				if st, err := os.Stat(filepath.Join(d, opt.name)); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
					*opt.field = filepath.Join(d, opt.name)
				}
			}
			return b, nil
		}
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("no folder to look in")
	}
	return Binaries{}, fmt.Errorf("control-plane binaries not found (%v): run `make controlplane` in the Flotilla repository "+
		"(builds etcd, kube-apiserver and kube-controller-manager from source; several minutes the first time), "+
		"or point --controlplane-dir or $%s at a folder that has them", lastErr, EnvBinDir)
}

func (b Binaries) check() error {
	for _, p := range []string{b.Etcd, b.APIServer, b.ControllerManager} {
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("%s is missing", p)
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return fmt.Errorf("%s is not executable", p)
		}
	}
	return nil
}

// moduleRoot walks up from the working directory to the folder holding go.mod.
func moduleRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
