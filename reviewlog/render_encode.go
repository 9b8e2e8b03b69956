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
		return strictjson.AppendString(dst, s)
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
		return strictjson.AppendString(dst, s)
	}
	dst = strictjson.AppendString(dst, s[:cut])
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
