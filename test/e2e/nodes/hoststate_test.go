//go:build nodes

package nodes_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"flotilla.dev/flotilla/devenv/host"
)

// hostState is what of the host an environment with nodes touches: network
// devices and addresses, iptables rules (IPv4 and IPv6, every table), mounts,
// the kernel settings the kubelet and CNI change, cgroups and the shared
// folders the kubelet and CNI write.
type hostState map[string][]string

var counters = regexp.MustCompile(`\[\d+:\d+\]`)

func snapshot(dataDir string) (hostState, error) {
	st := hostState{}
	links, err := os.ReadDir("/sys/class/net")
	if err != nil {
		return nil, err
	}
	for _, l := range links {
		st["links"] = append(st["links"], l.Name())
	}
	out, err := exec.Command("ip", "-o", "-4", "addr", "show").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("ip addr: %w: %s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) >= 4 {
			st["addresses"] = append(st["addresses"], f[1]+" "+f[3])
		}
	}
	for _, tool := range []string{"iptables", "ip6tables"} {
		for _, table := range []string{"filter", "nat", "mangle", "raw"} {
			out, err := exec.Command(tool, "-w", "-t", table, "-S").CombinedOutput()
			if err != nil {
				return nil, fmt.Errorf("%s -t %s: %w: %s", tool, table, err, out)
			}
			for _, rule := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				st["rules"] = append(st["rules"], tool+" "+table+" "+counters.ReplaceAllString(rule, ""))
			}
		}
	}
	mounts, err := host.MountsBelow("/")
	if err != nil {
		return nil, err
	}
	st["mounts"] = mounts
	for _, key := range []string{"net/ipv4/ip_forward", "vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"} {
		v, err := os.ReadFile(filepath.Join("/proc/sys", key))
		if err != nil {
			return nil, err
		}
		st["sysctls"] = append(st["sysctls"], key+"="+strings.TrimSpace(string(v)))
	}
	for _, p := range []string{"/var/lib/cni", "/var/log/containers", "/var/log/pods", "/run/containerd", "/var/lib/kubelet"} {
		if _, err := os.Stat(p); err == nil {
			st["paths"] = append(st["paths"], p)
		}
	}
	cgroups, _ := filepath.Glob("/sys/fs/cgroup/*/flotilla-*")
	st["cgroups"] = cgroups
	for _, pid := range host.ProcsWith(dataDir) {
		st["processes"] = append(st["processes"], fmt.Sprint(pid))
	}
	for k := range st {
		sort.Strings(st[k])
	}
	return st, nil
}

// diff lists what is in after and not in before ("+") and the reverse ("-").
func diff(before, after hostState) []string {
	var out []string
	keys := map[string]bool{}
	for k := range before {
		keys[k] = true
	}
	for k := range after {
		keys[k] = true
	}
	for k := range keys {
		b, a := set(before[k]), set(after[k])
		for x := range a {
			if !b[x] {
				out = append(out, k+": + "+x)
			}
		}
		for x := range b {
			if !a[x] {
				out = append(out, k+": - "+x)
			}
		}
	}
	sort.Strings(out)
	return out
}

func set(xs []string) map[string]bool {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}
