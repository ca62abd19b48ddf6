package devenv

import (
	"errors"
	"fmt"
	"os"
	"sort"

	"flotilla.dev/flotilla/devenv/node"
	"flotilla.dev/flotilla/internal/controlplane"
)

// Status is what runs in an environment.
type Status struct {
	DataDir    string      `json:"dataDir"`
	Components []Component `json:"components"`
}

// Component is one control plane or one Flotilla process.
type Component struct {
	Name string `json:"name"`
	// Kind is "control-plane", "node" or "flotilla".
	Kind string `json:"kind"`
	// State is "running", "stopped" or "partial" (some processes of a control plane run).
	State      string         `json:"state"`
	URL        string         `json:"url,omitempty"`
	Kubeconfig string         `json:"kubeconfig,omitempty"`
	PIDs       map[string]int `json:"pids,omitempty"`
	// Hub is a managed cluster's standing on the hub (accepted, denied,
	// pending), when the hub can be read.
	Hub Acceptance `json:"hub,omitempty"`
}

// Component states.
const (
	StateRunning = "running"
	StateStopped = "stopped"
	StatePartial = "partial"
)

// AllRunning is true when every component runs.
func (s *Status) AllRunning() bool {
	if len(s.Components) == 0 {
		return false
	}
	for _, c := range s.Components {
		if c.State != StateRunning {
			return false
		}
	}
	return true
}

// Get reports the environment in opts.DataDir.
func Get(opts Options) (*Status, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	rec, err := readRecord(opts.DataDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no Flotilla environment in %s: start one with `flotilla dev up --data-dir %s`", opts.DataDir, opts.DataDir)
	}
	if err != nil {
		return nil, err
	}
	return status(&opts, rec)
}

func status(opts *Options, rec *record) (*Status, error) {
	st := &Status{DataDir: opts.DataDir}
	var standing map[string]Acceptance
	for _, name := range append([]string{hubName}, rec.Clusters...) {
		c := Component{Name: name, Kind: "control-plane", State: StateStopped, Kubeconfig: kubeconfigPath(opts, name)}
		if cp, err := controlplane.Attach(opts.cpDir(name)); err == nil {
			c.URL = cp.URL
			running := cp.Running()
			switch {
			case len(running) == cp.Expected():
				c.State = StateRunning
				c.PIDs = cp.PIDs()
				if name == hubName {
					standing = hubAcceptance(opts.HubKubeconfig())
				}
			case len(running) > 0:
				c.State = StatePartial
				c.PIDs = map[string]int{}
				for _, r := range running {
					c.PIDs[r] = cp.PIDs()[r]
				}
			}
		}
		if name != hubName {
			c.Hub = standing[name]
		}
		st.Components = append(st.Components, c)
	}
	if rec.Nodes {
		for _, name := range append([]string{hubName}, rec.Clusters...) {
			c := Component{Name: nodeName(name), Kind: "node", State: StateStopped, PIDs: node.PIDs(opts.nodeDir(name))}
			ctrd, kubelet := node.Running(opts.nodeDir(name))
			switch {
			case ctrd && kubelet:
				c.State = StateRunning
			case ctrd || kubelet:
				c.State = StatePartial
			}
			st.Components = append(st.Components, c)
		}
	}
	procs, err := readProcesses(opts)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(procs))
	for n := range procs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := procs[n]
		c := Component{Name: n, Kind: "flotilla", State: StateStopped}
		if p.running() {
			c.State = StateRunning
			c.PIDs = map[string]int{"flotilla": p.PID}
		}
		st.Components = append(st.Components, c)
	}
	return st, nil
}
