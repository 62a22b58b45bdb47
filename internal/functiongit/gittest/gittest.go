// Package gittest serves Git repositories over smart HTTP on loopback for tests: the system's
// `git http-backend` run as a CGI handler behind an httptest.Server bound to 127.0.0.1, with
// bare repositories in a temporary directory and an optional HTTP basic-auth requirement.
//
// Repositories are created and committed to with the `git` CLI, so a test that uses this package
// needs git on PATH (it fails with a clear message if there is none).
package gittest

import (
	"bytes"
	"crypto/subtle"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Server is a loopback smart-HTTP Git server.
type Server struct {
	// BaseURL is the server's root ("http://127.0.0.1:port"): the repository "acme/bot" is
	// served at BaseURL + "/acme/bot.git", so functiongit.URLFor(BaseURL, "acme", "bot") is its
	// clone URL.
	BaseURL string
	// Root is the directory holding the bare repositories (GIT_PROJECT_ROOT).
	Root string

	t   testing.TB
	git string
	srv *httptest.Server

	mu         sync.Mutex
	user, pass string
	auth       bool
	repos      map[string]*Repo
	requests   int
}

// Repo is a bare repository on the server.
type Repo struct {
	Name string // as given to Server.Repo: "bot" or "acme/bot"
	Dir  string // the bare repository's directory
	URL  string // its clone URL
}

// symlinkPrefix marks a file content Commit turns into a symbolic link.
const symlinkPrefix = "\x00gittest-symlink:"

// Symlink is a value for Commit's files map that makes the path a symbolic link to target.
func Symlink(target string) string { return symlinkPrefix + target }

// NewServer starts a server; it is closed when the test ends.
func NewServer(t testing.TB) *Server {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("gittest: git is not installed: %v", err)
	}
	s := &Server{Root: t.TempDir(), t: t, git: git, repos: map[string]*Repo{}}
	backend := &cgi.Handler{
		Path: git,
		Args: []string{"http-backend"},
		Dir:  s.Root,
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.Root,
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"HOME=" + s.Root,
		},
		InheritEnv: []string{"PATH"},
		Stderr:     io.Discard,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("gittest: listen: %v", err)
	}
	s.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: s.handler(backend)}}
	s.srv.Start()
	s.BaseURL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// handler checks basic auth when it is required, then hands the request to http-backend.
func (s *Server) handler(backend http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests++
		auth, wantUser, wantPass := s.auth, s.user, s.pass
		s.mu.Unlock()
		if auth {
			u, p, ok := r.BasicAuth()
			if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(wantUser)) != 1 ||
				subtle.ConstantTimeCompare([]byte(p), []byte(wantPass)) != 1 {
				w.Header().Set("WWW-Authenticate", `Basic realm="gittest"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
		}
		backend.ServeHTTP(w, r)
	})
}

// RequireAuth makes every request need HTTP basic credentials user:pass (as a private GitHub
// repository needs a token); a request without them, or with others, gets 401.
func (s *Server) RequireAuth(user, pass string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auth, s.user, s.pass = true, user, pass
}

// Requests is how many HTTP requests the server has received.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// URL is the clone URL of the repository name ("bot" or "acme/bot"), created or not.
func (s *Server) URL(name string) string {
	return s.BaseURL + "/" + strings.Trim(name, "/") + ".git"
}

// Repo creates the bare repository name (its default branch "main"), or returns it if it exists.
func (s *Server) Repo(name string) *Repo {
	s.t.Helper()
	name = strings.Trim(name, "/")
	s.mu.Lock()
	r, ok := s.repos[name]
	s.mu.Unlock()
	if ok {
		return r
	}
	dir := filepath.Join(s.Root, filepath.FromSlash(name)+".git")
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		s.t.Fatalf("gittest: %v", err)
	}
	s.run(s.t, nil, "", "init", "--quiet", "--bare", "-b", "main", dir)
	r = &Repo{Name: name, Dir: dir, URL: s.URL(name)}
	s.mu.Lock()
	s.repos[name] = r
	s.mu.Unlock()
	return r
}

// Commit makes a commit on branch of the repository repoName (created if needed) whose tree is
// exactly files (path with forward slashes → content; a Symlink(target) value makes a symbolic
// link), with the branch's head as parent if the branch exists, a new root commit otherwise,
// and moves the branch to it. It returns the commit's full hex sha.
func (s *Server) Commit(t testing.TB, repoName, branch string, files map[string]string, message string) string {
	t.Helper()
	repo := s.Repo(repoName)
	work := t.TempDir()
	for p, content := range files {
		full := filepath.Join(work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatalf("gittest: %v", err)
		}
		if target, ok := strings.CutPrefix(content, symlinkPrefix); ok {
			if err := os.Symlink(target, full); err != nil {
				t.Fatalf("gittest: %v", err)
			}
			continue
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatalf("gittest: %v", err)
		}
	}
	env := []string{
		"GIT_DIR=" + repo.Dir,
		"GIT_WORK_TREE=" + work,
		"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index"),
	}
	s.run(t, env, "", "add", "--all", "--force", ".")
	tree := s.run(t, env, "", "write-tree")
	args := []string{"commit-tree", tree, "-F", "-"}
	ref := "refs/heads/" + branch
	if parent, ok := s.try(env, "rev-parse", "--verify", "--quiet", ref+"^{commit}"); ok {
		args = append(args, "-p", parent)
	}
	sha := s.run(t, env, message, args...)
	s.run(t, env, "", "update-ref", ref, sha)
	return sha
}

// Head is the sha branch points to in repoName ("" if the branch does not exist).
func (s *Server) Head(repoName, branch string) string {
	repo := s.Repo(repoName)
	out, _ := s.try([]string{"GIT_DIR=" + repo.Dir}, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch+"^{commit}")
	return out
}

// gitEnv isolates the git CLI from the user's and the system's configuration.
func (s *Server) gitEnv(extra []string) []string {
	env := append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=gittest", "GIT_AUTHOR_EMAIL=gittest@example.com",
		"GIT_COMMITTER_NAME=gittest", "GIT_COMMITTER_EMAIL=gittest@example.com",
		"GIT_TERMINAL_PROMPT=0",
	)
	return append(env, extra...)
}

func (s *Server) run(t testing.TB, env []string, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(s.git, append([]string{"-c", "user.name=gittest", "-c", "user.email=gittest@example.com", "-c", "core.symlinks=true"}, args...)...)
	cmd.Env = s.gitEnv(env)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gittest: git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

func (s *Server) try(env []string, args ...string) (string, bool) {
	cmd := exec.Command(s.git, args...)
	cmd.Env = s.gitEnv(env)
	out, err := cmd.Output()
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(out)), true
}
