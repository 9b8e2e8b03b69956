package bench

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLogTailCountsOnlyNewCompleteLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "review.jsonl")
	tail := &logTail{path: path}
	if n, err := tail.count("x"); err != nil || n != 0 {
		t.Fatalf("count of a missing log = %d, %v", n, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	write := func(s string) {
		t.Helper()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"event":"a","id":1}` + "\n" + `{"event":"b"}` + "\n" + `{"event":"a","id":`)
	if n, _ := tail.count(`"event":"a"`); n != 1 {
		t.Errorf("first count = %d, want 1 (the half-written line waits)", n)
	}
	write("2}\n")
	if n, _ := tail.count(`"event":"a"`); n != 1 {
		t.Errorf("second count = %d, want 1 (the completed line)", n)
	}
	if n, _ := tail.count(`"event":"a"`); n != 0 {
		t.Errorf("third count = %d, want 0", n)
	}
	write(`{"event":"a","id":3}` + "\n")
	if n, _ := tail.count(`"event":"a"`, `"id":4`); n != 0 {
		t.Errorf("count with two marks = %d, want 0", n)
	}
}
