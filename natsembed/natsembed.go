// Package natsembed runs a NATS server with JetStream inside the calling
// process: the one-host set-up of issue 21 (`broker serve --nats-listen`) and
// the tests' engine, so nothing outside the process is needed.
//
// Without a config of the operator's, the broker's server gets two users
// with generated passwords (PrepareUsers): a server without users would
// admit every process that can connect.
//
// It imports no courier package (layer 0). The server's own logging is off
// unless Options.Log is given, and it binds only the addresses asked for:
// an empty Host means loopback, never every interface.
package natsembed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// ReadyTimeout bounds how long Start waits for the server to accept clients
// when the caller's context has no earlier deadline.
const ReadyTimeout = 10 * time.Second

// ShutdownTimeout bounds how long Shutdown waits for the server to stop when
// the caller's context has no earlier deadline.
const ShutdownTimeout = 10 * time.Second

// Options says how to run the embedded server. Fields left zero keep a
// value from ConfigFile when one is given.
type Options struct {
	// ServerName names the server; a JetStream cluster needs distinct names.
	ServerName string
	// Host is the client listener's address; empty means 127.0.0.1.
	Host string
	// Port is the client port; -1 picks a free one, 0 means 4222 (or the
	// config file's port).
	Port int
	// StoreDir is JetStream's storage directory; required (here or in
	// ConfigFile).
	StoreDir string
	// ConfigFile is a nats-server configuration file (accounts, users,
	// permissions, TLS) read first; the fields above override it.
	ConfigFile string
	// Cluster, when set, opens a route listener and joins the routes.
	Cluster *Cluster
	// NoLog keeps the server silent even when Log is set.
	NoLog bool
	// Log receives the server's own log lines; nil means none.
	Log io.Writer
}

// Cluster is the route listener of a server in a JetStream cluster.
type Cluster struct {
	// Name is the cluster's name, the same on every node.
	Name string
	// Host is the route listener's address; empty means 127.0.0.1.
	Host string
	// Port is the route port; -1 picks a free one.
	Port int
	// Routes are the other nodes' route URLs (nats://host:port).
	Routes []string
}

// Server is a running embedded server.
type Server struct {
	ns *server.Server
}

// Start runs a server with JetStream and waits until it accepts clients, for
// at most ReadyTimeout or ctx's deadline, whichever comes first.
func Start(ctx context.Context, opts Options) (*Server, error) {
	so, err := serverOptions(opts)
	if err != nil {
		return nil, err
	}
	where := addr(so.Host, so.Port)
	ns, err := server.NewServer(so)
	if err != nil {
		return nil, fmt.Errorf("natsembed: new server on %s: %w", where, err)
	}
	// Always installed: it keeps the server's fatal error for ours, and
	// writes lines only when asked to.
	logs := &recorder{}
	if opts.Log != nil && !opts.NoLog {
		logs.w = opts.Log
	}
	ns.SetLogger(logs, false, false)
	ns.Start()
	wait := ReadyTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		wait = time.Until(dl)
	}
	if err := waitReady(ctx, ns, wait, logs); err != nil {
		shutdown(ns, ShutdownTimeout)
		if fatal := logs.fatal(); fatal != "" {
			err = fmt.Errorf("%w: %s", err, fatal)
		}
		return nil, fmt.Errorf("natsembed: server on %s: %w", where, err)
	}
	if !ns.JetStreamEnabled() {
		shutdown(ns, ShutdownTimeout)
		return nil, fmt.Errorf("natsembed: server on %s started without JetStream (store dir %q): %s", where, so.StoreDir, logs.fatal())
	}
	return &Server{ns: ns}, nil
}

// waitReady waits until ns accepts clients, gives up early when the server
// reports a fatal error (it may keep running without JetStream) or stops
// on its own, and never waits past wait or ctx.
func waitReady(ctx context.Context, ns *server.Server, wait time.Duration, logs *recorder) error {
	const step = 50 * time.Millisecond
	deadline := time.Now().Add(wait)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("not ready for connections within %s", wait)
		}
		if logs.hasFatal() {
			return errors.New("fatal error at start")
		}
		if ns.ReadyForConnections(min(step, left)) {
			return nil
		}
		if !ns.Running() {
			return errors.New("stopped before it was ready for connections")
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("not ready for connections: %w", err)
		}
	}
}

