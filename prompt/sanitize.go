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

// minRun is the shortest run of blank characters (or of one escaped
// character) that is shown as a marker with its count instead of one by
// one: three spaces still read as spaces, 1,200 of them push the rest of
// a command off the screen.
const minRun = 4

// The brackets of a marker: text the prompt itself puts inside untrusted
// text (a run of blanks, what was not kept). Clean escapes both wherever
// the child wrote them, so a marker on screen is always the prompt's.
const (
	markOpen  = '⟦'
	markClose = '⟧'
)

// marker spells text as a marker.
func marker(text string) string {
	return string(markOpen) + text + string(markClose)
}

// Clean returns s made safe to print on the operator's terminal, cut to at
// most max display columns (max <= 0: no cut).
//
// Everything a request carries is untrusted: a hostile child could embed
// escape sequences that clear the screen, move the cursor to repaint the
// options, set the window title, or reverse the text direction, or hide
// the end of a command behind blank space. Clean therefore prints every
// C0 and C1 control character, DEL, invalid UTF-8, excess combining marks
// and every invisible character (see invisible: format characters,
// bidirectional controls, fillers, variation selectors, spaces other than
// U+0020) as a visible Go-style escape (\x1b, \n, \u202e, \xff). A run of
// minRun or more blank characters, or of one escaped character, is shown
// as one marker with its count (⟦1200 spaces⟧, ⟦5 × \x00⟧); the marker
// brackets are escaped wherever the child wrote them, so a marker cannot
// be forged. Nothing Clean returns moves the cursor or changes the
// terminal's state.
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
		piece, n := cleanPiece(s[i:], r, size, combining, width == 0)
		if isCombining(r) && !invisible(r) {
			combining++
		} else {
			combining = 0
		}
		w := columns(piece)
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
		i += n
	}
	return b.String()
}

// cleanPiece spells the start of s, whose first character is r (size
// bytes; utf8.RuneError of size 1 for an invalid byte): one character, as
// is or escaped, or a marker for a run. It returns the piece and the bytes
// it stands for. combining is how many combining marks came just before;
// first says the piece starts the string.
func cleanPiece(s string, r rune, size, combining int, first bool) (string, int) {
	switch {
	case r == utf8.RuneError && size == 1:
		n := sameRun(s, size)
		if n/size >= minRun {
			return marker(fmt.Sprintf(`%d × \x%02x`, n/size, s[0])), n
		}
		return fmt.Sprintf(`\x%02x`, s[0]), size
	case blank(r):
		n, count := blankRun(s)
		if count >= minRun {
			return marker(describeBlanks(s[:n], count)), n
		}
		return blankSpell(r), size
	case isCombining(r):
		if combining >= maxCombining || first {
			return escapeRune(r), size
		}
		return string(r), size
	case printable(r):
		return string(r), size
	}
	n := sameRun(s, size)
	if n/size >= minRun {
		return marker(fmt.Sprintf("%d × %s", n/size, escapeRune(r))), n
	}
	return escapeRune(r), size
}

// printable reports whether r may reach the terminal as itself: a
// printing character that is not invisible and not a marker bracket.
func printable(r rune) bool {
	return unicode.IsPrint(r) && !invisible(r) && r != markOpen && r != markClose
}

// invisible reports whether r prints as nothing, or as blank space, on a
// terminal while being something other than the plain space: format
// characters (zero-width characters, bidirectional controls, tags), the
// other default-ignorable characters (the Hangul fillers U+115F, U+1160,
// U+3164, U+FFA0, the combining grapheme joiner), variation selectors, the
// blank braille pattern U+2800, and every space and separator but U+0020
// (no-break space, ideographic space, line and paragraph separators).
// Each of them could make two different commands look alike.
func invisible(r rune) bool {
	if r < 0x80 {
		return false
	}
	return unicode.In(r, unicode.Cf, unicode.Zs, unicode.Zl, unicode.Zp,
		unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector) || r == 0x2800
}

