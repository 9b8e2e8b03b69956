package bashunits

import "testing"

func BenchmarkSplit(b *testing.B) {
	for _, bc := range []struct{ name, line string }{
		{"one", "git status --short"},
		{"three", "git status --short && git diff --stat | ls; git log --oneline -n 5"},
		{"substitution", "git commit -m \"$(cat <<'EOF'\nfix: a && b\nEOF\n)\""},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Split(bc.line)
			}
		})
	}
}
