package natsbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// ErrUnauthenticated is Connect's refusal of a server it would reach with
// no credentials: anyone who can reach such a server can read and forge
// every ask, so that is allowed only for a server on this host, by choice.
var ErrUnauthenticated = errors.New("natsbox: refusing an unauthenticated NATS connection")

// Connection timing.
const (
	// DefaultConnectTimeout bounds one dial and handshake.
	DefaultConnectTimeout = 5 * time.Second
	// DefaultConnectWait bounds Connect's wait for the first connection
	// when ctx has no deadline.
	DefaultConnectWait = 30 * time.Second
	// maxReconnectDelay caps the reconnect backoff.
	maxReconnectDelay = 2 * time.Second
	// maxPasswordFile bounds a password file read.
	maxPasswordFile = 4096
)

// Options says how to reach the engine and as whom.
type Options struct {
	// URL is the server URL, or several separated by commas
	// (nats://host:4222, tls://host:4222); user:password@ or token@ in a
	// URL counts as credentials.
	URL string
	// Creds is a user JWT and nkey seed file (.creds).
	Creds string
	// NKeySeedFile is an nkey seed file for nkey authentication.
	NKeySeedFile string
	// User and PasswordFile authenticate by user name and password; the
	// password is read from the file (first line), never from a flag.
	User         string
	PasswordFile string
	// CAFile verifies the server's certificate; CertFile and KeyFile are
	// the client certificate (TLS client authentication counts as
	// credentials).
	CAFile   string
	CertFile string
	KeyFile  string
	// Local allows a connection without credentials when every server host
	// is a loopback address (127.0.0.0/8, ::1, localhost).
	Local bool
	// Name names the connection in the server's monitoring.
	Name string
	// InboxPrefix replaces _INBOX, so that permissions can give each owner
	// its own replies (_INBOX_<owner>.>).
	InboxPrefix string
	// ConnectTimeout bounds one dial and handshake; zero means
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// Extra are further nats.go options (handlers), applied last.
	Extra []nats.Option
}

// Connect opens a connection that reconnects forever with backoff (a child
// bounds its use by its own deadline). It waits for the first connection
// until ctx ends, or DefaultConnectWait when ctx has no deadline, and
// refuses with ErrUnauthenticated a server it would reach with no
// credentials unless Local is set and every host is a loopback address.
func Connect(ctx context.Context, opts Options) (*nats.Conn, error) {
	hosts, urlCreds, err := serverHosts(opts.URL)
	if err != nil {
		return nil, err
	}
	nopts, hasCreds, err := credentialOptions(opts)
	if err != nil {
		return nil, err
	}
	if !hasCreds && !urlCreds {
		if !opts.Local {
			return nil, fmt.Errorf("%w to %s: give credentials (a creds file, an nkey seed, a user and password file, or a TLS client certificate), or --nats-local if the server runs on this host", ErrUnauthenticated, redact(opts.URL))
		}
		for _, h := range hosts {
			if !isLoopback(h) {
				return nil, fmt.Errorf("%w to %s: --nats-local allows only loopback hosts, and %q is not one; give credentials", ErrUnauthenticated, redact(opts.URL), h)
			}
		}
		// A cluster's gossip must not lead an unauthenticated client to a
		// host that is not this one.
		nopts = append(nopts, nats.IgnoreDiscoveredServers())
	}
	timeout := opts.ConnectTimeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	nopts = append(nopts,
		nats.Timeout(timeout),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.CustomReconnectDelay(reconnectDelay),
	)
	if opts.Name != "" {
		nopts = append(nopts, nats.Name(opts.Name))
	}
	if opts.InboxPrefix != "" {
		nopts = append(nopts, nats.CustomInboxPrefix(opts.InboxPrefix))
	}
	nopts = append(nopts, opts.Extra...)
	nc, err := nats.Connect(opts.URL, nopts...)
	if err != nil {
		return nil, fmt.Errorf("natsbox: connect to %s: %w", redact(opts.URL), err)
	}
	if err := waitConnected(ctx, nc); err != nil {
		nc.Close()
		return nil, fmt.Errorf("natsbox: connect to %s: %w", redact(opts.URL), err)
	}
	return nc, nil
}

