//go:build nats

package main

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/internal/sibling"
	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/natsforward"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// A sibling run by the build without NATS does not pass the marker on.
func init() { sibling.Clear() }

// execNATS does nothing in this build, which carries asks over NATS
// itself.
func execNATS([]string, io.Writer) (int, bool) { return 0, false }

// natsForwarder forwards through a NATS engine, connecting on its first
// Forward: an event or ask that forwards nothing (a local grant, the
// main agent's call) never pays for the connection.
type natsForwarder struct {
	url      string
	flags    natsFlags
	owner    string
	timeout  time.Duration
	deadline time.Time
	log      *reviewlog.Log
	warn     func(error)

	conn   *nats.Conn
	client *natsforward.Client
	// asyncErrors counts the engine's asynchronous errors (asyncError),
	// which come on nats.go's own goroutine.
	asyncErrors atomic.Int32
}

// newNATSForwarder checks the NATS settings; deadline bounds the
// connection and every ask, whose reason names timeout.
func newNATSForwarder(transport string, n natsFlags, timeout time.Duration, deadline time.Time, log *reviewlog.Log, warn func(error)) (transportForwarder, error) {
	owner, err := natsOwner(n, transport)
	if err != nil {
		return nil, err
	}
	if err := natsbox.CheckOwner(owner); err != nil {
		return nil, fmt.Errorf("the NATS owner (--nats-owner, $COURIER_NATS_OWNER or the URL's user): %w", err)
	}
	return &natsForwarder{
		url: transport, flags: n, owner: owner, timeout: timeout, deadline: deadline,
		log: log, warn: warn,
	}, nil
}

// connect connects to the engine within the deadline; the connection
// reconnects by itself from then on.
func (f *natsForwarder) connect(ctx context.Context) error {
	ctx, cancel := context.WithDeadline(ctx, f.deadline)
	defer cancel()
	opts := natsbox.Options{
		URL: f.url, Creds: f.flags.creds, NKeySeedFile: f.flags.nkey, User: f.flags.user, PasswordFile: f.flags.passwordFile,
		CAFile: f.flags.ca, CertFile: f.flags.cert, KeyFile: f.flags.key, Local: f.flags.local,
		Name: "courier-child/" + f.owner,
		// Replies (publish acknowledgements, direct gets) come to this
		// owner's own inboxes, which its permissions let it read.
		InboxPrefix: "_INBOX_" + f.owner,
		// No one dial may outlast the ask.
		ConnectTimeout: max(time.Millisecond, min(natsbox.DefaultConnectTimeout, time.Until(f.deadline))),
		// nats.go writes every asynchronous error (a slow consumer's
		// drops, a permissions violation) to stderr by itself, a line each
		// time: a flood on the response subject would flood the agent's
		// stderr. They become warnings, a few at most.
		Extra: []nats.Option{nats.ErrorHandler(f.asyncError)},
	}
	type dialed struct {
		conn *nats.Conn
		err  error
	}
	done := make(chan dialed, 1)
	go func() {
		conn, err := natsbox.Connect(ctx, opts)
		done <- dialed{conn, err}
	}()
	var conn *nats.Conn
	select {
	case d := <-done:
		if d.err != nil {
			return fmt.Errorf("connecting to the NATS engine at %s: %w", redactURL(f.url), d.err)
		}
		conn = d.conn
	case <-ctx.Done():
		// A dial to a server that accepts and then stalls (a partition,
		// a proxy) does not watch ctx while it waits for the greeting:
		// the ask gives up at its deadline all the same, and the dial's
		// connection, should it come after all, is closed.
		go func() {
			if d := <-done; d.conn != nil {
				d.conn.Close()
			}
		}()
		return fmt.Errorf("connecting to the NATS engine at %s: %w", redactURL(f.url), context.Cause(ctx))
	}
	js, err := jetstream.New(conn)
	if err != nil {
		conn.Close()
		return fmt.Errorf("JetStream at %s: %w", redactURL(f.url), err)
	}
	f.conn = conn
	f.client = &natsforward.Client{
		Conn: conn, JS: js, Owner: f.owner, Log: f.log, OnWarning: f.warn,
		// The ask's deadline counts the connection's time too; the
		// reason names --timeout, as over the mailbox.
		Timeout: f.timeout, Deadline: f.deadline,
	}
	return nil
}

// maxAsyncErrors bounds the engine's asynchronous errors one child
// shows; the answer does not depend on them (a message dropped is looked
// for in the engine, a refusal ends the ask at its deadline).
const maxAsyncErrors = 3

// asyncError shows one of the engine's asynchronous errors as a warning,
// up to maxAsyncErrors, then once that more came.
func (f *natsForwarder) asyncError(_ *nats.Conn, sub *nats.Subscription, err error) {
	switch n := f.asyncErrors.Add(1); {
	case n > maxAsyncErrors+1:
		return
	case n == maxAsyncErrors+1:
		err = fmt.Errorf("more errors from the NATS engine; no more are shown: %w", err)
	case sub != nil:
		err = fmt.Errorf("the NATS engine, on %s: %w", sub.Subject, err)
	default:
		err = fmt.Errorf("the NATS engine: %w", err)
	}
	f.warn(err)
}

// Forward forwards req, connecting first if need be. An engine that
// cannot be reached within the deadline makes the ask unavailable: the
// request was never written.
func (f *natsForwarder) Forward(ctx context.Context, req wire.Request) decision.Decision {
	if f.client == nil {
		if err := f.connect(ctx); err != nil {
			f.warn(err)
			if f.log != nil {
				emit(f.log, f.warn, reviewlog.ForwardingErrorEntry{RequestID: reviewlog.Str(req.ID), Message: forward.ReasonNotWritten, Error: err})
			}
			d := decision.NobodyAnswered(forward.ReasonNotWritten)
			emit(f.log, f.warn, forward.TerminalEntry(req.ID, d))
			return d
		}
	}
	return f.client.Forward(ctx, req)
}

// LogLocal writes the terminal entry of an ask a local grant answered.
func (f *natsForwarder) LogLocal(req wire.Request, d decision.Decision) {
	emit(f.log, f.warn, forward.LocalEntry(req, d))
}

// Close closes the connection, if one was made.
func (f *natsForwarder) Close() {
	if f.conn != nil {
		f.conn.Close()
	}
}

func emit(log *reviewlog.Log, warn func(error), e reviewlog.Entry) {
	if err := log.Emit(e); err != nil {
		warn(err)
	}
}
