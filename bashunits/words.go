package bashunits

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Mark brackets each expansion in Unit.Words, Args and Targets:
// `~/$a/x` is `~/` Mark `$a` Mark `/x`. A line holding a NUL byte is never
// parsed, so the mark cannot come from the line itself.
const Mark = "\x00"

// words returns the words in node as Unit.Words has them. Substitutions
// are units of their own and here-document bodies are data, so neither
// is entered.
func (s *splitter) words(node syntax.Node) []string {
	var out []string
	var visit func(syntax.Node) bool
	visit = func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			return false
		case *syntax.Redirect:
			if n.Op != syntax.Hdoc && n.Op != syntax.DashHdoc && n.Word != nil {
				syntax.Walk(n.Word, visit)
			}
			return false
		case *syntax.Word:
			out = append(out, s.shallow(n, true))
		}
		return true
	}
	syntax.Walk(node, visit)
	return out
}

// shallow is w with its quotes and escapes removed and its expansions as
// written: `'/a'"/$b"/c` is `/a/$b/c`, and with marked each expansion is
// bracketed by Mark. A literal word is its literal value.
func (s *splitter) shallow(w *syntax.Word, marked bool) string {
	if lit, ok := literal(w); ok {
		return lit
	}
	var b strings.Builder
	expansion := func(n syntax.Node) {
		if marked {
			b.WriteString(Mark)
		}
		b.WriteString(s.text(n))
		if marked {
			b.WriteString(Mark)
		}
	}
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			unescape(&b, p.Value, false)
		case *syntax.SglQuoted:
			if p.Dollar {
				ansiC(&b, p.Value)
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					unescape(&b, l.Value, true)
				} else {
					expansion(q)
				}
			}
		default:
			expansion(p)
		}
	}
	return b.String()
}
