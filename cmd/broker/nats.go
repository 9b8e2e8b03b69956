package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed6639df8c/courier/internal/fileperm"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/natsbridge"
	"github.com/seed6639df8c/courier/natsembed"
	"github.com/seed6639df8c/courier/natsforward"
	"github.com/seed6639df8c/courier/relay"
	"github.com/seed6639df8c/courier/reviewlog"
)

// natsUsage is broker serve's help on serving over NATS.
const natsUsage = `
Over NATS (docs/DISTRIBUTED.md): with --nats URL the broker also serves
the asks children publish to a NATS JetStream engine (a server or a
cluster that exists); with --nats-listen ADDR it runs the engine itself,
embedded, its store under --nats-store, and serves through it. Either
way the asks go through this broker's own inbox, and the file inbox is
served as before. A connection must be authenticated (--nats-creds,
--nats-nkey, --nats-user with --nats-password-file, or a client
certificate) unless --nats-local says the server is on this machine
(loopback addresses only) and was run without users on purpose.

An embedded server without --nats-config (on a loopback address only)
is never without users: it gets two, each with a random password kept
in a file of its store (made 0700, and kept across restarts; a file
with another owner or mode is refused, never used): "broker"
(<store>/broker.password, 0600), which the broker connects as, and
"local" (<store>/local.password, 0600), the one owner every child of
this host asks as. The permissions are those of docs/decisions/0027: a
child can publish its asks and read its own answers, but not read the
requests nor answer, heartbeat or withdraw as the broker. The config is
written there too (<store>/server.conf, 0600). The line after "serving
... over NATS" says what a child on this host passes:
  --transport nats://127.0.0.1:PORT --nats-user local
  --nats-password-file <store>/local.password
With --ask-group, local.password is 0640 and the store 0710, both of the
ask group, so that its members can read it; broker.password never is.
A server on another address, or with owners of its own, needs
--nats-config, with the users, permissions and TLS children need. One
broker serves a session through an engine: a second refuses to start,
naming the holder.
--relay-transport URL makes --terminal relay forward to its parent over
NATS, as --relay-owner, with the --relay-* credentials.
`

// natsCreds are one connection's credential flags.
type natsCreds struct {
	creds, nkey, user, passwordFile, ca, cert, key string
	local                                          bool
}

// addNATSCreds registers the credential flags under prefix ("nats" or
// "relay"); what says whose connection they are.
func addNATSCreds(fs *flag.FlagSet, prefix, what string) *natsCreds {
	c := &natsCreds{}
	fs.StringVar(&c.creds, prefix+"-creds", "", what+": a NATS credentials file (JWT and nkey seed)")
	fs.StringVar(&c.nkey, prefix+"-nkey", "", what+": an nkey seed file")
	fs.StringVar(&c.user, prefix+"-user", "", what+": the user name (with --"+prefix+"-password-file)")
	fs.StringVar(&c.passwordFile, prefix+"-password-file", "", what+": a file holding the user's password")
	fs.StringVar(&c.ca, prefix+"-ca", "", what+": the CA file the server's TLS certificate is checked with")
	fs.StringVar(&c.cert, prefix+"-cert", "", what+": a TLS client certificate (with --"+prefix+"-key)")
	fs.StringVar(&c.key, prefix+"-key", "", what+": the client certificate's key")
	fs.BoolVar(&c.local, prefix+"-local", false, what+": allow a connection without credentials, to a loopback address only")
	return c
}

// given reports whether any credential flag was given.
func (c *natsCreds) given() bool {
	return *c != natsCreds{}
}

func (c *natsCreds) options(url, name string) natsbox.Options {
	return natsbox.Options{
		URL: url, Creds: c.creds, NKeySeedFile: c.nkey, User: c.user, PasswordFile: c.passwordFile,
		CAFile: c.ca, CertFile: c.cert, KeyFile: c.key, Local: c.local, Name: name,
	}
}

// natsFlags are broker serve's flags for serving over NATS.
type natsFlags struct {
	url, listen, store, config string
	replicas                   int
	creds                      *natsCreds
	// relayURL and relayOwner, with relayCreds, make --terminal relay
	// forward over NATS.
	relayURL, relayOwner string
	relayCreds           *natsCreds
}

