package bashunits

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// literal returns the value of a word made only of literal text and
// quotes, and false when any part would expand at run time. ANSI-C quotes
// (`$'\x61'`) are literal text, decoded as bash decodes them; a locale
// quote (`$"…"`) is read as a plain double quote, which is what bash does
// without a translation catalogue.
func literal(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", false
	}
	var b strings.Builder
	if !unquote(&b, w, func(syntax.Node) bool { return false }) {
		return "", false
	}
	return b.String(), true
}

// unquote writes w without its quotes and escapes, decoding ANSI-C quotes
// and reading a locale quote as a double quote; each part that would
// expand at run time goes to expand, which writes it, or returns false to
// give up (unquote then returns false). The one walk literal and shallow
// share.
func unquote(b *strings.Builder, w *syntax.Word, expand func(syntax.Node) bool) bool {
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			unescape(b, p.Value, false)
		case *syntax.SglQuoted:
			if p.Dollar {
				ansiC(b, p.Value)
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					unescape(b, l.Value, true)
				} else if !expand(q) {
					return false
				}
			}
		default:
			if !expand(p) {
				return false
			}
		}
	}
	return true
}

// unescape writes lit without its backslash escapes: outside quotes a
// backslash quotes any character; inside double quotes only $ ` " \ and
// a newline. A backslash-newline is a line continuation and vanishes.
func unescape(b *strings.Builder, lit string, dquoted bool) {
	for i := 0; i < len(lit); i++ {
		c := lit[i]
		if c != '\\' || i+1 == len(lit) {
			b.WriteByte(c)
			continue
		}
		next := lit[i+1]
		switch {
		case next == '\n':
			i++
		case !dquoted || strings.IndexByte("$`\"\\", next) >= 0:
			b.WriteByte(next)
			i++
		default:
			b.WriteByte(c)
		}
	}
}

// ansiC writes the body of an ANSI-C quote (`$'…'`) decoded as bash
// decodes it: the C escapes, octal `\nnn`, hex `\xHH`, `\uHHHH`,
// `\UHHHHHHHH` and control `\cX`. A NUL ends the string, as it ends
// bash's. An unknown escape stays as written.
func ansiC(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '\\', '\'', '"', '?':
			b.WriteByte(e)
		case 'c':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i] & 0x1f)
			} else {
				b.WriteString(`\c`)
			}
		case 'x', 'u', 'U':
			max := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			n := digits(s[i+1:], max, 16)
			if n == 0 {
				b.WriteByte('\\')
				b.WriteByte(e)
				continue
			}
			v, _ := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
			i += n
			if v == 0 {
				return
			}
			if e == 'x' {
				b.WriteByte(byte(v))
			} else if r := rune(v); utf8.ValidRune(r) {
				b.WriteRune(r)
			}
		default:
			if e >= '0' && e <= '7' {
				n := digits(s[i:], 3, 8)
				v, _ := strconv.ParseUint(s[i:i+n], 8, 32)
				i += n - 1
				if v&0xff == 0 {
					return
				}
				b.WriteByte(byte(v))
				continue
			}
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
}

// digits counts the leading digits of s in base (8 or 16), at most max.
func digits(s string, max, base int) int {
	n := 0
	for n < len(s) && n < max {
		c := s[n]
		ok := c >= '0' && c <= '7' || base == 16 && (c >= '8' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F')
		if !ok {
			break
		}
		n++
	}
	return n
}
