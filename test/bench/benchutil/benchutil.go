// Package benchutil holds what several benchmarks need: running the real
// `flotilla hub` process, reading a process's memory and CPU from /proc.
package benchutil

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"flotilla.dev/flotilla/hub"
	"flotilla.dev/flotilla/hub/registration/webhook"
	"flotilla.dev/flotilla/internal/image"
	"flotilla.dev/flotilla/test/testenv"
)

// Flotilla is the flotilla binary: $FLOTILLA, or one built for the benchmark
// (with the search agent's slim binary beside it, as `make build` does).
func Flotilla(b testing.TB) string {
	if bin := os.Getenv("FLOTILLA"); bin != "" {
		return bin
	}
	bin, err := testenv.BuildFlotilla(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	return bin
}

// SearchAgent is the search agent's slim binary beside flotilla (Flotilla's
// answer); it runs `addon-agent search` as flotilla does.
func SearchAgent(b testing.TB, flotilla string) string {
	bin := filepath.Join(filepath.Dir(flotilla), image.SearchAgentBinary)
	if _, err := os.Stat(bin); err != nil {
		b.Fatalf("%s: build it with `make build`", err)
	}
	return bin
}

// StartHub runs `flotilla hub` (with extra args) as its own process against
// env's hub, logging to a file of the benchmark, and returns its PID; it is
// stopped when b ends.
func StartHub(b testing.TB, ctx context.Context, env *testenv.Env, args ...string) int {
	log, err := os.Create(filepath.Join(b.TempDir(), "hub.log"))
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, Flotilla(b), append([]string{"hub", "--kubeconfig", env.Hub.KubeconfigPath}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		log.Close()
	})
	return cmd.Process.Pid
}

// WaitHub waits until the hub process registered its webhooks.
func WaitHub(b testing.TB, ctx context.Context, env *testenv.Env) {
	cs := kubernetes.NewForConfigOrDie(env.Hub.Config)
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		// `init` registers a fail-closed placeholder; the hub replaces it when it serves.
		vwc, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, hub.WebhookConfigurationName, metav1.GetOptions{})
		return err == nil && !webhook.IsPlaceholder(vwc), nil
	})
	if err != nil {
		b.Fatalf("hub did not serve: %v", err)
	}
}

// Memory reads a process's resident and peak resident memory in MiB (0 when
// the process is gone).
func Memory(pid int) (rss, hwm float64) {
	m := status(pid)
	return m["VmRSS:"], m["VmHWM:"]
}

// MemoryParts reads a process's resident memory by kind, in MiB: anonymous
// (heap, stacks), file-backed (the binary's pages) and shared memory.
func MemoryParts(pid int) (anon, file, shmem float64) {
	m := status(pid)
	return m["RssAnon:"], m["RssFile:"], m["RssShmem:"]
}

// PeakAnon samples a process's anonymous resident memory (its heap and
// stacks, without the binary's file-backed pages, whose residence depends on
// the page cache and on the binary's size) every interval until the returned
// function is called, which returns the largest sample in MiB. The kernel
// keeps a high-water mark of the whole RSS only (VmHWM), so this samples.
func PeakAnon(pid int, interval time.Duration) func() float64 {
	var mu sync.Mutex
	peak := 0.0
	sample := func() {
		anon, _, _ := MemoryParts(pid)
		mu.Lock()
		peak = max(peak, anon)
		mu.Unlock()
	}
	done := make(chan struct{})
	var stopped sync.WaitGroup
	stopped.Add(1)
	go func() {
		defer stopped.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			sample()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	return func() float64 {
		once.Do(func() { close(done); stopped.Wait(); sample() })
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// status reads the kB fields of /proc/PID/status, in MiB, by their key.
func status(pid int) map[string]float64 {
	out := map[string]float64{}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[2] == "kB" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			out[f[0]] = kb / 1024
		}
	}
	return out
}

// CPU is the user+system CPU time a process has used.
func CPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command (in parentheses, which may hold spaces).
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// Parallel runs f(0..n-1) on 32 goroutines and fails b with the first error.
func Parallel(b testing.TB, n int, f func(int) error) { ParallelN(b, 32, n, f) }

// ParallelN runs f(0..n-1) on g goroutines and fails b with the first error.
func ParallelN(b testing.TB, g, n int, f func(int) error) {
	b.Helper()
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	next := make(chan int)
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}

// EnvInt reads the integer knob name (def when unset); a value that is not an
// integer of at least least stops the benchmark with a message naming it.
func EnvInt(b testing.TB, name string, def, least int) int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least {
		b.Fatalf("%s=%q: want an integer of at least %d", name, v, least)
	}
	return n
}

// EnvDuration reads the duration knob name (def when unset); a value that is
// not a positive duration stops the benchmark with a message naming it.
func EnvDuration(b testing.TB, name string, def time.Duration) time.Duration {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		b.Fatalf("%s=%q: want a positive duration such as 90s", name, v)
	}
	return d
}
