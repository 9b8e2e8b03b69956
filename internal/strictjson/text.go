package strictjson

import (
	"bytes"
	"math/bits"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// A string's text: the scan for the bytes that end or change it, shared by
// Check and the walker, and its decoding, shared by the duplicate-key check
// (which compares keys as encoding/json decodes them) and by Unquote.

// Unquote returns the text of quoted, a string of a well-formed document
// with its quotes, as encoding/json decodes it: escapes resolved, a surrogate
// pair joined, a lone surrogate escape or an invalid UTF-8 byte read as
// U+FFFD. When the text holds no escape and is valid UTF-8, the common
// case, the result is a subslice of quoted and nothing is copied;
// otherwise it is a new slice.
func Unquote(quoted []byte) []byte {
	body, plain := stringBody(quoted)
	if plain {
		return body
	}
	text, _ := appendUnquoted(make([]byte, 0, len(body)), body)
	return text
}

// AppendUnquote appends the text of quoted, as Unquote reads it, to dst.
//
// whole reports that each byte and each escape of the text stood for one
// character of its own. It is false when the text holds invalid UTF-8 or a
// \u escape of a UTF-16 surrogate, paired or lone: the places where
// encoding/json substitutes U+FFFD or joins two escapes into one rune.
func AppendUnquote(dst, quoted []byte) (text []byte, whole bool) {
	body, plain := stringBody(quoted)
	if plain {
		return append(dst, body...), true
	}
	return appendUnquoted(dst, body)
}

// Plain reports whether the text of quoted, a string of a well-formed
// document with its quotes, is the bytes between them as they stand: no
// escape and valid UTF-8. Unquote returns such a text without copying it.
func Plain(quoted []byte) bool {
	_, plain := stringBody(quoted)
	return plain
}

// stringBody returns the bytes between a string's quotes, and whether they
// are its text as they stand: no escape, valid UTF-8.
func stringBody(quoted []byte) ([]byte, bool) {
	if len(quoted) < 2 {
		return nil, true
	}
	body := quoted[1 : len(quoted)-1 : len(quoted)-1]
	if len(body) <= 32 {
		// One scan is quickest for a short string, the common key or
		// value; a long one takes the vector routines below.
		if stringRun(body, 0, true) == len(body) {
			return body, true
		}
	}
	return body, bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body)
}

// TextRun returns the index of the first byte of s at or after i that a
// JSON string does not hold as it is: a quote, a backslash, a control byte
// or a byte of 0x80 or more; len(s) if there is none. A writer of JSON
// strings copies the run before it as it stands (reviewlog/render_encode.go).
func TextRun[S string | []byte](s S, i int) int { return stringRun(s, i, true) }

// stringRun returns the index of the first byte at or after i in d that a
// scan of a string's text must look at: a quote, a backslash, a control
// byte, or, if stopHigh, a byte of 0x80 or more; len(d) if there is none.
// Every reader scans strings, most of a document's bytes (Check, the
// walker, Unquote), so it reads eight bytes at a time while it can.
func stringRun[S string | []byte](d S, i int, stopHigh bool) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	var high uint64
	if stopHigh {
		high = highs
	}
	for len(d)-i >= 8 {
		w := d[i : i+8]
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		q := x ^ (ones * '"')  // a zero byte where x has a quote
		b := x ^ (ones * '\\') // and where it has a backslash
		// Each term sets the high bit of a byte of x that is of its kind
		// (the bit-twiddling "has a zero byte" and "has a byte less than
		// n" tests). A borrow can also flag a later byte, never an
		// earlier one, so the lowest flag is the first byte to look at.
		if hit := ((x-ones*0x20)&^x | (q-ones)&^q | (b-ones)&^b | x&high) & highs; hit != 0 {
			return i + bits.TrailingZeros64(hit)/8
		}
		i += 8
	}
	mask := uint8(stopSpecial)
	if stopHigh {
		mask |= stopHighByte
	}
	for i < len(d) && stops[d[i]]&mask == 0 {
		i++
	}
	return i
}

// The bits of stops: why stringRun may stop at a byte.
const (
	stopSpecial  = 1 << iota // a quote, a backslash or a control byte
	stopHighByte             // a byte of 0x80 or more
)

var stops = func() (t [256]uint8) {
	for ch := range t {
		switch {
		case ch == '"' || ch == '\\' || ch < 0x20:
			t[ch] = stopSpecial
		case ch >= utf8.RuneSelf:
			t[ch] = stopHighByte
		}
	}
	return t
}()

// appendUnquoted appends the decoded text of a string's content (between
// its quotes) to dst.
func appendUnquoted(dst, body []byte) ([]byte, bool) {
	whole := true
	for i := 0; i < len(body); {
		// Copy the run that needs no decoding in one append.
		j := stringRun(body, i, true)
		dst = append(dst, body[i:j]...)
		if j == len(body) {
			break
		}
		i = j
		if body[i] == '\\' {
			if i+1 < len(body) && body[i+1] == 'u' && utf16.IsSurrogate(hex4(body[i+2:])) {
				whole = false
			}
		} else if r, size := utf8.DecodeRune(body[i:]); r == utf8.RuneError && size == 1 {
			whole = false
		}
		var r rune
		r, i = nextRune(body, i)
		dst = utf8.AppendRune(dst, r)
	}
	return dst, whole
}

func hexValue(ch byte) rune {
	switch {
	case '0' <= ch && ch <= '9':
		return rune(ch - '0')
	case 'a' <= ch && ch <= 'f':
		return rune(ch - 'a' + 10)
	case 'A' <= ch && ch <= 'F':
		return rune(ch - 'A' + 10)
	}
	return -1
}

// nextRune decodes the rune of a checked JSON string's content at raw[i]
// exactly as encoding/json unquotes it: escapes resolved, a surrogate
// pair joined, a lone surrogate or an invalid UTF-8 byte read as U+FFFD.
// On bytes that were not checked it still returns, with U+FFFD or -1 for
// an escape cut short, and never reads past raw.
func nextRune(raw []byte, i int) (rune, int) {
	ch := raw[i]
	if ch < utf8.RuneSelf {
		if ch != '\\' {
			return rune(ch), i + 1
		}
		if i+1 >= len(raw) {
			return unicode.ReplacementChar, len(raw)
		}
		switch raw[i+1] {
		case 'b':
			return '\b', i + 2
		case 'f':
			return '\f', i + 2
		case 'n':
			return '\n', i + 2
		case 'r':
			return '\r', i + 2
		case 't':
			return '\t', i + 2
		case 'u':
			r := hex4(raw[i+2:])
			i += 6
			if !utf16.IsSurrogate(r) {
				return r, i
			}
			if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
				if dec := utf16.DecodeRune(r, hex4(raw[i+2:])); dec != unicode.ReplacementChar {
					return dec, i + 6
				}
			}
			return unicode.ReplacementChar, i
		}
		return rune(raw[i+1]), i + 2 // \" \\ \/
	}
	r, size := utf8.DecodeRune(raw[i:])
	return r, i + size
}

// hex4 reads the four hex digits of a \u escape; -1 if they are not there.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, ch := range b[:4] {
		v := hexValue(ch)
		if v < 0 {
			return -1
		}
		r = r*16 + v
	}
	return r
}

// decodeKey returns a checked key's text, as encoding/json would.
func decodeKey(raw []byte) string {
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i < len(raw); {
		var r rune
		r, i = nextRune(raw, i)
		b.WriteRune(r)
	}
	return b.String()
}
