package bashunits

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// literal returns the value of a word made only of literal text and
// quotes, and false when any part would expand at run time.
func literal(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			unescape(&b, p.Value, false)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				unescape(&b, l.Value, true)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
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
