package devenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"flotilla.dev/flotilla/internal/controlplane"
)

// proc is one of Flotilla's own background processes, as processes.json records it.
type proc struct {
	PID  int      `json:"pid"`
	Args []string `json:"args"`
}

func processesFile(opts *Options) string { return filepath.Join(opts.DataDir, "processes.json") }

func readProcesses(opts *Options) (map[string]proc, error) {
	data, err := os.ReadFile(processesFile(opts))
	if errors.Is(err, os.ErrNotExist) {
		return map[string]proc{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]proc{}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("%s is damaged (%v): stop stray flotilla processes and remove it", processesFile(opts), err)
	}
	return out, nil
}

func writeProcesses(opts *Options, procs map[string]proc) error {
	data, err := json.MarshalIndent(procs, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(processesFile(opts), data, 0o644)
}

// running reports whether the recorded process still runs (and is ours: its
// command line holds its first argument, the subcommand).
func (p proc) running() bool {
	marker := ""
	if len(p.Args) > 0 {
		marker = p.Args[0]
	}
	return controlplane.PIDRunning(p.PID, marker)
}

// ensureProcess starts `flotilla <args>` in the background under name unless a
// process of that name already runs. Its output goes to logs/<name>.log.
func ensureProcess(opts *Options, name string, args []string) error {
	procs, err := readProcesses(opts)
	if err != nil {
		return err
	}
	if p, ok := procs[name]; ok && p.running() {
		opts.progress("%s: already running (pid %d)", name, p.PID)
		return nil
	}
	logFile := filepath.Join(opts.DataDir, "logs", name+".log")
	pid, err := controlplane.StartDetached(name, opts.FlotillaBinary, args, logFile)
	if err != nil {
		return err
	}
	procs[name] = proc{PID: pid, Args: args}
	opts.progress("%s: started (pid %d, log %s)", name, pid, logFile)
	return writeProcesses(opts, procs)
}

// stopProcesses stops Flotilla's own processes, klusterlets before the hub.
func stopProcesses(opts *Options) ([]string, error) {
	procs, err := readProcesses(opts)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(procs))
	for name := range procs {
		names = append(names, name)
	}
	// Reverse order of names puts "klusterlet-*" before "hub".
	sort.Sort(sort.Reverse(sort.StringSlice(names)))
	var stopped []string
	var errs []error
	for _, name := range names {
		p := procs[name]
		if !p.running() {
			continue
		}
		if err := controlplane.StopPID(name, p.PID, 10*time.Second); err != nil {
			errs = append(errs, err)
			continue
		}
		stopped = append(stopped, name)
	}
	return stopped, errors.Join(errs...)
}

// startFlotilla starts Flotilla's own processes on the running control planes.
//
// HOOK (registration): start `flotilla hub` against opts.HubKubeconfig() and one
// `flotilla klusterlet` per cluster (rec.Clusters, kubeconfig
// opts.ClusterKubeconfig(name)) with ensureProcess, and register every cluster
// through the real path (bootstrap token -> CSR -> accept). Each step must be a
// no-op when already done, since `dev up` also resumes a stopped environment.
func startFlotilla(ctx context.Context, opts *Options, rec *record) error {
	return registerClusters(ctx, opts, rec) // registration.go
}
