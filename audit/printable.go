package audit

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Printable is s with everything a terminal would act on escaped, for
// printing text from a review log, which a child can influence: C0
// controls and DEL (\n, \t, \r, \x1b…), C1 controls, the line and
// paragraph separators, the bidirectional controls that reorder what is
// shown, and bytes that are not UTF-8 (\xff). A backslash is doubled, so
// an escape in the output always stands for one of these. Everything else
// is kept as it is.
func Printable(s string) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if needsEscape(r, size) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case !needsEscape(r, size):
			b.WriteString(s[i : i+size])
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// needsEscape reports whether the rune r (size bytes of the input) is one
// Printable escapes.
func needsEscape(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size == 1:
		return true
	case r < 0x20, r == 0x7f, r == '\\':
		return true
	case r >= 0x80 && r < 0xa0: // C1: CSI (0x9b) is an escape sequence of its own
		return true
	case r == 0x2028, r == 0x2029:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
