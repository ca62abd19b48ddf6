package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is one running program of a control plane.
type process struct {
	name    string // etcd, kube-apiserver, kube-controller-manager
	pid     int
	logFile string
	// cmd and done are set only for processes this program started and owns
	// (attached mode); a detached process found again through the state file
	// has neither.
	cmd  *exec.Cmd
	done chan struct{}
}

// startProcess runs bin with args, output appended to logFile. An attached
// process is killed when this program dies; a detached one runs in a session of
// its own and outlives it.
func startProcess(name, bin string, args []string, logFile string, detached bool, env ...string) (*process, error) {
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	if err := log.Chmod(0o600); err != nil { // a log made before this rule
		return nil, err
	}
	fmt.Fprintf(log, "\n==== %s starting %s %s\n", time.Now().Format(time.RFC3339), bin, strings.Join(args, " "))

	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	if detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, pid: cmd.Process.Pid, logFile: logFile, done: make(chan struct{})}
	if detached {
		// Reap it if it exits while we are still running (and say how it ended
		// in its log); we do not own it beyond that.
		go func() {
			err := cmd.Wait()
			if f, ferr := os.OpenFile(logFile, os.O_WRONLY|os.O_APPEND, 0o600); ferr == nil {
				fmt.Fprintf(f, "==== %s %s exited: %v\n", time.Now().Format(time.RFC3339), name, exitText(cmd.ProcessState, err))
				f.Close()
			}
			close(p.done)
		}()
	} else {
		p.cmd = cmd
		go func() { _ = cmd.Wait(); close(p.done) }()
	}
	return p, nil
}

func exitText(st *os.ProcessState, err error) string {
	if st != nil {
		return st.String()
	}
	return fmt.Sprint(err)
}

// alive reports whether the process is still running (a zombie is not).
func (p *process) alive() bool {
	if p.done != nil {
		select {
		case <-p.done:
			return false
		default:
			return true
		}
	}
	return pidAlive(p.pid, "")
}

// stop ends the process: SIGTERM, then SIGKILL after grace.
func (p *process) stop(grace time.Duration) error {
	if !p.alive() {
		return nil
	}
	if err := syscall.Kill(p.pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s (pid %d): %w", p.name, p.pid, err)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !p.alive() {
			return nil
		}
		if p.done != nil {
			select {
			case <-p.done:
				return nil
			case <-time.After(50 * time.Millisecond):
			}
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}
	_ = syscall.Kill(p.pid, syscall.SIGKILL)
	if p.done != nil {
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.pid)
		}
		return nil
	}
	for i := 0; i < 100 && pidAlive(p.pid, ""); i++ {
		time.Sleep(50 * time.Millisecond)
	}
	if pidAlive(p.pid, "") {
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.pid)
	}
	return nil
}

// pidAlive reports whether pid runs and, when mustContain is set, whether its
// command line contains that text (so a recycled PID is not mistaken for ours).
func pidAlive(pid int, mustContain string) bool {
	if pid <= 0 {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name: "pid (comm) S ...".
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	if mustContain == "" {
		return true
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	return bytes.Contains(cmdline, []byte(mustContain))
}

// tail returns the last n lines of a file, for error messages.
func tail(file string, n int) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
