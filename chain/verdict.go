package chain

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind is what a verdict says. The zero Kind is Defer, so a Verdict that
// was never set passes the ask on rather than deciding it.
type Kind uint8

// The three answers a link can give.
const (
	// Defer passes the ask to the next link, then the terminal.
	Defer Kind = iota
	// Allow approves the ask once.
	Allow
	// Deny refuses the ask, with a reason when the link gives one.
	Deny
)

// String returns "defer", "allow" or "deny", the words the review log uses.
func (k Kind) String() string {
	switch k {
	case Defer:
		return "defer"
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	}
	return "invalid"
}

// Valid reports whether k is one of the three kinds.
func (k Kind) Valid() bool { return k <= Deny }

// Verdict is one link's answer to one ask.
type Verdict struct {
	Kind Kind
	// Reason explains a Deny to the child agent; it is ignored otherwise.
	// Write it to teach: what was refused and what to do instead.
	Reason string
}

// Sentinel errors a Link wraps so the chain can say in a few words, to
// the child and in the review log, why a link could not judge an ask.
// Any other error is reported as "failed".
var (
	// ErrDisabled: the link was not loaded (missing binary, checksum
	// mismatch); every ask gets its failure verdict.
	ErrDisabled = errors.New("link disabled")
	// ErrTimeout: the link did not answer within its deadline.
	ErrTimeout = errors.New("link timed out")
	// ErrUnavailable: the link's process crashed, could not start, or is
	// waiting out a restart backoff.
	ErrUnavailable = errors.New("link unavailable")
	// ErrInvalidVerdict: the link answered something that is not a verdict.
	ErrInvalidVerdict = errors.New("link answered an invalid verdict")
	// ErrClosed: the link was used after Close.
	ErrClosed = errors.New("link closed")
)

// failureCause names err's class for messages.
func failureCause(err error) string {
	switch {
	case errors.Is(err, ErrDisabled):
		return "is disabled"
	case errors.Is(err, ErrTimeout):
		return "timed out"
	case errors.Is(err, ErrUnavailable):
		return "is unavailable"
	case errors.Is(err, ErrInvalidVerdict):
		return "gave an invalid answer"
	case errors.Is(err, ErrClosed):
		return "is shut down"
	}
	return "failed"
}

// MaxReasonRunes bounds a link's deny reason. The reason travels to the
// child in the response file and is printed there; a link is third-party
// code and gets no more room than a review-log field.
const MaxReasonRunes = 1000

// CleanReason is the reason a deny carries: trimmed, control and format
// characters (terminal escapes, bidirectional overrides) replaced by
// spaces, invalid UTF-8 replaced, and cut to MaxReasonRunes. An empty result means no reason.
func CleanReason(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) > MaxReasonRunes {
		s = string([]rune(s)[:MaxReasonRunes-1]) + "…"
	}
	return s
}
