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
	var b strings.Builder
	unquote(&b, w, func(n syntax.Node) bool {
		if marked {
			b.WriteString(Mark)
		}
		b.WriteString(s.text(n))
		if marked {
			b.WriteString(Mark)
		}
		return true
	})
	return b.String()
}
