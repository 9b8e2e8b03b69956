package natsbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/seed6639df8c/courier/wire"
)

// defaultRequestWait bounds one engine round trip when ctx has no deadline.
const defaultRequestWait = 5 * time.Second

// Serving is a child's verdict on a session's heartbeat in courier_serving:
// the file judge's, minus the pid probe (a broker's pid means nothing on
// another host).
type Serving struct {
	// Alive is true only for a record that decodes, names the session and
	// is fresher than HeartbeatStaleAfter.
	Alive bool
	// Heartbeat is the decoded record, zero when it did not decode.
	Heartbeat wire.Heartbeat
	// Why says why the session is not served, for a debug log.
	Why string
}

// PublishHeartbeat puts hb, encoded as the file heartbeat is, under key
// Token(session) of courier_serving. The broker calls it every
// HeartbeatInterval.
func PublishHeartbeat(ctx context.Context, js jetstream.JetStream, session string, hb wire.Heartbeat) error {
	key, err := Token(session)
	if err != nil {
		return fmt.Errorf("natsbox: heartbeat session: %w", err)
	}
	data, err := wire.EncodeHeartbeat(hb)
	if err != nil {
		return fmt.Errorf("natsbox: heartbeat of %s: %w", session, err)
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	// A plain publish on the bucket's subject is a KV put without first
	// asking for the bucket's info, a round trip per second saved.
	if _, err := js.Publish(ctx, "$KV."+BucketServing+"."+key, data); err != nil {
		return fmt.Errorf("natsbox: put heartbeat of %s into %s: %w", session, BucketServing, err)
	}
	return nil
}

// ReadServing judges session's heartbeat at time now: missing, withdrawn,
// undecodable, naming another session or older than HeartbeatStaleAfter is
// not alive, with Why saying which. The error is for an invalid session id
// or an engine that did not answer.
func ReadServing(ctx context.Context, js jetstream.JetStream, session string, now time.Time) (Serving, error) {
	key, err := Token(session)
	if err != nil {
		return Serving{}, fmt.Errorf("natsbox: serving session: %w", err)
	}
	msg, found, err := directLast(ctx, js, "KV_"+BucketServing, "$KV."+BucketServing+"."+key)
	if err != nil {
		return Serving{}, fmt.Errorf("natsbox: read heartbeat of %s: %w", session, err)
	}
	if !found {
		return Serving{Why: "no heartbeat in " + BucketServing}, nil
	}
	if op := msg.Header.Get("KV-Operation"); op != "" {
		return Serving{Why: "heartbeat withdrawn (" + strings.ToLower(op) + ")"}, nil
	}
	return judge(msg.Data, session, now), nil
}

// judge is the file judge minus the pid probe; data is untrusted.
func judge(data []byte, session string, now time.Time) Serving {
	h, err := wire.DecodeHeartbeat(data)
	if err != nil {
		return Serving{Why: "heartbeat does not decode: " + err.Error()}
	}
	if h.SessionID != session {
		return Serving{Heartbeat: h, Why: fmt.Sprintf("heartbeat names session %q, not %q", h.SessionID, session)}
	}
	// now - updatedAt >= stale, written so a hostile updatedAt near
	// math.MinInt64 cannot overflow the subtraction.
	if h.UpdatedAt <= now.UnixMilli()-HeartbeatStaleAfter.Milliseconds() {
		return Serving{Heartbeat: h, Why: fmt.Sprintf("heartbeat stale: updatedAt %d, now %d", h.UpdatedAt, now.UnixMilli())}
	}
	return Serving{Alive: true, Heartbeat: h}
}

// LastResponse is the response kept on a response subject
// (courier.resp.S.O.R), by direct get; false when there is none.
func LastResponse(ctx context.Context, js jetstream.JetStream, subject string) ([]byte, bool, error) {
	kind, _, _, _, err := ParseSubject(subject)
	if err != nil {
		return nil, false, err
	}
	if kind != KindResponse {
		return nil, false, fmt.Errorf("%w: %q is not a response subject", ErrBadToken, subject)
	}
	msg, found, err := directLast(ctx, js, StreamResponses, subject)
	if err != nil || !found {
		if err != nil {
			err = fmt.Errorf("natsbox: last response on %s: %w", subject, err)
		}
		return nil, false, err
	}
	return msg.Data, true, nil
}

// KeptGone reports whether a gone message is kept on subject (a gone
// subject): the ask's child gave up, perhaps while no broker listened.
func KeptGone(ctx context.Context, js jetstream.JetStream, subject string) (bool, error) {
	kind, _, _, _, err := ParseSubject(subject)
	if err != nil {
		return false, err
	}
	if kind != KindGone {
		return false, fmt.Errorf("%w: %q is not a gone subject", ErrBadToken, subject)
	}
	_, found, err := directLast(ctx, js, StreamGone, subject)
	if err != nil {
		return false, fmt.Errorf("natsbox: kept gone on %s: %w", subject, err)
	}
	return found, nil
}

// directLast asks for the last message on subject in stream with a direct
// get: one request, no stream info, and a permission as narrow as the
// subject ($JS.API.DIRECT.GET.<stream>.<subject>).
func directLast(ctx context.Context, js jetstream.JetStream, stream, subject string) (*nats.Msg, bool, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	msg, err := js.Conn().RequestWithContext(ctx, apiPrefix(js)+"DIRECT.GET."+stream+"."+subject, nil)
	if err != nil {
		return nil, false, err
	}
	if len(msg.Data) == 0 {
		switch st := msg.Header.Get("Status"); st {
		case "":
		case "404":
			return nil, false, nil
		default:
			return nil, false, fmt.Errorf("direct get from %s: status %s %s", stream, st, msg.Header.Get("Description"))
		}
	}
	if msg.Header.Get(jetstream.StreamHeader) == "" {
		return nil, false, fmt.Errorf("direct get from %s: answer without a %s header", stream, jetstream.StreamHeader)
	}
	return msg, true, nil
}

// apiPrefix is the JetStream API prefix js was made with.
func apiPrefix(js jetstream.JetStream) string {
	o := js.Options()
	switch {
	case o.APIPrefix != "":
		return strings.TrimSuffix(o.APIPrefix, ".") + "."
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	}
	return jetstream.DefaultAPIPrefix
}

// bounded gives ctx a deadline when it has none.
func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, defaultRequestWait)
}
