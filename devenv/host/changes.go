package host

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// run runs a host tool and returns its output; the error carries the output.
func run(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

func linkExists(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/class/net", name))
	return err == nil
}

// EnsureBridge creates a bridge device with no ports and brings it up. A device
// of that name that the journal does not hold is someone else's: refused.
func (j *Journal) EnsureBridge(name string) error {
	c := Change{Kind: KindLink, Path: name}
	if linkExists(name) {
		if !j.Has(c) {
			return fmt.Errorf("network device %s exists and was not made by this environment: remove it, or use another --data-dir", name)
		}
	} else {
		if err := j.record(c); err != nil {
			return err
		}
		if _, err := run("ip", "link", "add", name, "type", "bridge"); err != nil {
			return err
		}
	}
	_, err := run("ip", "link", "set", name, "up")
	return err
}

// ForeignLink records a device someone else creates for the environment (the
// CNI bridge plugin), so that Undo deletes it.
func (j *Journal) ForeignLink(name string) error {
	return j.record(Change{Kind: KindLink, Path: name, Foreign: true})
}

// EnsureAddr puts addr (CIDR) on dev.
func (j *Journal) EnsureAddr(dev, cidr string) error {
	out, err := run("ip", "-o", "addr", "show", "dev", dev)
	if err != nil {
		return err
	}
	if strings.Contains(out, " "+cidr+" ") {
		return j.record(Change{Kind: KindAddr, Dev: dev, Addr: cidr})
	}
	if err := j.record(Change{Kind: KindAddr, Dev: dev, Addr: cidr}); err != nil {
		return err
	}
	_, err = run("ip", "addr", "add", cidr, "dev", dev)
	return err
}

// EnsureRule appends an iptables rule unless an equal one exists.
func (j *Journal) EnsureRule(table, chain string, rule ...string) error {
	return j.addRule(table, chain, []string{"-A", chain}, rule)
}

// InsertRule puts an iptables rule first in its chain unless an equal one
// exists, so that no earlier rule lets its packets through.
func (j *Journal) InsertRule(table, chain string, rule ...string) error {
	return j.addRule(table, chain, []string{"-I", chain, "1"}, rule)
}

// addRule records the rule, then adds it where (-A chain or -I chain 1) says
// unless it is there already.
func (j *Journal) addRule(table, chain string, where, rule []string) error {
	c := Change{Kind: KindRule, Table: table, Chain: chain, Rule: rule}
	if err := j.record(c); err != nil {
		return err
	}
	if _, err := run("iptables", append([]string{"-w", "-t", table, "-C", chain}, rule...)...); err == nil {
		return nil
	}
	_, err := run("iptables", append(append([]string{"-w", "-t", table}, where...), rule...)...)
	return err
}

// RemoveRule deletes an iptables rule and its record (a rule that is not
// there is fine).
func (j *Journal) RemoveRule(table, chain string, rule ...string) error {
	c := Change{Kind: KindRule, Table: table, Chain: chain, Rule: rule}
	if err := undo(c); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if i := j.index(c); i >= 0 {
		j.Changes = append(j.Changes[:i], j.Changes[i+1:]...)
		return j.save()
	}
	return nil
}

func sysctlPath(key string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
}

// KeepSysctl records a kernel setting's value once (the first time), so that
// Undo restores it after the environment (or what runs in it) changed it.
func (j *Journal) KeepSysctl(key string) error {
	j.mu.Lock()
	for _, c := range j.Changes {
		if c.Kind == KindSysctl && c.Path == key {
			j.mu.Unlock()
			return nil
		}
	}
	j.mu.Unlock()
	data, err := os.ReadFile(sysctlPath(key))
	if err != nil {
		return fmt.Errorf("read sysctl %s: %w", key, err)
	}
	return j.record(Change{Kind: KindSysctl, Path: key, Value: strings.TrimSpace(string(data)), Foreign: true})
}

// cgroupHierarchies are the mounted cgroup hierarchies (v1: one per
// controller set; v2: the unified one).
func cgroupHierarchies() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, fl := range fields {
			if fl == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(fields) || len(fields) < 5 {
			continue
		}
		if t := fields[sep+1]; t == "cgroup" || t == "cgroup2" {
			out = append(out, fields[4])
		}
	}
	return out, sc.Err()
}

// EnsureCgroup creates the cgroup path (like "/flotilla-abc-node1") in every
// hierarchy, for a kubelet's cgroupRoot.
func (j *Journal) EnsureCgroup(path string) error {
	if err := j.record(Change{Kind: KindCgroup, Path: path}); err != nil {
		return err
	}
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hs {
		if err := os.MkdirAll(filepath.Join(h, path), 0o755); err != nil {
			return fmt.Errorf("create cgroup %s in %s: %w", path, h, err)
		}
	}
	return nil
}

// EnsureDir creates a directory outside the data folder (when missing) and
// records it, so that Undo removes it once empty. An existing one is left alone.
func (j *Journal) EnsureDir(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := j.record(Change{Kind: KindDir, Path: path}); err != nil {
		return err
	}
	return os.MkdirAll(path, 0o755)
}

