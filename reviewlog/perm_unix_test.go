//go:build unix

package reviewlog

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestOpenCreatesPrivateFileAndDirectory(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "a", "logs", "review.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Write(ForwardedServingStarted, map[string]any{"sessionId": "s"}); err != nil {
		t.Fatal(err)
	}
	assertMode(t, path, 0o600)
	assertMode(t, filepath.Dir(path), 0o700)
	assertMode(t, filepath.Join(root, "a"), 0o700)
}

func TestOpenTightensWhatAnOlderWriterLeft(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "review.jsonl")
	old := `{"timestamp":"2026-01-01T00:00:00.000Z","extension":"pi-permission-system","stream":"review","event":"config.resolved"}` + "\n"
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, path} { // defeat the umask
		if err := os.Chmod(p, map[bool]os.FileMode{true: 0o755, false: 0o644}[p == dir]); err != nil {
			t.Fatal(err)
		}
	}
	l, err := Open(path, WithClock(fixedClock))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	assertMode(t, path, 0o600)
	assertMode(t, dir, 0o700)

	if err := l.Write(ForwardedServingStarted, map[string]any{"sessionId": "s"}); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != 2 || lines[0]+"\n" != old {
		t.Errorf("existing content not kept, appended after: %q", lines)
	}
}

func TestOpenLeavesSharedDirectoriesAlone(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		mode  os.FileMode
	}{
		{"has a subdirectory", func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, 0o755},
		{"sticky", func(t *testing.T, dir string) {}, os.ModeSticky | 0o777},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "shared")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			tt.setup(t, dir)
			if err := os.Chmod(dir, tt.mode); err != nil {
				t.Fatal(err)
			}
			l, err := Open(filepath.Join(dir, "review.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			l.Close()
			fi, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode() & (os.ModePerm | os.ModeSticky); got != tt.mode {
				t.Errorf("directory mode %v, want %v untouched", got, tt.mode)
			}
			assertMode(t, filepath.Join(dir, "review.jsonl"), 0o600)
		})
	}
}

func TestOpenRefusesNonRegularFiles(t *testing.T) {
	if _, err := os.Stat("/dev/null"); err != nil {
		t.Skip("no /dev/null")
	}
	before, err := os.Stat("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open("/dev/null")
	if err == nil {
		l.Close()
		t.Fatal("Open(/dev/null) succeeded")
	}
	if !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("error %q does not say why", err)
	}
	after, err := os.Stat("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	if before.Mode() != after.Mode() {
		t.Errorf("/dev/null mode changed from %v to %v", before.Mode(), after.Mode())
	}
}

func TestOpenDoesNotHangOnAFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "review.jsonl")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	done := make(chan error, 1)
	go func() {
		l, err := Open(path)
		if err == nil {
			l.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Open on a FIFO succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Open blocked on a FIFO with no reader")
	}
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %v, want %v", path, got, want)
	}
}
