package reviewlog

import (
	"unicode/utf8"

	"github.com/seed6639df8c/courier/internal/strictjson"
)

// Strings and numbers written as encoding/json writes them, for both halves
// of the renderer (render.go, render_text.go).

// appendCapped appends s as a JSON string, cut to width runes as capString
// cuts it.
func appendCapped[S string | []byte](dst []byte, s S, width int) []byte {
	if len(s) <= width {
		return appendString(dst, s)
	}
	cut, runes := len(s), 0
	for i := 0; i < len(s); runes++ {
		if runes == width-1 {
			cut = i
			break
		}
		i += runeLen(s[i:])
	}
	if cut == len(s) || runesIn(s[cut:]) <= 1 {
		// At most width runes: capString leaves it whole.
		return appendString(dst, s)
	}
	dst = appendString(dst, s[:cut])
	dst = dst[:len(dst)-1] // reopen the string for the ellipsis
	dst = append(dst, ellipsis...)
	return append(dst, '"')
}

func decodeRune[S string | []byte](s S) (rune, int) {
	n := min(len(s), utf8.UTFMax)
	return utf8.DecodeRuneInString(string(s[:n]))
}

// runeLen is the width of the rune s starts with, an invalid byte counting
// as a rune of its own, as ranging over a string counts it.
func runeLen[S string | []byte](s S) int {
	if s[0] < utf8.RuneSelf {
		return 1
	}
	_, size := decodeRune(s)
	return size
}

func runesIn[S string | []byte](s S) int {
	n := 0
	for i := 0; i < len(s); n++ {
		i += runeLen(s[i:])
	}
	return n
}

// appendString is encoding/json's string encoder with HTML escaping off,
// which is how encode writes every string of the generic path: ", \ and
// control bytes escaped, invalid UTF-8 as \ufffd, U+2028 and U+2029
// escaped, everything else as it is.
func appendString[S string | []byte](dst []byte, src S) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(src); {
		// The bytes written as they are, found eight at a time.
		if i = strictjson.TextRun(src, i); i == len(src) {
			break
		}
		if b := src[i]; b < utf8.RuneSelf {
			dst = append(dst, src[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := decodeRune(src[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, src[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, src[start:]...)
	return append(dst, '"')
}

// isValidNumber is encoding/json's JSON number grammar, which both its
// encoder (for json.Number) and its compaction of MarshalJSON output apply.
func isValidNumber(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' {
		s = s[1:]
		if s == "" {
			return false
		}
	}
	switch {
	default:
		return false
	case s[0] == '0':
		s = s[1:]
	case '1' <= s[0] && s[0] <= '9':
		s = s[1:]
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	if len(s) >= 2 && s[0] == '.' && '0' <= s[1] && s[1] <= '9' {
		s = s[2:]
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s[0] == '+' || s[0] == '-' {
			s = s[1:]
			if s == "" {
				return false
			}
		}
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	return s == ""
}
