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
	// A Defer's reason reaches the review log only.
	Reason string
	// Code is a stable, machine-readable name for why the link deferred or
	// denied ("not_bash", "timeout", "missing_cwd"...), for the review log
	// and audits: lower_snake_case, at most [MaxCodeBytes] bytes
	// ([CleanCode]). Empty when the link gives none.
	Code string
	// Meta is what the link reports about how it judged (model, tokens,
	// latency), for the review log only; never shown to the child.
	Meta Meta
}

// Meta is a link's report of how it reached a verdict, for the review
// trail: which model and prompt version, the tokens it spent, and how long
// the model took. The zero Meta reports nothing. The broker bounds and
// cleans it ([CleanMeta]) before it logs it.
type Meta struct {
	// Model names the model that judged, empty when none did.
	Model string
	// PromptVersion names the version of the prompt template used.
	PromptVersion string
	// InputTokens and OutputTokens are the tokens the model call used.
	InputTokens, OutputTokens int64
	// LatencyMs is the model call's wall time in milliseconds, as the link
	// measured it (the broker measures the whole link call itself).
	LatencyMs int64
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

// MaxCodeBytes bounds a verdict's [Verdict.Code].
const MaxCodeBytes = 40

// MaxMetaBytes bounds each string of a verdict's [Meta].
const MaxMetaBytes = 100

// CleanCode is the code a verdict carries into the review log: code
// itself when it is 1 to [MaxCodeBytes] bytes of a-z, 0-9 and '_', else ""
// (dropped, not repaired: a code is for grouping and counting, and a
// repaired code would count under a name no link chose).
func CleanCode(code string) string {
	if len(code) == 0 || len(code) > MaxCodeBytes {
		return ""
	}
	for i := 0; i < len(code); i++ {
		c := code[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return ""
		}
	}
	return code
}

// CleanMeta is the metadata a verdict carries into the review log: each
// string cleaned like a reason ([CleanReason]) and cut to [MaxMetaBytes]
// bytes on a rune boundary, each negative number made 0. A link is
// third-party code: what it reports is bounded like everything else it
// says.
func CleanMeta(m Meta) Meta {
	return Meta{
		Model:         cleanMetaString(m.Model),
		PromptVersion: cleanMetaString(m.PromptVersion),
		InputTokens:   max(m.InputTokens, 0),
		OutputTokens:  max(m.OutputTokens, 0),
		LatencyMs:     max(m.LatencyMs, 0),
	}
}

// cleanMetaString cleans s like a reason, then cuts it to MaxMetaBytes
// bytes without splitting a rune.
func cleanMetaString(s string) string {
	s = CleanReason(s)
	if len(s) <= MaxMetaBytes {
		return s
	}
	cut := MaxMetaBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimSpace(s[:cut])
}
