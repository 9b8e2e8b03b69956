package mailbox

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrInvalidSessionID is wrapped by every error that refuses a session id
// as a mailbox name.
var ErrInvalidSessionID = errors.New("invalid session id")

// maxNameBytes is NAME_MAX on the filesystems a mailbox lives on. An
// escaped session id must leave room for the ".json" of a heartbeat file.
const maxNameBytes = 255

// NormalizeSessionID trims id the way pi's normalizePermissionForwardingSessionId
// does and refuses what pi maps to null: an empty id and the placeholder
// "unknown" (any case), which pi's getSessionId falls back to when a session
// has none. Without the refusal two unrelated id-less sessions would share
// one inbox.
func NormalizeSessionID(id string) (string, error) {
	trimmed := trimJSSpace(id)
	switch {
	case trimmed == "":
		return "", fmt.Errorf("%w: empty", ErrInvalidSessionID)
	case strings.EqualFold(trimmed, "unknown"):
		return "", fmt.Errorf("%w: %q is the placeholder for a session without an id", ErrInvalidSessionID, trimmed)
	}
	return trimmed, nil
}

// EscapeSessionID normalizes id and returns the single path segment that pi
// names its inbox and heartbeat with: JavaScript's encodeURIComponent of the
// normalized id. Byte-for-byte equality with pi is the point, so a pi child
// and a courier broker (or the reverse) meet in the same directory.
//
// Three ids that pi would accept are refused, because they cannot safely
// name a directory:
//   - invalid UTF-8: encodeURIComponent throws URIError on a lone surrogate,
//     the only JavaScript string that has no UTF-8 form, and Go's equivalent
//     is a string that is not UTF-8;
//   - "." and "..": dots are unreserved, so these escape to themselves and
//     would name the sessions directory or its parent;
//   - an id whose escaped form plus ".json" exceeds 255 bytes, which no
//     common filesystem can name (pi would fail later with ENAMETOOLONG).
func EscapeSessionID(id string) (string, error) {
	norm, err := NormalizeSessionID(id)
	if err != nil {
		return "", err
	}
	if !utf8.ValidString(norm) {
		return "", fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidSessionID, norm)
	}
	if norm == "." || norm == ".." {
		return "", fmt.Errorf("%w: %q would name a directory outside the inbox", ErrInvalidSessionID, norm)
	}
	esc := encodeURIComponent(norm)
	if len(esc)+len(".json") > maxNameBytes {
		return "", fmt.Errorf("%w: escaped form is %d bytes, at most %d fit a file name", ErrInvalidSessionID, len(esc), maxNameBytes-len(".json"))
	}
	return esc, nil
}

// encodeURIComponent percent-encodes every UTF-8 byte of s except the
// unreserved set of ECMA-262 (A-Z a-z 0-9 - _ . ! ~ * ' ( )), with
// upper-case hex digits as JavaScript emits them. s must be valid UTF-8.
func encodeURIComponent(s string) string {
	const hex = "0123456789ABCDEF"
	n := 0
	for i := 0; i < len(s); i++ {
		if !uriUnreserved(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if uriUnreserved(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0x0f])
	}
	return b.String()
}

func uriUnreserved(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '-', '_', '.', '!', '~', '*', '\'', '(', ')':
		return true
	}
	return false
}

// trimJSSpace is JavaScript's String.prototype.trim. It differs from
// strings.TrimSpace in two code points: JavaScript trims U+FEFF (BOM) and
// keeps U+0085 (NEL); Go does the reverse. A session id that pi trims
// differently would land in a different inbox.
func trimJSSpace(s string) string {
	return strings.TrimFunc(s, isJSSpace)
}

// isJSSpace reports the ECMA-262 WhiteSpace and LineTerminator code points.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x00A0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return 0x2000 <= r && r <= 0x200A
}
