package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/seed6639df8c/courier/agenthook"
)

// envTransport selects the transport when no --transport is given.
const envTransport = "COURIER_TRANSPORT"

// natsBinary is the sibling that carries asks over NATS: the same
// ./cmd/child built with -tags nats. This binary never links nats.go
// (decision 0028): a NATS transport makes it exec that one.
const natsBinary = "courier-child-nats"

// transportUsage explains --transport and the NATS flags, for the help of
// ask and hook.
const transportUsage = `
Transport: the mailbox (a directory) is the default. --transport URL, or
$COURIER_TRANSPORT, selects another: "" or "file" is the mailbox; a
nats:// or tls:// URL carries the same request and response documents
through a NATS JetStream engine (broker serve --nats...; docs/DISTRIBUTED.md,
docs/decisions/0028-child-over-nats.md). This binary does not link the NATS
client: for a NATS URL it runs ` + natsBinary + `, found beside it, with
the same arguments and environment. Over NATS the mailbox flags (--root,
--watch, --no-heartbeat) do not apply, except that this session's own
grants are kept in the mailbox root where there is one (a --root that
does not exist is no error); the broker's
liveness is its heartbeat in the engine, and an engine that cannot be
reached within --timeout makes the ask unavailable (exit 3 for ask).

The NATS flags, each with an environment default:
  --nats-owner         $COURIER_NATS_OWNER: the asking identity's name in
                       the subjects; default the user of the URL's
                       user:password@, else --nats-user
  --nats-creds         $COURIER_NATS_CREDS: a .creds file (JWT and nkey)
  --nats-nkey          $COURIER_NATS_NKEY: an nkey seed file
  --nats-user          $COURIER_NATS_USER, with --nats-password-file
                       $COURIER_NATS_PASSWORD_FILE
  --nats-ca            $COURIER_NATS_CA: the CA that signed the server's cert
  --nats-cert, --nats-key  $COURIER_NATS_CERT, $COURIER_NATS_KEY: a TLS
                       client certificate
  --nats-local         $COURIER_NATS_LOCAL=1: allow a connection without
                       credentials, to loopback servers only
`

// natsFlags are the settings of a NATS transport. Both builds declare
// them, so that the arguments this binary passes on to its NATS sibling
// parse here first.
type natsFlags struct {
	owner, creds, nkey, user, passwordFile string
	ca, cert, key                          string
	local                                  bool
}

// transportFlags declares --transport and the NATS flags into fs, with
// their environment defaults.
func transportFlags(fs *flag.FlagSet, transport *string, n *natsFlags, getenv func(string) string) {
	fs.StringVar(transport, "transport", getenv(envTransport), `"" or file: the mailbox; nats://host:4222 or tls://host:4222: a NATS JetStream engine; default $`+envTransport)
	for _, f := range []struct {
		env  string
		dst  *string
		name string
		help string
	}{
		{"COURIER_NATS_OWNER", &n.owner, "nats-owner", "NATS: the asking identity's name in the subjects (default: the user of the URL's user:password@, else --nats-user)"},
		{"COURIER_NATS_CREDS", &n.creds, "nats-creds", "NATS: a credentials file (JWT and nkey seed)"},
		{"COURIER_NATS_NKEY", &n.nkey, "nats-nkey", "NATS: an nkey seed file"},
		{"COURIER_NATS_USER", &n.user, "nats-user", "NATS: the user name"},
		{"COURIER_NATS_PASSWORD_FILE", &n.passwordFile, "nats-password-file", "NATS: a file holding the user's password"},
		{"COURIER_NATS_CA", &n.ca, "nats-ca", "NATS: the CA certificate the server's certificate is checked against"},
		{"COURIER_NATS_CERT", &n.cert, "nats-cert", "NATS: a TLS client certificate"},
		{"COURIER_NATS_KEY", &n.key, "nats-key", "NATS: the TLS client certificate's key"},
	} {
		fs.StringVar(f.dst, f.name, getenv(f.env), f.help+"; default $"+f.env)
	}
	local, _ := strconv.ParseBool(getenv("COURIER_NATS_LOCAL"))
	fs.BoolVar(&n.local, "nats-local", local, "NATS: allow a connection without credentials to loopback servers; default $COURIER_NATS_LOCAL")
}

// isNATS reports whether transport names a NATS engine; "" and "file"
// are the mailbox, and anything else is an error naming what is known.
func isNATS(transport string) (bool, error) {
	switch {
	case transport == "" || transport == "file":
		return false, nil
	case strings.HasPrefix(transport, "nats://") || strings.HasPrefix(transport, "tls://"):
		return true, nil
	}
	return false, fmt.Errorf("--transport (or $%s) %q: expected \"file\", or a nats:// or tls:// URL", envTransport, transport)
}

// natsOwner is the owner the subjects are written with: --nats-owner,
// else the user name of the (first) URL's user:password@, else
// --nats-user.
func natsOwner(n natsFlags, transport string) (string, error) {
	if n.owner != "" {
		return n.owner, nil
	}
	first, _, _ := strings.Cut(transport, ",")
	if userinfo, _, ok := splitUserinfo(first); ok {
		// Only user:password@ names a user: a lone token@ is a secret,
		// which must not become a subject anyone may see.
		if name, _, withPassword := strings.Cut(userinfo, ":"); withPassword && name != "" {
			return name, nil
		}
	}
	if n.user != "" {
		return n.user, nil
	}
	return "", fmt.Errorf("the NATS owner is unknown: give --nats-owner (or $COURIER_NATS_OWNER), the asking identity's name its subject permissions are written with")
}

// transportForwarder is a Forwarder over a transport other than the
// mailbox: it connects on its first Forward, bounded by that ask's
// context, and Close releases the connection.
type transportForwarder interface {
	agenthook.Forwarder
	Close()
}

// redactURL is transport as it may be printed: without the user
// information of any of its URLs, which may hold a password or a token.
func redactURL(transport string) string {
	parts := strings.Split(transport, ",")
	for i, p := range parts {
		if _, without, ok := splitUserinfo(p); ok {
			parts[i] = without
		}
	}
	return strings.Join(parts, ",")
}

// splitUserinfo returns the user information of the URL u (what comes
// before the last @ of its authority) and u without it; ok is false when
// u has none. By hand, because net/url is a package more for every child
// process to start, and this binary only needs this much of a URL.
func splitUserinfo(u string) (userinfo, without string, ok bool) {
	scheme, after, found := strings.Cut(u, "://")
	if !found {
		return "", u, false
	}
	end := strings.IndexAny(after, "/?#")
	if end < 0 {
		end = len(after)
	}
	at := strings.LastIndex(after[:end], "@")
	if at < 0 {
		return "", u, false
	}
	return after[:at], scheme + "://" + after[at+1:], true
}