// Mounts records that mounts appear below dir (containerd root filesystems,
// kubelet volumes): Undo unmounts whatever is left there.
func (j *Journal) Mounts(dir string) error {
	return j.record(Change{Kind: KindMounts, Path: dir, Foreign: true})
}

// Symlinks records that symlinks into target appear in dir (the kubelet's
// /var/log/containers): Undo removes those that point below target.
func (j *Journal) Symlinks(dir, target string) error {
	return j.record(Change{Kind: KindSymlinks, Path: dir, Target: target, Foreign: true})
}

// Files records a glob of files someone makes for the environment (CNI result
// caches): Undo removes them.
func (j *Journal) Files(glob string) error {
	return j.record(Change{Kind: KindFiles, Path: glob, Foreign: true})
}

// Procs records that processes whose command line holds marker belong to the
// environment (containerd shims): Undo kills those still running.
func (j *Journal) Procs(marker string) error {
	return j.record(Change{Kind: KindProcs, Target: marker, Foreign: true})
}

func undo(c Change) error {
	switch c.Kind {
	case KindLink:
		if !linkExists(c.Path) {
			return nil
		}
		_, err := run("ip", "link", "del", c.Path)
		return err
	case KindAddr:
		if !linkExists(c.Dev) {
			return nil
		}
		out, err := run("ip", "-o", "addr", "show", "dev", c.Dev)
		if err != nil || !strings.Contains(out, " "+c.Addr+" ") {
			return nil
		}
		_, err = run("ip", "addr", "del", c.Addr, "dev", c.Dev)
		return err
	case KindRule:
		if _, err := run("iptables", append([]string{"-w", "-t", c.Table, "-C", c.Chain}, c.Rule...)...); err != nil {
			return nil // not there
		}
		_, err := run("iptables", append([]string{"-w", "-t", c.Table, "-D", c.Chain}, c.Rule...)...)
		return err
	case KindSysctl:
		return os.WriteFile(sysctlPath(c.Path), []byte(c.Value+"\n"), 0o644)
	case KindCgroup:
		hs, err := cgroupHierarchies()
		if err != nil {
			return err
		}
		var errs []error
		for _, h := range hs {
			errs = append(errs, removeCgroupTree(filepath.Join(h, c.Path)))
		}
		return errors.Join(errs...)
	case KindDir:
		err := os.Remove(c.Path)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return nil // something else uses it now: leave it
		}
		return err
	case KindMounts:
		return unmountBelow(c.Path)
	case KindSymlinks:
		return removeSymlinks(c.Path, c.Target)
	case KindFiles:
		matches, err := filepath.Glob(c.Path)
		if err != nil {
			return err
		}
		var errs []error
		for _, m := range matches {
			if err := os.RemoveAll(m); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	case KindProcs:
		return killProcs(c.Target)
	}
	return fmt.Errorf("unknown change kind %q", c.Kind)
}

// removeCgroupTree removes a cgroup and its children, deepest first (cgroup
// directories are removed with rmdir; their files cannot be deleted).
func removeCgroupTree(root string) error {
	if _, err := os.Stat(root); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	sort.Slice(dirs, func(a, b int) bool { return len(dirs[a]) > len(dirs[b]) })
	var last error
	for _, d := range dirs {
		for try := 0; try < 20; try++ {
			last = syscall.Rmdir(d)
			if last == nil || errors.Is(last, syscall.ENOENT) {
				last = nil
				break
			}
			time.Sleep(100 * time.Millisecond) // a process may still be leaving it
		}
		if last != nil {
			return fmt.Errorf("rmdir %s: %w", d, last)
		}
	}
	return nil
}

// MountsBelow lists the mount points below dir, deepest first.
func MountsBelow(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, strings.TrimSuffix(dir, "/")+"/") {
			out = append(out, mp)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return len(out[a]) > len(out[b]) })
	return out, sc.Err()
}

func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func unmountBelow(dir string) error {
	var errs []error
	for round := 0; round < 3; round++ {
		mps, err := MountsBelow(dir)
		if err != nil {
			return err
		}
		if len(mps) == 0 {
			return nil
		}
		errs = nil
		for _, mp := range mps {
			if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("unmount %s: %w", mp, err))
			}
		}
	}
	return errors.Join(errs...)
}

func removeSymlinks(dir, target string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	prefix := strings.TrimSuffix(target, "/") + "/"
	var errs []error
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		to, err := os.Readlink(p)
		if err != nil {
			continue
		}
		if strings.HasPrefix(to, prefix) {
			if err := os.Remove(p); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// ProcsWith lists the processes whose command line holds marker.
func ProcsWith(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(cmdline) == 0 {
			continue
		}
		if strings.Contains(strings.ReplaceAll(string(cmdline), "\x00", " "), marker) {
			out = append(out, pid)
		}
	}
	return out
}

func killProcs(marker string) error {
	pids := ProcsWith(marker)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		left := ProcsWith(marker)
		alive := 0
		for _, pid := range left {
			if st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")); err == nil && !strings.Contains(string(st), ") Z ") {
				alive++
			}
		}
		if alive == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("processes of %s still run: %v", marker, ProcsWith(marker))
}
