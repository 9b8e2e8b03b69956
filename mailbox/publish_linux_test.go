package mailbox

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// TestWriteFileStagesNoNamedFile: a write creates no name in TempDir, so
// that it takes neither TempDir's lock nor the filesystem's lock of a
// rename across directories, which a flood's writers hold in turn
// (docs/decisions/0032-published-by-link.md).
func TestWriteFileStagesNoNamedFile(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	if err := l.EnsureInbox("s"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(l.TempDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer fw.Close()
	if err := fw.Add(l.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := l.WriteRequest("s", "r1", []byte(`{"id":"r1"}`)); err != nil {
		t.Fatal(err)
	}
	path, _ := l.RequestPath("s", "r1")
	assertMode(t, path, 0o600)
	if got := readString(t, path); got != `{"id":"r1"}` {
		t.Errorf("content %q", got)
	}
	// A file created and removed in TempDir marks the end of the write's
	// events there.
	marker := filepath.Join(l.TempDir(), "marker")
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-fw.Events:
			if ev.Name == marker {
				return
			}
			if ev.Has(fsnotify.Create) || ev.Has(fsnotify.Rename) {
				t.Fatalf("the write staged a named file in TempDir: %v", ev)
			}
		case err := <-fw.Errors:
			t.Fatal(err)
		case <-deadline:
			t.Fatal("no event for the marker")
		}
	}
}

// TestWriteWithoutUnnamedFiles: where unnamed files cannot be made,
// requests and responses stage by name as before, with the same result;
// and where the name exists already (a link never replaces), the answer
// replaces it, as a rename does, and says it did (WriteResponseOver).
func TestWriteWithoutUnnamedFiles(t *testing.T) {
	t.Cleanup(func() { noLinkedPublish.Store(false) })
	for _, linked := range []bool{true, false} {
		noLinkedPublish.Store(!linked)
		l := Layout{Root: t.TempDir()}
		if err := l.EnsureInbox("s"); err != nil {
			t.Fatal(err)
		}
		if err := l.WriteRequest("s", "r1", []byte("ask")); err != nil {
			t.Fatal(err)
		}
		path, _ := l.ResponsePath("s", "r1")
		for i, content := range []string{"one", "two"} {
			over, err := l.WriteResponseOver("s", "r1", []byte(content))
			if err != nil {
				t.Fatal(err)
			}
			if over != (i == 1) {
				t.Errorf("linked %v: write %d reports a file there before: %v", linked, i, over)
			}
			if got := readString(t, path); got != content {
				t.Errorf("linked %v: content %q, want %q", linked, got, content)
			}
		}
		req, _ := l.RequestPath("s", "r1")
		if got := readString(t, req); got != "ask" {
			t.Errorf("linked %v: request %q", linked, got)
		}
		assertMode(t, path, 0o600)
		if left, _ := os.ReadDir(l.TempDir()); len(left) != 0 {
			t.Errorf("linked %v: temp files left behind: %v", linked, left)
		}
	}
}
