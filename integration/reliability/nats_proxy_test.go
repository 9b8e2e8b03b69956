package reliability

import (
	"bytes"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"
)

// faultProxy is a TCP proxy between NATS clients and a server that a test
// can partition: stall (nothing forwarded either way, connections kept
// open, as a network that silently drops packets), resume, and drop
// (every connection closed at once, as a server or middlebox reset; new
// connections are still accepted).
type faultProxy struct {
	ln     net.Listener
	target string
	done   chan struct{} // closed by Close
	wg     sync.WaitGroup

	mu       sync.Mutex
	open     chan struct{} // closed while forwarding; a fresh one while stalled
	conns    map[net.Conn]struct{}
	accepted int
	closed   bool
}

// newFaultProxy listens on a random loopback port and forwards to target;
// the test's cleanup closes it.
func newFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("fault proxy: %v", err)
	}
	open := make(chan struct{})
	close(open)
	p := &faultProxy{ln: ln, target: target, done: make(chan struct{}), open: open, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's host:port.
func (p *faultProxy) Addr() string { return p.ln.Addr().String() }

// URL is the proxy as a NATS URL.
func (p *faultProxy) URL() string { return "nats://" + p.Addr() }

// Accepted is how many client connections the proxy has taken so far.
func (p *faultProxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// Stall stops forwarding in both directions; connections stay open and
// new ones are accepted, but nothing reaches either side until Resume.
func (p *faultProxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
		p.open = make(chan struct{})
	default: // already stalled
	}
}

// Resume forwards again, the held bytes first.
func (p *faultProxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
	default:
		close(p.open)
	}
}

// Drop closes every connection, both sides; the proxy keeps accepting.
// It returns how many connection ends it closed.
func (p *faultProxy) Drop() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.conns)
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
	return n
}

// Close stops accepting, closes every connection and returns once every
// goroutine of the proxy has ended.
func (p *faultProxy) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.done)
		p.ln.Close()
		for c := range p.conns {
			c.Close()
			delete(p.conns, c)
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// track records c as open, or closes it at once when the proxy is closed.
func (p *faultProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *faultProxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
	c.Close()
}

func (p *faultProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		p.accepted++
		p.mu.Unlock()
		if !p.track(client) {
			return
		}
		p.wg.Add(1)
		go p.serve(client)
	}
}

// serve dials the target for one client and pipes both ways until either
// side ends; a dial is bounded so that Close never waits long on it.
func (p *faultProxy) serve(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return // the client sees its connection closed, as with a dead server
	}
	if !p.track(server) {
		return
	}
	defer p.untrack(server)
	var pipes sync.WaitGroup
	pipes.Add(2)
	go func() { defer pipes.Done(); p.pipe(server, client) }()
	go func() { defer pipes.Done(); p.pipe(client, server) }()
	pipes.Wait()
}

// pipe copies src to dst, holding each chunk while the proxy is stalled;
// when either side fails, both are closed so that the other pipe ends too.
func (p *faultProxy) pipe(dst, src net.Conn) {
	defer func() { dst.Close(); src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.gate() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// gate waits while the proxy is stalled; false once it is closed.
func (p *faultProxy) gate() bool {
	p.mu.Lock()
	open := p.open
	p.mu.Unlock()
	select {
	case <-open:
		return true
	case <-p.done:
		return false
	}
}

// TestFaultProxy checks the proxy the NATS campaigns partition children
// with: it forwards, a stall holds bytes both ways without closing,
// resume delivers them, drop closes every connection and new ones work,
// and Close ends every goroutine.
func TestFaultProxy(t *testing.T) {
	before := runtime.NumGoroutine()
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var echoes sync.WaitGroup
	echoes.Add(1)
	go func() {
		defer echoes.Done()
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			echoes.Add(1)
			go func() { defer echoes.Done(); defer c.Close(); io.Copy(c, c) }()
		}
	}()

	p := newFaultProxy(t, echo.Addr().String())
	dial := func() net.Conn {
		t.Helper()
		c, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	roundTrip := func(c net.Conn, msg string, within time.Duration) error {
		t.Helper()
		if _, err := c.Write([]byte(msg)); err != nil {
			return err
		}
		c.SetReadDeadline(time.Now().Add(within))
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(c, got); err != nil {
			return err
		}
		if !bytes.Equal(got, []byte(msg)) {
			t.Fatalf("echo %q, want %q", got, msg)
		}
		return nil
	}

	c1 := dial()
	if err := roundTrip(c1, "one", waitLimit); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}

	// Stalled: the write is taken, no echo comes back, the connection
	// stays open.
	p.Stall()
	c1.Write([]byte("held"))
	c1.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var ne net.Error
	if _, err := c1.Read(make([]byte, 4)); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read while stalled: %v, want a timeout", err)
	}
	// A connection made while stalled is accepted but carries nothing.
	c2 := dial()
	c2.Write([]byte("late"))
	c2.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := c2.Read(make([]byte, 4)); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("new connection while stalled: %v, want a timeout", err)
	}

	// Resumed: the held bytes arrive, in order, then new traffic.
	p.Resume()
	for _, c := range []net.Conn{c1, c2} {
		c.SetReadDeadline(time.Now().Add(waitLimit))
		got := make([]byte, 4)
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatalf("held bytes after resume: %v", err)
		}
		if string(got) != "held" && string(got) != "late" {
			t.Fatalf("held bytes after resume: %q", got)
		}
	}
	if err := roundTrip(c1, "two", waitLimit); err != nil {
		t.Fatalf("after resume: %v", err)
	}

	// Dropped: both clients see their connection end; a new one works.
	if n := p.Drop(); n != 4 {
		t.Errorf("drop closed %d connection ends, want 4 (2 clients, 2 server sides)", n)
	}
	for _, c := range []net.Conn{c1, c2} {
		c.SetReadDeadline(time.Now().Add(waitLimit))
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
			var oe *net.OpError
			if !errors.As(err, &oe) { // a reset is fine too
				t.Fatalf("read after drop: %v, want the connection closed", err)
			}
		}
		c.Close()
	}
	c3 := dial()
	if err := roundTrip(c3, "three", waitLimit); err != nil {
		t.Fatalf("a new connection after drop: %v", err)
	}
	if got := p.Accepted(); got != 3 {
		t.Errorf("accepted %d connections, want 3", got)
	}

	// Closed while stalled with a connection open: every goroutine ends.
	p.Stall()
	c3.Write([]byte("stuck"))
	p.Close()
	c3.Close()
	echo.Close()
	echoes.Wait()
	waitFor(t, "the proxy's goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}
