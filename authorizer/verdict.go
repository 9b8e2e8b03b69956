package authorizer

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"
)

// VerdictKind is what a verdict says. The zero VerdictKind is Defer, so a
// Verdict that was never set passes the ask on rather than deciding it.
//
// It is not provenance.AuthorizerVerdict, the word ("allow" or "deny") a decision's
// decidedBy records for the link that decided.
type VerdictKind uint8

// The three answers a link can give.
const (
	// Defer passes the ask to the next link, then the terminal.
	Defer VerdictKind = iota
	// Allow approves the ask once.
	Allow
	// Deny refuses the ask, with a reason when the link gives one.
	Deny
)

// String returns "defer", "allow" or "deny", the words the review log uses.
func (k VerdictKind) String() string {
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
func (k VerdictKind) Valid() bool { return k <= Deny }

// Verdict is one link's answer to one ask.
type Verdict struct {
	Kind VerdictKind
	// Reason explains a Deny to the child agent; it is ignored otherwise.
	// Write it to teach: what was refused and what to do instead.
	Reason string
}

// ErrInvalidVerdict is wrapped by an error reporting an answer that is not
// a verdict: a Kind that is not Valid, or a wire verdict the protocol does
// not know. The broker treats it as a failure of the link, never as an
// allow.
var ErrInvalidVerdict = errors.New("link answered an invalid verdict")

// MaxReasonRunes bounds a link's deny reason. The reason travels to the
// child in the response file and is printed there; a link is third-party
// code and gets no more room than a review-log field.
const MaxReasonRunes = 1000

// CleanReason is the reason a deny carries: trimmed, control and format
// characters (terminal escapes, bidirectional overrides) replaced by
// spaces, invalid UTF-8 replaced, and cut to MaxReasonRunes. An empty result means no reason.
// The broker applies it to every deny; an authorizer need not.
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