// waitConnected waits for the first connection of a client that retries a
// failed first connect in the background.
func waitConnected(ctx context.Context, nc *nats.Conn) error {
	ch := nc.StatusChanged(nats.CONNECTED, nats.CLOSED)
	defer nc.RemoveStatusListener(ch)
	if nc.IsConnected() {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultConnectWait)
		defer cancel()
	}
	for {
		if nc.IsConnected() {
			return nil
		}
		if nc.IsClosed() {
			return fmt.Errorf("connection closed: %v", nc.LastError())
		}
		select {
		case <-ch:
		case <-ctx.Done():
			if last := nc.LastError(); last != nil {
				return fmt.Errorf("engine unavailable: %w (last error: %v)", ctx.Err(), last)
			}
			return fmt.Errorf("engine unavailable: %w", ctx.Err())
		}
	}
}

// reconnectDelay backs off from 50 ms to maxReconnectDelay.
func reconnectDelay(attempts int) time.Duration {
	d := 50 * time.Millisecond
	for i := 1; i < attempts && d < maxReconnectDelay; i++ {
		d *= 2
	}
	return min(d, maxReconnectDelay)
}

// credentialOptions turns the credential fields into nats.go options and
// says whether any authenticates the client.
func credentialOptions(opts Options) ([]nats.Option, bool, error) {
	var nopts []nats.Option
	has := false
	if opts.Creds != "" {
		nopts = append(nopts, nats.UserCredentials(opts.Creds))
		has = true
	}
	if opts.NKeySeedFile != "" {
		o, err := nats.NkeyOptionFromSeed(opts.NKeySeedFile)
		if err != nil {
			return nil, false, fmt.Errorf("natsbox: nkey seed file %s: %w", opts.NKeySeedFile, err)
		}
		nopts = append(nopts, o)
		has = true
	}
	switch {
	case opts.User != "" && opts.PasswordFile != "":
		pw, err := readPassword(opts.PasswordFile)
		if err != nil {
			return nil, false, err
		}
		nopts = append(nopts, nats.UserInfo(opts.User, pw))
		has = true
	case opts.User != "" || opts.PasswordFile != "":
		return nil, false, errors.New("natsbox: a user needs a password file and a password file a user: give both or neither")
	}
	switch {
	case opts.CertFile != "" && opts.KeyFile != "":
		nopts = append(nopts, nats.ClientCert(opts.CertFile, opts.KeyFile))
		has = true
	case opts.CertFile != "" || opts.KeyFile != "":
		return nil, false, errors.New("natsbox: a TLS client certificate needs both the certificate and the key file")
	}
	if opts.CAFile != "" {
		nopts = append(nopts, nats.RootCAs(opts.CAFile))
	}
	return nopts, has, nil
}

func readPassword(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("natsbox: password file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPasswordFile+1))
	if err != nil {
		return "", fmt.Errorf("natsbox: password file %s: %w", path, err)
	}
	if len(data) > maxPasswordFile {
		return "", fmt.Errorf("natsbox: password file %s: over %d bytes, expected one line", path, maxPasswordFile)
	}
	pw, _, _ := strings.Cut(string(data), "\n")
	pw = strings.TrimSuffix(pw, "\r")
	if pw == "" {
		return "", fmt.Errorf("natsbox: password file %s: first line is empty", path)
	}
	return pw, nil
}

// serverHosts lists the hosts of a comma-separated URL list and says
// whether any URL carries user info (user:password@ or token@).
func serverHosts(list string) (hosts []string, creds bool, err error) {
	for raw := range strings.SplitSeq(list, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		if !strings.Contains(raw, "://") {
			raw = "nats://" + raw
		}
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() == "" {
			return nil, false, fmt.Errorf("natsbox: server URL %q: expected nats://host:port", redact(raw))
		}
		switch u.Scheme {
		case "nats", "tls", "ws", "wss":
		default:
			return nil, false, fmt.Errorf("natsbox: server URL %q: scheme %q is not nats, tls, ws or wss", redact(raw), u.Scheme)
		}
		if u.User != nil {
			creds = true
		}
		hosts = append(hosts, u.Hostname())
	}
	if len(hosts) == 0 {
		return nil, false, errors.New("natsbox: no server URL given")
	}
	return hosts, creds, nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redact hides user info in a URL list before it reaches an error message.
func redact(list string) string {
	out := strings.Split(list, ",")
	for i, raw := range out {
		if at := strings.LastIndex(raw, "@"); at >= 0 {
			scheme := ""
			if j := strings.Index(raw, "://"); j >= 0 && j < at {
				scheme = raw[:j+3]
			}
			out[i] = scheme + "REDACTED@" + raw[at+1:]
		}
	}
	return strings.Join(out, ",")
}
