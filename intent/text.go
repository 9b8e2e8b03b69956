package intent

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// CutMark starts the text of an item that was longer than the budget: its
// head was cut and its end kept, the part nearest the ask.
const CutMark = "[earlier text cut] "

// clean returns s with what must not reach a link removed: terminal
// escape sequences whole (CSI and OSC: colours, titles, hyperlinks), then
// control characters other than newline and tab (a carriage return, NUL,
// a lone escape), and the bidirectional formatting characters that make
// text read otherwise than it is stored. Invalid UTF-8 has already become
// U+FFFD where the JSON string was decoded. Space at both ends is trimmed.
func clean(s string) string {
	if strings.IndexFunc(s, dropped) < 0 {
		return strings.TrimSpace(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if s[i] == 0x1b && i+1 < len(s) && (s[i+1] == '[' || s[i+1] == ']') {
			i = skipEscape(s, i)
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if !dropped(r) {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return strings.TrimSpace(b.String())
}

// skipEscape returns the index past the escape sequence at s[i]: a CSI
// (ESC [ parameters, a final byte in @ to ~) or an OSC (ESC ] up to BEL
// or ESC \), or the end of s for one never ended.
func skipEscape(s string, i int) int {
	if s[i+1] == '[' {
		for j := i + 2; j < len(s); j++ {
			if s[j] >= 0x40 && s[j] <= 0x7e {
				return j + 1
			}
		}
		return len(s)
	}
	for j := i + 2; j < len(s); j++ {
		switch {
		case s[j] == 0x07:
			return j + 1
		case s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\':
			return j + 2
		}
	}
	return len(s)
}

func dropped(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case unicode.IsControl(r):
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

// harness reports whether a user turn's text is something the agent's
// harness put there rather than words the user typed: it starts with a
// tag (<environment_context>, <command-name>, <local-command-stdout>,
// <bash-stdout>, <system-reminder>, <skill name=…>, <turn_aborted>…) or
// with the header Codex puts on an AGENTS.md file. Such text carries a
// command's output, a file of the repository or the agent's own context,
// none of which is the user's intent, and any of which a repository or a
// tool's output can word as it likes; a turn with any of it is dropped
// whole. The rule errs toward dropping: a user who starts a message with
// a tag loses that message, never the other way round.
func harness(s string) bool {
	s = strings.TrimLeft(s, " \t\r\n")
	if strings.HasPrefix(s, "# AGENTS.md instructions for ") {
		return true
	}
	if len(s) < 3 || s[0] != '<' || !isTagStart(s[1]) {
		return false
	}
	for i := 2; i < len(s) && i < 200; i++ {
		switch c := s[i]; {
		case c == '>' || c == ' ' || c == '\n' || c == '\t' || c == '/':
			return c != '/' || (i+1 < len(s) && s[i+1] == '>')
		case isTagStart(c), c >= '0' && c <= '9', c == '-', c == '_', c == ':', c == '.':
		default:
			return false
		}
	}
	return false
}

func isTagStart(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// cutHead keeps the end of s within max bytes, marked with CutMark, cut
// at a rune boundary; s itself when it fits. A max too small for the mark
// keeps only the end.
func cutHead(s string, max int) string {
	if len(s) <= max {
		return s
	}
	mark := CutMark
	if max < 2*len(mark) {
		mark = ""
	}
	start := len(s) - (max - len(mark))
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return mark + s[start:]
}

// newest returns the items of rev (newest first) that the budget keeps,
// oldest first: whole items from the newest back while they fit, the
// oldest cut first; the newest alone cut at its head when it is larger
// than the whole budget.
func newest(rev []Item, budget int) []Item {
	n, size := 0, 0
	for _, it := range rev {
		if size+len(it.Text) > budget {
			break
		}
		size += len(it.Text)
		n++
	}
	if n == 0 && len(rev) > 0 {
		first := rev[0]
		first.Text = cutHead(first.Text, budget)
		return []Item{first}
	}
	out := make([]Item, n)
	for i := range n {
		out[i] = rev[n-1-i]
	}
	return out
}
