// Package pgtest starts a throwaway PostgreSQL server for tests: initdb into a
// temporary folder, the server listening on a unix socket there (no TCP
// unless StartWith is given an address: then also on that address, with
// password authentication), run as user nobody when the test runs as root
// (PostgreSQL refuses root). It needs Debian's postgresql package (the server
// binaries under /usr/lib/postgresql/<version>/bin) and fails the test saying
// so when they are missing.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running PostgreSQL server.
type Server struct {
	dir, socketDir string
	port           int
	dbs            atomic.Int64
	// listen and password are set when the server also listens on TCP.
	listen, password string
}

// Options configure StartWith. The zero value is Start's server.
type Options struct {
	// Listen is an IP address the server also listens on over TCP, where
	// clients (user postgres) authenticate with Password (scram-sha-256);
	// URL and NewDatabase then give URLs of that address. Default "": the
	// unix socket only, no password.
	Listen string
	// Password of user postgres over TCP. Default: a random one (with Listen).
	Password string
}

// BinDir finds the folder holding initdb and postgres: $FLOTILLA_POSTGRES_BIN,
// else the newest /usr/lib/postgresql/*/bin, else $PATH.
func BinDir() (string, error) {
	if d := os.Getenv("FLOTILLA_POSTGRES_BIN"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("PostgreSQL server binaries (initdb, postgres) not found in /usr/lib/postgresql/*/bin or $PATH: apt-get install postgresql (or set FLOTILLA_POSTGRES_BIN)")
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// Start starts a server that stops when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith starts a server as o says; it stops when t ends.
func StartWith(t testing.TB, o Options) *Server {
	t.Helper()
	bin, err := BinDir()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	dir, err := os.MkdirTemp("", "flotilla-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	cred, err := credential(dir)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	listenOn := "127.0.0.1"
	if o.Listen != "" {
		if net.ParseIP(o.Listen) == nil {
			t.Fatalf("pgtest: listen address %q is not an IP address", o.Listen)
		}
		listenOn = o.Listen
		if o.Password == "" {
			o.Password = randomPassword(t)
		}
	}
	s := &Server{dir: dir, socketDir: dir, port: freePort(t, listenOn), listen: o.Listen, password: o.Password}
	data := filepath.Join(dir, "data")
	args := []string{"-D", data, "-U", "postgres", "-E", "UTF8", "--no-sync", "--auth-local=trust"}
	if o.Listen != "" {
		pwfile := filepath.Join(dir, "pwfile")
		if err := os.WriteFile(pwfile, []byte(o.Password+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if cred != nil {
			_ = os.Chown(pwfile, int(cred.Uid), int(cred.Gid))
		}
		args = append(args, "--auth-host=scram-sha-256", "--pwfile="+pwfile)
	} else {
		args = append(args, "--auth-host=trust")
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), args...)
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	listenAddresses := ""
	if o.Listen != "" {
		// initdb's pg_hba.conf admits loopback only: admit every address,
		// always with the password.
		hba, err := os.OpenFile(filepath.Join(data, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = fmt.Fprintln(hba, "host all all 0.0.0.0/0 scram-sha-256\nhost all all ::/0 scram-sha-256")
		if cerr := hba.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		listenAddresses = o.Listen
	}
	logFile, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		t.Fatal(err)
	}
	if cred != nil {
		_ = os.Chown(logFile.Name(), int(cred.Uid), int(cred.Gid))
	}
	srv := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-k", s.socketDir, "-p", strconv.Itoa(s.port),
		"-c", "listen_addresses="+listenAddresses, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	srv.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	srv.Stdout, srv.Stderr, srv.Dir = logFile, logFile, dir
	if err := srv.Start(); err != nil {
		t.Fatalf("pgtest: start postgres: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	t.Cleanup(func() {
		_ = srv.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = srv.Process.Kill()
			<-exited
		}
		logFile.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		if err == nil {
			conn.Close(ctx)
			return s
		}
		select {
		case werr := <-exited:
			log, _ := os.ReadFile(logFile.Name())
			t.Fatalf("pgtest: postgres exited (%v):\n%s", werr, log)
		case <-ctx.Done():
			log, _ := os.ReadFile(logFile.Name())
			t.Fatalf("pgtest: postgres not ready within a minute: %v\n%s", err, log)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// URL is the connection URL of database db on the server: on the unix
// socket, or, when the server listens on an address, on that address with
// the password.
func (s *Server) URL(db string) string {
	if s.listen != "" {
		u := url.URL{Scheme: "postgres", User: url.UserPassword("postgres", s.password),
			Host: net.JoinHostPort(s.listen, strconv.Itoa(s.port)), Path: "/" + db, RawQuery: "sslmode=disable"}
		return u.String()
	}
	return fmt.Sprintf("postgres://postgres@/%s?host=%s&port=%d&sslmode=disable", db, s.socketDir, s.port)
}

// Password is the password of user postgres over TCP ("" without Listen).
func (s *Server) Password() string { return s.password }

// NewDatabase creates an empty database and returns its URL.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("test_%d", s.dbs.Add(1))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	return s.URL(name)
}

// credential returns nil when not root, else nobody's credential, with dir
// handed to nobody.
func credential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("running as root and no user nobody to run postgres as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	// Parents of a temp dir are world-traversable (/tmp); the dir itself now is nobody's.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

func randomPassword(t testing.TB) string {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func freePort(t testing.TB, host string) int {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
