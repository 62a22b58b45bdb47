package twiliotest

import (
	"errors"
	"net"
	"sync"
)

// Down takes the peer off the network as an outage does: its open connections are closed and
// new ones are refused (the port is closed), until Up. Nothing sent meanwhile reaches it.
func (s *Server) Down() {
	if err := s.listener.down(); err != nil {
		panic(err)
	}
	s.srv.CloseClientConnections()
}

// Up brings the peer back on the same address after Down.
func (s *Server) Up() {
	if err := s.listener.up(); err != nil {
		panic(err)
	}
}

// switchable is a listener whose port can be closed and opened again at the same address; while
// it is closed, Accept waits.
type switchable struct {
	addr string

	mu     sync.Mutex
	cur    net.Listener // nil while down
	wake   chan struct{}
	closed bool
}

func newSwitchable() (*switchable, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return &switchable{addr: l.Addr().String(), cur: l, wake: make(chan struct{})}, nil
}

func (s *switchable) Accept() (net.Conn, error) {
	for {
		s.mu.Lock()
		cur, wake, closed := s.cur, s.wake, s.closed
		s.mu.Unlock()
		if closed {
			return nil, net.ErrClosed
		}
		if cur == nil {
			<-wake
			continue
		}
		c, err := cur.Accept()
		if err == nil {
			return c, nil
		}
		s.mu.Lock()
		taken := s.cur != cur
		s.mu.Unlock()
		if !taken || !errors.Is(err, net.ErrClosed) {
			return nil, err
		}
		// Down closed it: wait for Up.
	}
}

func (s *switchable) down() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return nil
	}
	err := s.cur.Close()
	s.cur = nil
	return err
}

func (s *switchable) up() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil || s.closed {
		return nil
	}
	l, err := net.Listen("tcp", s.addr)
	if err != nil {
		return err
	}
	s.cur = l
	close(s.wake)
	s.wake = make(chan struct{})
	return nil
}

func (s *switchable) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.wake)
	if s.cur != nil {
		return s.cur.Close()
	}
	return nil
}

func (s *switchable) Addr() net.Addr {
	a, _ := net.ResolveTCPAddr("tcp", s.addr)
	return a
}
