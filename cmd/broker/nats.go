//go:build nats

package main

import (
	"context"
	"errors"
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
	"github.com/seed6639df8c/courier/internal/sibling"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/natsbridge"
	"github.com/seed6639df8c/courier/natsembed"
	"github.com/seed6639df8c/courier/natsforward"
	"github.com/seed6639df8c/courier/relay"
	"github.com/seed6639df8c/courier/reviewlog"
)

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

// natsFirst does nothing in this build, which serves over NATS itself.
func natsFirst([]string, io.Writer) (int, bool) { return 0, false }

// A sibling run by the build without NATS does not pass the marker on to
// the plugins it starts.
func init() { sibling.Clear() }

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
