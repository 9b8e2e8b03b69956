package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// BindingSHA256 is the only response binding courier writes: a response
// names the request id it answers and the SHA-256 of the request file's
// bytes as the broker read them. A courier broker says so in its heartbeat
// (Heartbeat.ResponseBinding), which is how a child knows it may insist.
const BindingSHA256 = "sha256"

// Errors of CheckBinding. Both mean "this is not the answer to my request":
// a child refuses such a response and keeps waiting for the real one.
var (
	// ErrUnboundResponse: the response carries no binding, and the
	// serving node announced that it binds every response.
	ErrUnboundResponse = errors.New("response carries no binding to the request, but its responder binds every response")
	// ErrForeignResponse: the response is bound to another request (a
	// copy of someone else's answer) or to other request bytes (the
	// request was replaced before the broker read it).
	ErrForeignResponse = errors.New("response is bound to a different request")
)

// RequestDigest is the binding digest of a request file: the lower-case
// hex SHA-256 of its exact bytes. The child computes it over what it
// wrote, the broker over what it read; they agree only if nobody replaced
// the file in between.
func RequestDigest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Bind stamps r as the answer to the request with id requestID whose file
// had digest (RequestDigest).
func (r Response) Bind(requestID, digest string) Response {
	r.RequestID, r.RequestSHA256 = requestID, digest
	return r
}

// Bound reports whether r carries a binding (possibly a malformed one).
func (r Response) Bound() bool { return r.bound }

// CheckBinding decides whether resp answers the request requestID whose
// bytes had digest. A response that carries a binding must match it, field
// for field, whoever wrote it. A response without one (pi writes none) is
// accepted unless required is set, which a child does once the serving
// node's heartbeat said it binds (Heartbeat.ResponseBinding).
func CheckBinding(resp Response, requestID, digest string, required bool) error {
	if !resp.bound {
		if required {
			return ErrUnboundResponse
		}
		return nil
	}
	if resp.RequestID != requestID {
		return fmt.Errorf("%w: it answers request %q", ErrForeignResponse, resp.RequestID)
	}
	if resp.RequestSHA256 != digest {
		return fmt.Errorf("%w: it answers request bytes with sha256 %q, not %q", ErrForeignResponse, resp.RequestSHA256, digest)
	}
	return nil
}

func isSHA256Hex(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