func addNATSFlags(fs *flag.FlagSet) *natsFlags {
	f := &natsFlags{}
	fs.StringVar(&f.url, "nats", "", "also serve the asks arriving over NATS JetStream at this URL (nats://host:4222, a comma-separated list for a cluster)")
	fs.StringVar(&f.listen, "nats-listen", "", "run an embedded NATS JetStream server on ADDR (host:port; port 0 picks a free one) and serve through it")
	fs.StringVar(&f.store, "nats-store", "", "with --nats-listen: the embedded server's store, which holds the generated users' password files without --nats-config; default <root>/courier/nats")
	fs.StringVar(&f.config, "nats-config", "", "with --nats-listen: a nats-server config file (accounts, users, permissions, TLS, cluster); needed off loopback")
	fs.IntVar(&f.replicas, "nats-replicas", 1, "replicas of the streams and buckets (a cluster's: 3)")
	f.creds = addNATSCreds(fs, "nats", "the broker's NATS connection")
	fs.StringVar(&f.relayURL, "relay-transport", "", "with --terminal relay: forward to the parent over NATS at this URL instead of the mailbox")
	fs.StringVar(&f.relayOwner, "relay-owner", "", "with --relay-transport: the identity this broker asks as (its subjects' owner token)")
	f.relayCreds = addNATSCreds(fs, "relay", "the relay's NATS connection")
	return f
}

// check refuses flag combinations that cannot work, before anything
// starts.
func (f *natsFlags) check(terminal string) error {
	switch {
	case f.url != "" && f.listen != "":
		return errors.New("--nats and --nats-listen: give one (--nats-listen serves through the server it runs)")
	case f.listen == "" && (f.store != "" || f.config != ""):
		return errors.New("--nats-store and --nats-config configure the server --nats-listen runs")
	case f.replicas < 1:
		return fmt.Errorf("--nats-replicas %d: expected 1 or more", f.replicas)
	case f.relayURL != "" && terminal != "relay":
		return errors.New("--relay-transport is how --terminal relay reaches its parent: it needs --terminal relay")
	case f.relayURL != "" && natsbox.CheckOwner(f.relayOwner) != nil:
		return fmt.Errorf("--relay-transport needs --relay-owner NAME (%v)", natsbox.CheckOwner(f.relayOwner))
	}
	if f.listen != "" {
		host, port, err := net.SplitHostPort(f.listen)
		if err != nil {
			return fmt.Errorf("--nats-listen %q: expected host:port: %w", f.listen, err)
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return fmt.Errorf("--nats-listen %q: port %q: expected a number", f.listen, port)
		}
		if f.config == "" && !loopbackHost(host) {
			return fmt.Errorf("--nats-listen %s without --nats-config: a server off the loopback address is for remote children, who need users, permissions and TLS; give them in a nats-server config file (--nats-config), or listen on 127.0.0.1", f.listen)
		}
		if f.config == "" && f.creds.given() {
			return fmt.Errorf("--nats-listen without --nats-config: the embedded server has its own users and the broker connects as %q with its password file in the store; --nats-local, --nats-creds, --nats-nkey, --nats-user, --nats-password-file, --nats-ca, --nats-cert and --nats-key are for a server of your own (--nats URL, or --nats-listen with --nats-config)", natsembed.BrokerUser)
		}
	}
	return nil
}

// loopbackHost reports whether host names this machine's loopback only.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (f *natsFlags) enabled() bool { return f.url != "" || f.listen != "" }

// natsServing is the broker's NATS side while it serves.
type natsServing struct {
	where string
	// childLine is the line after the serving line that says what a
	// child on this host passes, or "".
	childLine string
	// ended is closed when the bridge stopped: by stop, or by itself
	// (it lost the session's lease).
	ended <-chan struct{}
	// stop ends the bridge, the connection and the embedded server,
	// once serve answered everything, and returns the bridge's error.
	stop func() error
}

