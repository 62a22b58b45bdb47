// Package localredis finds a Redis server for the tests: TEST_REDIS_URL, else 127.0.0.1:6379 when
// it answers, else a throwaway redis-server on a free port, stopped on Stop.
package localredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultURL is the server tried when no URL is given.
const DefaultURL = "redis://127.0.0.1:6379/0"

// Server is a Redis server to connect to.
type Server struct {
	URL string
	cmd *exec.Cmd
}

// Start returns the server to use.
func Start(ctx context.Context, url string) (*Server, error) {
	if url != "" {
		return &Server{URL: url}, nil
	}
	if answers(ctx, DefaultURL) {
		return &Server{URL: DefaultURL}, nil
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("no Redis: nothing answers on 127.0.0.1:6379 and redis-server is not on PATH; install Redis (Debian: apt-get install redis-server) or set TEST_REDIS_URL")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &Server{URL: fmt.Sprintf("redis://127.0.0.1:%d/0", port)}
	s.cmd = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start throwaway redis-server: %w", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !answers(ctx, s.URL) {
		if time.Now().After(deadline) {
			s.Stop()
			return nil, errors.New("throwaway redis-server did not answer within 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s, nil
}

// Stop stops a throwaway server.
func (s *Server) Stop() {
	if s != nil && s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

func answers(ctx context.Context, url string) bool {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return false
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return c.Ping(ctx).Err() == nil
}

// URLFromEnv is TEST_REDIS_URL.
func URLFromEnv() string { return os.Getenv("TEST_REDIS_URL") }
