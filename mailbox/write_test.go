package mailbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/seed6639df8c/courier/wire"
	"golang.org/x/sys/unix"
)

func setUmask(mask int) int { return unix.Umask(mask) }

func assertMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode(); got != want {
		t.Errorf("mode of %s = %v, want %v", path, got, want)
	}
}

func chmodTree(t *testing.T, root string, mode fs.FileMode) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return os.Chmod(path, mode)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteFileModesIgnoreUmask(t *testing.T) {
	for _, umask := range []int{0, 0o022, 0o277} {
		l := Layout{Root: t.TempDir()}
		path := filepath.Join(l.Root, "f.json")
		old := setUmask(umask)
		err := l.WriteFile(path, []byte(`{"a":1}`), WriteOptions{})
		setUmask(old)
		if err != nil {
			t.Fatalf("umask %#o: %v", umask, err)
		}
		assertMode(t, path, 0o600)
		assertMode(t, l.TempDir(), os.ModeDir|0o700)
		if got := readString(t, path); got != `{"a":1}` {
			t.Errorf("content %q", got)
		}
	}
}

func TestWriteFileReplacesAndLeavesNoTemp(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	path := filepath.Join(l.Root, "hb.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil { // as pi 20.x leaves it
		t.Fatal(err)
	}
	if err := l.WriteFile(path, []byte("new"), WriteOptions{SyncDir: true}); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, path); got != "new" {
		t.Errorf("content %q, want new", got)
	}
	assertMode(t, path, 0o600) // never keeps a looser mode found on disk
	if left, _ := os.ReadDir(l.TempDir()); len(left) != 0 {
		t.Errorf("temp files left behind: %v", left)
	}
}

func TestWriteFileRefusesPathsOutsideRoot(t *testing.T) {
	base := t.TempDir()
	l := Layout{Root: filepath.Join(base, "root")}
	for _, p := range []string{l.Root, base, filepath.Join(base, "x.json"), filepath.Join(l.Root, "..", "x.json"), "rel.json"} {
		if err := l.WriteFile(p, nil, WriteOptions{}); err == nil {
			t.Errorf("WriteFile(%q) succeeded outside the root", p)
		}
	}
}

func TestWriteFileMissingDirectory(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	err := l.WriteFile(filepath.Join(l.Root, "no", "x.json"), nil, WriteOptions{})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("got %v, want ErrNotExist", err)
	}
	if left, _ := os.ReadDir(l.TempDir()); len(left) != 0 {
		t.Errorf("temp files left behind after a failed rename: %v", left)
	}
}

// TestWriteFileOneCreateEvent pins why writes stage in TempDir: a watcher
// of the destination sees exactly one event, the Create of the final name.
func TestWriteFileOneCreateEvent(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	if err := l.EnsureInbox("s"); err != nil {
		t.Fatal(err)
	}
	dir, _ := l.RequestsDir("s")
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer fw.Close()
	if err := fw.Add(dir); err != nil {
		t.Fatal(err)
	}
	if err := l.WriteRequest("s", "r1", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	// A second file marks the end of the first one's events.
	if err := l.WriteRequest("s", "r2", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	var got []fsnotify.Event
	deadline := time.After(10 * time.Second)
	for len(got) == 0 || filepath.Base(got[len(got)-1].Name) != "r2.json" {
		select {
		case ev := <-fw.Events:
			got = append(got, ev)
		case err := <-fw.Errors:
			t.Fatal(err)
		case <-deadline:
			t.Fatalf("events so far: %v", got)
		}
	}
	if len(got) != 2 || got[0].Op != fsnotify.Create || filepath.Base(got[0].Name) != "r1.json" || got[1].Op != fsnotify.Create {
		t.Errorf("events %v, want exactly Create r1.json, Create r2.json", got)
	}
}

func TestWriteRequestNeedsInbox(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	if err := l.WriteRequest("s", "r1", []byte("{}")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("got %v, want ErrNotExist", err)
	}
	if err := l.WriteRequest("s", "../r1", []byte("{}")); !errors.Is(err, wire.ErrInvalidID) {
		t.Fatalf("got %v, want ErrInvalidID", err)
	}
}

func TestWriteResponse(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	if err := l.EnsureInbox("s"); err != nil {
		t.Fatal(err)
	}
	responses, _ := l.ResponsesDir("s")
	// A child's cleanup removed responses/ between read and answer (docs/GLOSSARY.md, "cleanup order").
	if err := os.Remove(responses); err != nil {
		t.Fatal(err)
	}
	if err := l.WriteResponse("s", "r1", []byte(`{"approved":true}`)); err != nil {
		t.Fatal(err)
	}
	path, _ := l.ResponsePath("s", "r1")
	assertMode(t, path, 0o600)
	assertMode(t, responses, os.ModeDir|0o700)

	// The whole session is gone: every child gave up. No orphan answer.
	session, _ := l.SessionDir("s")
	if err := os.RemoveAll(session); err != nil {
		t.Fatal(err)
	}
	if err := l.WriteResponse("s", "r2", []byte("{}")); err == nil {
		t.Error("WriteResponse recreated a removed session directory")
	}
	if _, err := os.Stat(session); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("session directory exists after WriteResponse: %v", err)
	}
	if err := l.WriteResponse("s", "a/b", nil); !errors.Is(err, wire.ErrInvalidID) {
		t.Errorf("got %v, want ErrInvalidID", err)
	}
}
