package cluster

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"
)

// Balancer spreads TCP connections over the api processes as a Kubernetes Service does: each new
// connection goes to the next backend that accepts it, so a killed process is skipped once its
// port refuses. Connections open on a process when it dies are cut, as they would be in a cluster.
type Balancer struct {
	// URL is the address clients and providers use (http://127.0.0.1:port).
	URL string

	l     net.Listener
	mu    sync.Mutex
	addrs []string
	next  int
}

// NewBalancer listens on loopback; it stops when the test ends.
func NewBalancer(t testing.TB) *Balancer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &Balancer{URL: "http://" + l.Addr().String(), l: l}
	go b.serve()
	t.Cleanup(func() { _ = l.Close() })
	return b
}

// Add puts a process's REST API behind the balancer.
func (b *Balancer) Add(p *Process) {
	u, err := url.Parse(p.URL)
	if err != nil || u.Host == "" {
		p.c.t.Fatalf("%s has no REST API to balance", p.Role)
	}
	b.mu.Lock()
	b.addrs = append(b.addrs, u.Host)
	b.mu.Unlock()
}

func (b *Balancer) serve() {
	for {
		in, err := b.l.Accept()
		if err != nil {
			return
		}
		go b.proxy(in)
	}
}

func (b *Balancer) proxy(in net.Conn) {
	defer in.Close()
	b.mu.Lock()
	addrs := append([]string(nil), b.addrs...)
	first := b.next
	b.next++
	b.mu.Unlock()
	var out net.Conn
	for i := range addrs {
		c, err := net.DialTimeout("tcp", addrs[(first+i)%len(addrs)], time.Second)
		if err == nil {
			out = c
			break
		}
	}
	if out == nil {
		return // every backend is down: the client sees the connection close
	}
	defer out.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
	go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
	<-done // one side ended: end both
}
