package controlplane

import "time"

// StartDetached runs bin with args in a session of its own, so that it outlives
// this program, with its output appended to logFile. It returns the process ID.
func StartDetached(name, bin string, args []string, logFile string) (int, error) {
	p, err := startProcess(name, bin, args, logFile, true)
	if err != nil {
		return 0, err
	}
	return p.pid, nil
}

// StartDetachedEnv is StartDetached with env (KEY=value) added to this
// program's environment.
func StartDetachedEnv(name, bin string, args, env []string, logFile string) (int, error) {
	p, err := startProcess(name, bin, args, logFile, true, env...)
	if err != nil {
		return 0, err
	}
	return p.pid, nil
}

// PIDRunning reports whether pid is a running (not zombie) process whose command
// line contains mustContain (when not empty).
func PIDRunning(pid int, mustContain string) bool { return pidAlive(pid, mustContain) }

// StopPID stops a process by ID: SIGTERM, then SIGKILL after grace.
func StopPID(name string, pid int, grace time.Duration) error {
	return (&process{name: name, pid: pid}).stop(grace)
}

// Tail returns the last n lines of a log file, for error messages.
func Tail(file string, n int) string { return tail(file, n) }
