package intent

import (
	"path/filepath"
	"testing"
)

// BenchmarkSnapshot measures a Snapshot on the real Claude Code
// transcript: the first (reading the whole file) and a later one when
// nothing was appended (the cost an ask pays in the common case).
func BenchmarkSnapshot(b *testing.B) {
	path := filepath.Join("testdata", "claude-code.jsonl")
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			r, err := Open(path, Options{})
			if err != nil {
				b.Fatal(err)
			}
			if r.Snapshot() == nil {
				b.Fatal("no conversation")
			}
		}
	})
	b.Run("unchanged", func(b *testing.B) {
		r, err := Open(path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		r.Snapshot()
		for b.Loop() {
			if r.Snapshot() == nil {
				b.Fatal("no conversation")
			}
		}
	})
}
