// Package natsbox is courier's layout on a NATS JetStream engine (issue 21,
// docs/decisions/0027-nats-engine-layout.md): the subjects a request, its
// response and a withdrawal travel on, the two streams and the two key-value
// buckets, the broker's heartbeat and its one-broker-per-session lease, and
// a connection that refuses to run unauthenticated unless told the server
// is local. It carries the mailbox's documents unchanged (package wire) and
// knows nothing of the filesystem mailbox.
package natsbox

import (
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Subject names, streams and buckets of the layout.
const (
	// SubjectRoot is the first token of every courier subject.
	SubjectRoot = "courier"
	// KindRequest, KindResponse and KindGone are the second token:
	// courier.<kind>.S.O.R.
	KindRequest  = "req"
	KindResponse = "resp"
	KindGone     = "gone"

	// StreamRequests keeps requests until a broker takes them (work queue).
	StreamRequests = "COURIER_REQUESTS"
	// StreamResponses keeps the last response of each request for a
	// reconnecting child.
	StreamResponses = "COURIER_RESPONSES"
	// StreamGone keeps the last gone message of each request, so that a
	// broker that was not running when a child gave up (a restart, a
	// standby taking over) does not decide an ask nobody waits for.
	StreamGone = "COURIER_GONE"
	// BucketServing holds each serving session's heartbeat, key Token(S).
	BucketServing = "courier_serving"
	// BucketLease holds each session's broker lease, key Token(S).
	BucketLease = "courier_lease"

	// MaxMsgSize bounds a request or response document, the mailbox's
	// MaxFileSize (asserted equal by a test; natsbox does not import mailbox).
	MaxMsgSize = 1 << 20

	// MaxTokenLen bounds one subject token made by Token.
	MaxTokenLen = 200
)

var (
	plainToken = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)
	ownerRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)
)

// ErrBadToken is wrapped by every refusal of an id, owner or token.
var ErrBadToken = errors.New("natsbox: not a valid subject token")

// Token turns a session id or a request id into one subject token: the id
// itself when it is plain (^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$), else "_"
// followed by base64url (no padding) of its bytes. A plain token never
// starts with "_", so two ids never share a token. The empty id, and an id
// whose token would exceed MaxTokenLen bytes, are refused.
func Token(id string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("%w: the id is empty", ErrBadToken)
	}
	if plainToken.MatchString(id) {
		return id, nil
	}
	if n := 1 + base64.RawURLEncoding.EncodedLen(len(id)); n > MaxTokenLen {
		return "", fmt.Errorf("%w: id of %d bytes would make a %d-byte token, over %d", ErrBadToken, len(id), n, MaxTokenLen)
	}
	return "_" + base64.RawURLEncoding.EncodeToString([]byte(id)), nil
}

// DecodeToken is Token's inverse: the id a token stands for. Only tokens
// Token can return are accepted, so each id has exactly one token.
func DecodeToken(tok string) (string, error) {
	if plainToken.MatchString(tok) {
		return tok, nil
	}
	enc, ok := strings.CutPrefix(tok, "_")
	if !ok || len(tok) > MaxTokenLen {
		return "", fmt.Errorf("%w: %q is neither a plain id nor _ and base64url", ErrBadToken, tok)
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(enc)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %v", ErrBadToken, tok, err)
	}
	id := string(raw)
	if again, err := Token(id); err != nil || again != tok {
		return "", fmt.Errorf("%w: %q is not the token of the id it encodes", ErrBadToken, tok)
	}
	return id, nil
}

// CheckOwner accepts an owner name (^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$): an
// operator-chosen name that subject permissions are written with, so it is
// used as is, never encoded.
func CheckOwner(owner string) error {
	if !ownerRE.MatchString(owner) {
		return fmt.Errorf("%w: owner %q must match %s", ErrBadToken, owner, ownerRE)
	}
	return nil
}

// RequestSubject is courier.req.S.O.R, where a child publishes its request.
func RequestSubject(session, owner, requestID string) (string, error) {
	return subject(KindRequest, session, owner, requestID)
}

// ResponseSubject is courier.resp.S.O.R, where the broker publishes the
// response and the child listens.
func ResponseSubject(session, owner, requestID string) (string, error) {
	return subject(KindResponse, session, owner, requestID)
}

// GoneSubject is courier.gone.S.O.R, where a child says it gave up.
func GoneSubject(session, owner, requestID string) (string, error) {
	return subject(KindGone, session, owner, requestID)
}

// MsgID is S.O.R, the Nats-Msg-Id header a request and its response are
// published with, so a redelivered publish is stored once.
func MsgID(session, owner, requestID string) (string, error) {
	s, o, r, err := parts(session, owner, requestID)
	if err != nil {
		return "", err
	}
	return s + "." + o + "." + r, nil
}

// SessionRequestFilter is courier.req.S.>, every request to session S.
func SessionRequestFilter(session string) (string, error) {
	return sessionFilter(KindRequest, session)
}

// SessionGoneFilter is courier.gone.S.>, every withdrawal in session S.
func SessionGoneFilter(session string) (string, error) {
	return sessionFilter(KindGone, session)
}

// ParseSubject splits courier.<kind>.S.O.R. The session and id come back as
// tokens (DecodeToken gives the ids); every part is checked as the builders
// check it, so a subject ParseSubject accepts is one they can make.
func ParseSubject(subject string) (kind, sessionTok, owner, idTok string, err error) {
	f := strings.Split(subject, ".")
	if len(f) != 5 || f[0] != SubjectRoot {
		return "", "", "", "", fmt.Errorf("%w: subject %q is not courier.<kind>.S.O.R", ErrBadToken, subject)
	}
	switch f[1] {
	case KindRequest, KindResponse, KindGone:
	default:
		return "", "", "", "", fmt.Errorf("%w: subject %q: kind %q is not req, resp or gone", ErrBadToken, subject, f[1])
	}
	if _, err := DecodeToken(f[2]); err != nil {
		return "", "", "", "", fmt.Errorf("subject %q session: %w", subject, err)
	}
	if err := CheckOwner(f[3]); err != nil {
		return "", "", "", "", fmt.Errorf("subject %q: %w", subject, err)
	}
	if _, err := DecodeToken(f[4]); err != nil {
		return "", "", "", "", fmt.Errorf("subject %q request id: %w", subject, err)
	}
	return f[1], f[2], f[3], f[4], nil
}

func subject(kind, session, owner, requestID string) (string, error) {
	s, o, r, err := parts(session, owner, requestID)
	if err != nil {
		return "", err
	}
	return SubjectRoot + "." + kind + "." + s + "." + o + "." + r, nil
}

func sessionFilter(kind, session string) (string, error) {
	s, err := Token(session)
	if err != nil {
		return "", fmt.Errorf("session: %w", err)
	}
	return SubjectRoot + "." + kind + "." + s + ".>", nil
}

func parts(session, owner, requestID string) (s, o, r string, err error) {
	if s, err = Token(session); err != nil {
		return "", "", "", fmt.Errorf("session: %w", err)
	}
	if err = CheckOwner(owner); err != nil {
		return "", "", "", err
	}
	if r, err = Token(requestID); err != nil {
		return "", "", "", fmt.Errorf("request id: %w", err)
	}
	return s, owner, r, nil
}
