package prompt

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxCombining is how many combining marks may follow one character before
// the rest are shown escaped: a stack of thousands ("zalgo") would smear
// over the lines around it.
const maxCombining = 2

// Clean returns s made safe to print on the operator's terminal, cut to at
// most max display columns (max <= 0: no cut).
//
// Everything a request carries is untrusted: a hostile child could embed
// escape sequences that clear the screen, move the cursor to repaint the
// options, set the window title, or reverse the text direction. Clean
// therefore prints every C0 and C1 control character, DEL, Unicode format
// character (bidirectional overrides, zero-width characters), any other
// non-printing character, invalid UTF-8 and excess combining marks as a
// visible Go-style escape (\x1b, \n, \u202e, \xff). Nothing Clean returns
// moves the cursor or changes the terminal's state.
//
// A cut string ends in "…" so that the operator knows there is more.
func Clean(s string, max int) string {
	var b strings.Builder
	width, combining := 0, 0
	// cutAt is where the string ends if it must be cut: the last point
	// that leaves a column for the ellipsis.
	cutAt := -1
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		var piece string
		var w int
		switch {
		case r == utf8.RuneError && size == 1:
			piece = fmt.Sprintf(`\x%02x`, s[i])
			w = len(piece)
		case isCombining(r):
			combining++
			if combining > maxCombining || width == 0 {
				piece = escapeRune(r)
				w = len(piece)
			} else {
				piece = string(r)
			}
		case r == ' ' || (unicode.IsPrint(r) && !unicode.Is(unicode.Cf, r)):
			combining = 0
			piece, w = string(r), runeWidth(r)
		default:
			combining = 0
			piece = escapeRune(r)
			w = len(piece)
		}
		if max > 0 {
			if cutAt < 0 && width+w > max-1 {
				cutAt = b.Len()
			}
			if width+w > max {
				return b.String()[:cutAt] + "…"
			}
		}
		b.WriteString(piece)
		width += w
		i += size
	}
	return b.String()
}

// escapeRune spells a character that must not reach the terminal as is.
func escapeRune(r rune) string {
	switch r {
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	if r < 0x80 {
		return fmt.Sprintf(`\x%02x`, r)
	}
	if r <= 0xffff {
		return fmt.Sprintf(`\u%04x`, r)
	}
	return fmt.Sprintf(`\U%08x`, r)
}

func isCombining(r rune) bool {
	return unicode.In(r, unicode.Mn, unicode.Me)
}

// cleanLines is Clean for a multi-line text (a prompt message): it keeps the
// line breaks as lines, at most maxLines of them (the last one then says
// how many more there were), each cut to max columns.
func cleanLines(s string, max, maxLines int) []string {
	raw := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for len(raw) > 0 && strings.TrimSpace(raw[len(raw)-1]) == "" {
		raw = raw[:len(raw)-1]
	}
	var out []string
	for i, line := range raw {
		if maxLines > 0 && len(out) == maxLines-1 && len(raw)-i > 1 {
			out = append(out, fmt.Sprintf("… %d more lines", len(raw)-i))
			break
		}
		out = append(out, Clean(line, max))
	}
	return out
}

// columns is the number of terminal columns s takes, for strings that Clean
// returned (no control characters). East Asian wide characters take two,
// combining marks none. It is an approximation for rare scripts; the
// screen turns off line wrapping while it draws, so a misjudged width cuts
// a line short instead of breaking the layout.
func columns(s string) int {
	w := 0
	for _, r := range s {
		w += runeWidth(r)
	}
	return w
}

func runeWidth(r rune) int {
	switch {
	case isCombining(r) || r == 0x200b:
		return 0
	case isWide(r):
		return 2
	}
	return 1
}

// wide are the East Asian wide and fullwidth ranges (and the emoji blocks
// terminals draw two columns wide).
var wide = []struct{ lo, hi rune }{
	{0x1100, 0x115f}, {0x2e80, 0x303e}, {0x3041, 0x33ff}, {0x3400, 0x4dbf},
	{0x4e00, 0x9fff}, {0xa000, 0xa4cf}, {0xac00, 0xd7a3}, {0xf900, 0xfaff},
	{0xfe30, 0xfe4f}, {0xff00, 0xff60}, {0xffe0, 0xffe6}, {0x1f300, 0x1f64f},
	{0x1f900, 0x1f9ff}, {0x20000, 0x2fffd}, {0x30000, 0x3fffd},
}

func isWide(r rune) bool {
	for _, rg := range wide {
		if r >= rg.lo && r <= rg.hi {
			return true
		}
	}
	return false
}

// cut shortens an already clean string to at most max columns, ending in
// "…" when it cut.
func cut(s string, max int) string {
	if max <= 0 || columns(s) <= max {
		return s
	}
	var b strings.Builder
	w := 0
	for _, r := range s {
		rw := runeWidth(r)
		if w+rw > max-1 {
			break
		}
		b.WriteRune(r)
		w += rw
	}
	b.WriteString("…")
	return b.String()
}

// wrapText splits an already clean string into lines of at most width
// columns, preferring to break after a space. It returns at most maxLines
// lines (maxLines <= 0: no limit); when the text needs more, the last line
// is note instead (or the text cut with "…" when note is empty), so that a hostile child cannot hide the end of a long
// command past the edge of the prompt without the operator being told.
func wrapText(s string, width, maxLines int, note string) []string {
	if width < 8 {
		width = 8
	}
	var lines []string
	for s != "" {
		if maxLines > 0 && len(lines) == maxLines-1 && columns(s) > width {
			if note == "" {
				return append(lines, cut(s, width))
			}
			return append(lines, cut(note, width))
		}
		end, w, lastSpace := 0, 0, -1
		for i, r := range s {
			rw := runeWidth(r)
			if w+rw > width {
				break
			}
			if r == ' ' {
				lastSpace = i
			}
			w += rw
			end = i + utf8.RuneLen(r)
		}
		if end < len(s) && lastSpace > 0 && lastSpace >= end/2 {
			end = lastSpace + 1
		}
		if end == 0 {
			_, end = utf8.DecodeRuneInString(s)
		}
		lines = append(lines, s[:end])
		s = s[end:]
	}
	return lines
}
