package judge

import (
	"fmt"
	"strings"
	"unicode"
)

// Untrusted text reaches the model in fences it cannot close. A fence is a
// run of backticks longer than the longest run in the text, at least
// three, as CommonMark fences a code block: since no line of the text can
// hold a run that long, nothing inside ends the block early, and a model
// that reads markdown sees one block of data. The alternatives were worse
// for a judge: escaping rewrites the command the model judges (`2>&1`
// becomes something else), and a random delimiter makes the prompt differ
// on every call, so no golden test could pin it.
//
// Control and format characters, which a terminal or a model may read as
// something other than text (an escape sequence, a carriage return that
// hides what came before it, a bidirectional override), are shown as
// visible stand-ins rather than removed: the model must see that they are
// there, since bash will run them.

// fence returns text as a fenced block: the fence line, the text (made
// visible), a line break, the fence line. The result ends without a line
// break.
func fence(text string) string {
	text = visible(text)
	f := strings.Repeat("`", max(3, longestRun(text, '`')+1))
	var b strings.Builder
	b.Grow(len(text) + 2*len(f) + 2)
	b.WriteString(f)
	b.WriteByte('\n')
	b.WriteString(text)
	if !strings.HasSuffix(text, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString(f)
	return b.String()
}

// inline returns a one-line value (a path, an agent name) as inline code
// whose backtick run is longer than any in it; line breaks and tabs are
// shown as stand-ins so the value stays on its line.
func inline(text string) string {
	text = strings.NewReplacer("\n", "\u240a", "\t", "\u2409").Replace(visible(text))
	f := strings.Repeat("`", longestRun(text, '`')+1)
	if strings.HasPrefix(text, "`") || strings.HasSuffix(text, "`") {
		// CommonMark strips one space on each side, so a value that starts
		// or ends with a backtick stays apart from the fence.
		return f + " " + text + " " + f
	}
	return f + text + f
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}

// visible returns s with invalid UTF-8 replaced by U+FFFD and every control
// or format character other than line feed and tab replaced by a visible
// stand-in: a C0 control by its Unicode control picture (ESC is ␛, CR is
// ␍), DEL by ␡, anything else (C1 controls, bidirectional overrides,
// zero-width characters, line and paragraph separators) by its code point
// in angle brackets, ⟨U+202E⟩.
func visible(s string) string {
	if plainText(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20:
			b.WriteRune(0x2400 + r)
		case r == 0x7f:
			b.WriteRune('\u2421')
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029':
			fmt.Fprintf(&b, "\u27e8U+%04X\u27e9", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// plainText reports whether s is printable ASCII, line feeds and tabs
// only: the common case, which visible returns as it is.
func plainText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\n' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}
