package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
)

// Kinds of change.
const (
	KindLink     = "link"     // a network device: deleted
	KindAddr     = "addr"     // an address on a device: removed
	KindRule     = "rule"     // an iptables rule: deleted
	KindSysctl   = "sysctl"   // a kernel setting: restored to Value
	KindCgroup   = "cgroup"   // a cgroup (v1: in every hierarchy): removed with its children
	KindDir      = "dir"      // a directory made outside the data folder: removed if empty
	KindMounts   = "mounts"   // every mount below Path: unmounted, deepest first
	KindSymlinks = "symlinks" // symlinks in Path that point below Target: removed
	KindFiles    = "files"    // files matching the glob Path: removed
	KindProcs    = "procs"    // processes whose command line holds Target: killed
)

// Change is one recorded host change.
type Change struct {
	Kind string `json:"kind"`
	// Path is the device name (link), the sysctl key, the directory or glob.
	Path string `json:"path,omitempty"`
	// Dev and Addr (CIDR) of an address.
	Dev  string `json:"dev,omitempty"`
	Addr string `json:"addr,omitempty"`
	// Table, Chain and Rule of an iptables rule.
	Table string   `json:"table,omitempty"`
	Chain string   `json:"chain,omitempty"`
	Rule  []string `json:"rule,omitempty"`
	// Value is a sysctl's value before the environment.
	Value string `json:"value,omitempty"`
	// Target of symlinks or the marker of processes.
	Target string `json:"target,omitempty"`
	// Foreign is true for a change someone else makes (CNI, kubelet, containerd).
	Foreign bool `json:"foreign,omitempty"`
}

func (c Change) String() string {
	switch c.Kind {
	case KindAddr:
		return fmt.Sprintf("address %s on %s", c.Addr, c.Dev)
	case KindRule:
		return fmt.Sprintf("iptables -t %s %s %v", c.Table, c.Chain, c.Rule)
	case KindSysctl:
		return fmt.Sprintf("sysctl %s (was %s)", c.Path, c.Value)
	case KindSymlinks:
		return fmt.Sprintf("symlinks in %s into %s", c.Path, c.Target)
	case KindProcs:
		return fmt.Sprintf("processes of %s", c.Target)
	}
	return c.Kind + " " + c.Path
}

func (c Change) same(o Change) bool {
	return c.Kind == o.Kind && c.Path == o.Path && c.Dev == o.Dev && c.Addr == o.Addr &&
		c.Table == o.Table && c.Chain == o.Chain && slices.Equal(c.Rule, o.Rule) && c.Target == o.Target
}

// Journal is the list of changes of one environment, kept in a file.
type Journal struct {
	path string
	mu   sync.Mutex
	// Changes in the order they were made.
	Changes []Change `json:"changes"`
}

// Open reads the journal at path, or starts an empty one.
func Open(path string) (*Journal, error) {
	j := &Journal{path: path}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return j, nil
	}
	if err != nil {
		return nil, err
	}
	// Undo acts as root on what the journal says: never on a journal someone
	// else could have written.
	if err := trusted(path); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, j); err != nil {
		return nil, fmt.Errorf("%s is damaged (%v): undo its changes by hand (see the file) and remove it", path, err)
	}
	return j, nil
}

// Has reports whether an equal change is recorded.
func (j *Journal) Has(c Change) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.index(c) >= 0
}

func (j *Journal) index(c Change) int {
	for i, o := range j.Changes {
		if o.same(c) {
			return i
		}
	}
	return -1
}

// record appends c (once) and saves, before the change is made: a crash in
// between leaves a record whose undo finds nothing to do.
func (j *Journal) record(c Change) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.index(c) >= 0 {
		return nil
	}
	j.Changes = append(j.Changes, c)
	return j.save()
}

func (j *Journal) save() error {
	if len(j.Changes) == 0 {
		if err := os.Remove(j.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	data, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(j.path), 0o755); err != nil {
		return err
	}
	tmp := j.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, j.path)
}

// Undo reverts every recorded change, last first. A change that cannot be
// undone stays in the journal (and is reported); the others are dropped. When
// nothing is left the journal file is removed.
func (j *Journal) Undo() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	var errs []error
	var left []Change
	for i := len(j.Changes) - 1; i >= 0; i-- {
		c := j.Changes[i]
		if err := undo(c); err != nil {
			errs = append(errs, fmt.Errorf("undo %s: %w", c, err))
			left = append([]Change{c}, left...)
		}
	}
	j.Changes = left
	if err := j.save(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Path is the journal's file.
func (j *Journal) Path() string { return j.path }

// trusted refuses a journal (or its folder) that is not owned by this user or
// that group or others may write.
func trusted(path string) error {
	for _, p := range []string{path, filepath.Dir(path)} {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if ok && int(st.Uid) != os.Geteuid() {
			return fmt.Errorf("%s belongs to user %d, not to this user (%d): refusing to undo the host changes it records; check who wrote it", p, st.Uid, os.Geteuid())
		}
		if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&os.ModeSticky == 0 {
			return fmt.Errorf("%s is writable by group or others (mode %v): refusing to undo the host changes it records; chmod go-w it after checking its contents", p, fi.Mode().Perm())
		}
	}
	return nil
}