// blank reports whether r is part of what a run of blanks may hold: white
// space of any kind, or an invisible character.
func blank(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f' || invisible(r)
}

// blankSpell shows one blank character of a short run.
func blankSpell(r rune) string {
	if r == ' ' {
		return " "
	}
	return escapeRune(r)
}

// blankRun returns the bytes and the characters of the run of blank
// characters that s starts with.
func blankRun(s string) (n, count int) {
	for n < len(s) {
		r, size := utf8.DecodeRuneInString(s[n:])
		if r == utf8.RuneError && size == 1 || !blank(r) {
			break
		}
		n += size
		count++
	}
	return n, count
}

// sameRun returns the bytes of the run of the same size-byte sequence
// that s starts with.
func sameRun(s string, size int) int {
	n := size
	for n+size <= len(s) && s[n:n+size] == s[:size] {
		n += size
	}
	return n
}

// describeBlanks is the text of the marker of a run of count blank
// characters: its count and what it holds, kinds in order of appearance
// ("1200 spaces", "1210 blanks: 1200 spaces, 10 tabs").
func describeBlanks(run string, count int) string {
	var kinds []rune
	counts := map[rune]int{}
	for _, r := range run {
		if counts[r] == 0 {
			kinds = append(kinds, r)
		}
		counts[r]++
	}
	if len(kinds) == 1 {
		return blankCount(kinds[0], count)
	}
	const shown = 3
	parts := make([]string, 0, shown+1)
	rest := count
	for i, k := range kinds {
		if i == shown {
			parts = append(parts, fmt.Sprintf("%d more", rest))
			break
		}
		parts = append(parts, blankCount(k, counts[k]))
		rest -= counts[k]
	}
	return fmt.Sprintf("%d blanks: %s", count, strings.Join(parts, ", "))
}

// blankCount names n of one blank character.
func blankCount(r rune, n int) string {
	names := map[rune][2]string{' ': {"space", "spaces"}, '\t': {"tab", "tabs"}, '\n': {"line break", "line breaks"}}
	if name, ok := names[r]; ok {
		if n == 1 {
			return "1 " + name[0]
		}
		return fmt.Sprintf("%d %s", n, name[1])
	}
	return fmt.Sprintf("%d × %s", n, escapeRune(r))
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

// minBlankLines is the shortest run of blank lines in a block of text
// that is shown as one marker line.
const minBlankLines = 3

// cleanBlock is Clean for a multi-line text (a message, the evidence): it
// keeps the line breaks as lines (dropping blank lines at the end) and
// shows a run of minBlankLines or more blank lines as one marker line,
// so that blank lines cannot push what follows out of view.
func cleanBlock(s string) []string {
	raw := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	isBlank := func(l string) bool { return strings.TrimFunc(l, blank) == "" }
	for len(raw) > 0 && isBlank(raw[len(raw)-1]) {
		raw = raw[:len(raw)-1]
	}
	var out []string
	for i := 0; i < len(raw); {
		j := i
		for j < len(raw) && isBlank(raw[j]) {
			j++
		}
		if j-i >= minBlankLines {
			out = append(out, marker(fmt.Sprintf("%d blank lines", j-i)))
			i = j
			continue
		}
		out = append(out, Clean(raw[i], 0))
		i++
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
// columns, preferring to break after a space (never one inside a marker).
// It returns at most maxLines lines (maxLines <= 0: no limit); when the
// text needs more, the last line is note instead (or the text cut with
// "…" when note is empty), so that a hostile child cannot hide the end of
// a long text past the edge of the prompt without the operator being
// told.
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
		end, w, lastSpace, inMarker := 0, 0, -1, false
		for i, r := range s {
			rw := runeWidth(r)
			if w+rw > width {
				break
			}
			switch {
			case r == markOpen:
				inMarker = true
			case r == markClose:
				inMarker = false
			case r == ' ' && !inMarker:
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