// startNATS runs what the NATS flags ask for: the embedded server, the
// connection, the engine's streams and buckets, and the bridge, which
// holds the session's lease before this returns. stopIntake is closed
// when the broker begins to stop; stop ends the rest once serve answered
// everything.
func startNATS(ctx context.Context, f *natsFlags, layout mailbox.Layout, session string, review *reviewlog.Log, stopIntake <-chan struct{}, stderr io.Writer) (*natsServing, error) {
	var (
		srv   *natsembed.Server
		url   = f.url
		creds = *f.creds
		where = f.url
		// childLine, ended by a newline, says what a child passes to
		// ask through the embedded server; "" when the operator's
		// config has the users.
		childLine string
	)
	cleanup := func() {}
	if f.listen != "" {
		host, portText, _ := net.SplitHostPort(f.listen)
		port, _ := strconv.Atoi(portText)
		store := f.store
		if store == "" {
			store = filepath.Join(layout.StateDir(), "nats")
		}
		var users natsembed.Users
		if f.config == "" {
			// Never a server without users: it would admit every
			// process of the machine as the broker and every owner.
			askGroup := -1
			if layout.Isolation != nil {
				askGroup = layout.Isolation.GID
			}
			var err error
			if users, err = natsembed.PrepareUsers(store, askGroup); err != nil {
				return nil, err
			}
		} else if err := natsembed.CheckConfigFile(f.config); err != nil {
			return nil, err
		} else if err := os.MkdirAll(store, 0o700); err != nil {
			return nil, fmt.Errorf("--nats-store: %w", err)
		}
		if port == 0 {
			port = -1 // a free port, said on the serving line
		}
		config := f.config
		if config == "" {
			config = users.Config
		}
		opts := natsembed.Options{Host: host, Port: port, StoreDir: store, ConfigFile: config, NoLog: true}
		if f.config == "" {
			// A config names its own server (each node of a cluster
			// its own); a server of this broker's alone is named for
			// the session.
			tok, err := natsbox.Token(session)
			if err != nil {
				return nil, err
			}
			opts.ServerName = "courier-" + tok
		}
		var err error
		srv, err = natsembed.Start(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("--nats-listen %s: %w", f.listen, err)
		}
		cleanup = func() {
			shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := srv.Shutdown(shut); err != nil {
				fmt.Fprintf(stderr, "broker: stopping the embedded NATS server: %v\n", err)
			}
		}
		url = srv.ClientURL()
		where = fmt.Sprintf("%s (embedded, store %s)", url, store)
		if f.config == "" {
			creds = natsCreds{user: users.Broker, passwordFile: users.BrokerPassword}
			where = fmt.Sprintf("%s (embedded, store %s, users %s and %s)", url, store, users.Broker, users.Owner)
			childLine = "broker: a child on this host asks over NATS with: " + childFlags(url, users) + "\n"
		}
	}
	conn, js, err := connectNATS(ctx, creds.options(url, "courier broker "+session))
	if err != nil {
		cleanup()
		return nil, err
	}
	stopAll := func() { conn.Close(); cleanup() }
	op, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = natsbox.Ensure(op, js, natsbox.Config{Replicas: f.replicas})
	cancel()
	if err != nil {
		stopAll()
		return nil, fmt.Errorf("preparing the NATS streams and buckets: %w", err)
	}
	bridge := &natsbridge.Bridge{
		JS: js, Conn: conn, Layout: layout, Session: session, Log: review, StopIntake: stopIntake,
		OnError: func(err error) { fmt.Fprintf(stderr, "broker: %v\n", err) },
	}
	if host, err := os.Hostname(); err == nil {
		bridge.Holder, bridge.EarlierRun = natsbridge.Holder(os.Getpid(), host, layout.Root)
	}
	running, stopBridge := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- bridge.Run(running) }()
	select {
	case err := <-done:
		stopBridge()
		stopAll()
		if err == nil {
			err = errors.New("nats bridge: stopped before serving")
		}
		return nil, err
	case <-bridge.Serving():
	}
	ended := make(chan struct{})
	var runErr error
	go func() {
		runErr = <-done
		close(ended)
	}()
	return &natsServing{where: where, childLine: childLine, ended: ended, stop: func() error {
		stopBridge()
		<-ended
		stopAll()
		return runErr
	}}, nil
}

// childFlags is what a child on this host passes to ask through the
// embedded server: its URL, the owner's user and its password file (the
// owner defaults to the user).
func childFlags(url string, u natsembed.Users) string {
	return "--transport " + shellWord(url) + " --nats-user " + u.Owner + " --nats-password-file " + shellWord(u.OwnerPassword)
}

// shellWord quotes s for a POSIX shell when it holds anything but plain
// path characters.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// connectNATS connects (natsbox.Connect: credentials required off a
// loopback address) and opens JetStream on the connection.
func connectNATS(ctx context.Context, opts natsbox.Options) (*nats.Conn, jetstream.JetStream, error) {
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = 10 * time.Second
	}
	conn, err := natsbox.Connect(ctx, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to NATS at %s: %w", opts.URL, err)
	}
	js, err := jetstream.New(conn)
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("JetStream at %s: %w", opts.URL, err)
	}
	return conn, js, nil
}

// openNATSRelay is --terminal relay over NATS (--relay-transport): the
// parent's broker is reached through the engine, as --relay-owner.
func openNATSRelay(spec terminalSpec, parent string) (openTerminal, error) {
	f := spec.nats
	conn, js, err := connectNATS(spec.ctx, f.relayCreds.options(f.relayURL, "courier relay "+spec.session))
	if err != nil {
		return openTerminal{}, fmt.Errorf("--relay-transport: %w", err)
	}
	client := &natsforward.Client{
		Conn: conn, JS: js, Owner: f.relayOwner, Log: spec.log, Timeout: spec.forwardingTimeout,
		OnWarning: func(err error) { fmt.Fprintf(spec.stderr, "broker: relay: %v\n", err) },
	}
	return openTerminal{Terminal: &relay.Terminal{Forwarder: client, Session: spec.session, Parent: parent}, close: conn.Close}, nil
}

// natsExit is the exit status for a NATS side that could not start: a
// usage error for a connection refused for want of credentials (the
// message names the flag) and for a store or password file of the
// embedded server the broker does not trust (the message says how to fix
// it), 1 for the rest (another broker holds the session, the engine is
// unreachable).
func natsExit(err error) int {
	if errors.Is(err, natsbox.ErrUnauthenticated) || errors.Is(err, fileperm.ErrRefused) {
		return exitUsage
	}
	return 1
}
