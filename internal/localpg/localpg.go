// Package localpg finds a Postgres server for `switchboard dev` and the tests: the URL the caller
// was given, else a server on 127.0.0.1:5432 when one answers, else a throwaway server started with
// initdb and postgres in a temporary directory and removed again on Stop.
package localpg

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
)

// DefaultURL is the server tried when no URL is given.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// debianBinGlob is where Debian installs the server binaries (initdb, postgres), outside PATH.
// A variable so a test can point it elsewhere.
var debianBinGlob = "/usr/lib/postgresql/*/bin"

// Server is a Postgres server to connect to.
type Server struct {
	// AdminURL connects to a database from which others can be created and dropped.
	AdminURL string
	// Throwaway tells whether Start started the server; Stop then stops it and removes its files.
	Throwaway bool

	cmd  *exec.Cmd
	bin  string
	dir  string
	port int
	done chan struct{}
}

// Start returns the server to use. url, when not empty, is used as it is.
func Start(ctx context.Context, log logr.Logger, url string) (*Server, error) {
	if url != "" {
		return &Server{AdminURL: url}, nil
	}
	if answers(ctx, DefaultURL) {
		log.V(1).Info("using the Postgres server on 127.0.0.1:5432")
		return &Server{AdminURL: DefaultURL}, nil
	}
	log.Info("no Postgres server on 127.0.0.1:5432; starting a throwaway one")
	return startThrowaway(ctx, log)
}

func answers(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return false
	}
	_ = conn.Close(ctx)
	return true
}

// FindBinaries returns the directory that holds initdb and postgres: PATH first, then the newest
// version under Debian's /usr/lib/postgresql.
func FindBinaries() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(resolve(p))
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob(debianBinGlob)
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no Postgres found: nothing answers on 127.0.0.1:5432 and initdb is neither on PATH nor in " +
		debianBinGlob + "; install Postgres (Debian: apt-get install postgresql) or set DATABASE_URL")
}

func resolve(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func startThrowaway(ctx context.Context, log logr.Logger) (*Server, error) {
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "switchboard-pg-")
	if err != nil {
		return nil, fmt.Errorf("create directory for throwaway Postgres: %w", err)
	}
	s := &Server{Throwaway: true, dir: dir, bin: bin}
	if err := s.initdb(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	if s.port, err = freePort(); err != nil {
		s.Stop()
		return nil, err
	}
	if err := s.launch(ctx, log); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// StartThrowaway starts a throwaway server even when one answers on 127.0.0.1:5432: for a test
// that restarts its server (Restart) without touching anyone else's.
func StartThrowaway(ctx context.Context, log logr.Logger) (*Server, error) {
	return startThrowaway(ctx, log)
}

// Restart shuts a throwaway server down (fast shutdown: sessions are cut, committed data is
// kept) and starts it again on the same port and data.
func (s *Server) Restart(ctx context.Context, log logr.Logger) error {
	if !s.Throwaway {
		return errors.New("only a throwaway server can be restarted")
	}
	s.shutdown()
	return s.launch(ctx, log)
}

func (s *Server) initdb(ctx context.Context) error {
	// Postgres refuses to run as root: run it as the postgres (or nobody) account instead.
	cred, err := credential()
	if err != nil {
		return err
	}
	if cred != nil {
		if err := os.Chown(s.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("hand the throwaway Postgres directory to uid %d: %w", cred.Uid, err)
		}
	}
	initdb := exec.CommandContext(ctx, filepath.Join(s.bin, "initdb"), "-D", filepath.Join(s.dir, "data"), "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb for throwaway Postgres: %w: %s", err, lastLine(out))
	}
	return nil
}

// launch starts the server on s.port and waits until it accepts connections.
func (s *Server) launch(ctx context.Context, log logr.Logger) error {
	cred, err := credential()
	if err != nil {
		return err
	}
	s.done = make(chan struct{})
	s.cmd = exec.Command(filepath.Join(s.bin, "postgres"), "-D", filepath.Join(s.dir, "data"), "-p", strconv.Itoa(s.port),
		"-k", s.dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
		"-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200")
	// SIGQUIT on our death: the server goes down even when we are killed without a chance to Stop.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	logFile, err := os.OpenFile(filepath.Join(s.dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("create throwaway Postgres log: %w", err)
	}
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start throwaway Postgres: %w", err)
	}
	done := s.done
	go func() { _ = s.cmd.Wait(); logFile.Close(); close(done) }()

	s.AdminURL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
	deadline := time.Now().Add(30 * time.Second)
	for !answers(ctx, s.AdminURL) {
		select {
		case <-done:
			return fmt.Errorf("throwaway Postgres exited at start; see its log: %s", lastLogLine(filepath.Join(s.dir, "postgres.log")))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("throwaway Postgres did not accept connections within 30s")
		}
	}
	log.Info("throwaway Postgres started", "port", s.port, "dir", s.dir)
	return nil
}

// shutdown stops a running throwaway server: fast shutdown, else killed after 15 s.
func (s *Server) shutdown() {
	if s.cmd != nil && s.cmd.Process != nil && s.done != nil {
		_ = s.cmd.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	}
}

// Stop stops a throwaway server and removes its files; for other servers it does nothing.
func (s *Server) Stop() {
	if s == nil || !s.Throwaway {
		return
	}
	s.shutdown()
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root and neither a postgres nor a nobody account exists to run Postgres as")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port for throwaway Postgres: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

func lastLogLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return path
	}
	return lastLine(b)
}
