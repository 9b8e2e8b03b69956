package main

import "flag"

// natsBinary is the sibling that serves over NATS: the same ./cmd/broker
// built with -tags nats. broker, built without, never links the NATS
// server or client (decision 0034): any NATS flag makes it exec that one.
const natsBinary = "courier-broker-nats"

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
This binary does not link the NATS server or client: with any NATS flag
it runs ` + natsBinary + `, found beside it, with the same
arguments and environment (make build builds both).
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