// serverOptions merges opts over the config file, if any.
func serverOptions(opts Options) (*server.Options, error) {
	so := &server.Options{}
	if opts.ConfigFile != "" {
		var err error
		so, err = server.ProcessConfigFile(opts.ConfigFile)
		if err != nil {
			return nil, fmt.Errorf("natsembed: config file %s: %w", opts.ConfigFile, err)
		}
	}
	if opts.ServerName != "" {
		so.ServerName = opts.ServerName
	}
	if opts.Host != "" {
		so.Host = opts.Host
	} else if so.Host == "" {
		// The server's own default is 0.0.0.0; bind only what is asked.
		so.Host = "127.0.0.1"
	}
	if opts.Port != 0 {
		so.Port = opts.Port
	}
	if opts.StoreDir != "" {
		so.StoreDir = opts.StoreDir
	}
	if so.StoreDir == "" {
		return nil, errors.New("natsembed: Options.StoreDir is empty: JetStream needs a storage directory")
	}
	so.JetStream = true
	so.NoSigs = true // the broker handles its own signals
	so.NoLog = opts.NoLog || opts.Log == nil
	if c := opts.Cluster; c != nil {
		if c.Name == "" {
			return nil, errors.New("natsembed: Options.Cluster.Name is empty: cluster nodes share a name")
		}
		so.Cluster.Name = c.Name
		so.Cluster.Host = c.Host
		if so.Cluster.Host == "" {
			so.Cluster.Host = "127.0.0.1"
		}
		so.Cluster.Port = c.Port
		so.Routes = nil
		for _, r := range c.Routes {
			u, err := url.Parse(r)
			if err != nil || u.Host == "" {
				return nil, fmt.Errorf("natsembed: Options.Cluster.Routes: %q is not a route URL (nats://host:port): %v", r, err)
			}
			so.Routes = append(so.Routes, u)
		}
	}
	return so, nil
}

// ClientURL is the URL clients connect to: nats://host:port, or tls://
// when the config file turns TLS on; the real port when Port was -1, and
// loopback when the server binds every interface (a client of this
// process is on this host).
func (s *Server) ClientURL() string {
	u, err := url.Parse(s.ns.ClientURL())
	a, ok := s.ns.Addr().(*net.TCPAddr)
	if err != nil || !ok || a == nil {
		return s.ns.ClientURL()
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip.To4() == nil {
			host = "::1"
		}
	}
	u.Host = net.JoinHostPort(host, strconv.Itoa(a.Port))
	return u.String()
}

// ClusterURL is the route URL other nodes list in their Routes, or "" when
// the server runs without a cluster.
func (s *Server) ClusterURL() string {
	a := s.ns.ClusterAddr()
	if a == nil {
		return ""
	}
	return "nats://" + net.JoinHostPort(a.IP.String(), strconv.Itoa(a.Port))
}

// NATS is the underlying server, for tests and tools that need more.
func (s *Server) NATS() *server.Server { return s.ns }

// Shutdown stops the server and waits until it has stopped, for at most
// ShutdownTimeout or ctx's deadline; the error says the wait ran out.
func (s *Server) Shutdown(ctx context.Context) error {
	wait := ShutdownTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		wait = time.Until(dl)
	}
	if !shutdown(s.ns, wait) {
		return fmt.Errorf("natsembed: server %s not shut down within %s", s.ns.Name(), wait)
	}
	return nil
}

// shutdown stops ns; false when it did not finish within wait (the server's
// own goroutines then finish on their own).
func shutdown(ns *server.Server, wait time.Duration) bool {
	done := make(chan struct{})
	go func() {
		ns.Shutdown()
		ns.WaitForShutdown()
		close(done)
	}()
	t := time.NewTimer(max(wait, 0))
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

func addr(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
