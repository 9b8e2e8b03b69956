package mailbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// arrives fails the test unless fw's file arrives within waitLimit.
func arrives(t *testing.T, fw *FileWatch) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	if err := fw.Wait(ctx); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

// pending asserts that fw's file has not arrived.
func pending(t *testing.T, fw *FileWatch) {
	t.Helper()
	select {
	case <-fw.Arrived():
		t.Fatal("arrived too early")
	default:
	}
}

func TestWatchFile(t *testing.T) {
	for _, mode := range []WatchMode{WatchFSNotify, WatchPoll} {
		// An hour's rescan: in fsnotify mode only the event can tell.
		opts := WatchOptions{Mode: mode, RescanInterval: time.Hour, PollInterval: 2 * time.Millisecond}
		t.Run(mode.String()+"/already there", func(t *testing.T) {
			l := Layout{Root: t.TempDir()}
			if err := l.EnsureInbox("s"); err != nil {
				t.Fatal(err)
			}
			if err := l.WriteResponse("s", "r1", []byte("{}")); err != nil {
				t.Fatal(err)
			}
			path, _ := l.ResponsePath("s", "r1")
			fw, err := WatchFile(t.Context(), path, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer fw.Close()
			arrives(t, fw)
		})
		t.Run(mode.String()+"/written after arming", func(t *testing.T) {
			l := Layout{Root: t.TempDir()}
			if err := l.EnsureInbox("s"); err != nil {
				t.Fatal(err)
			}
			path, _ := l.ResponsePath("s", "r1")
			fw, err := WatchFile(t.Context(), path, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer fw.Close()
			// Another child's answer is not ours.
			if err := l.WriteResponse("s", "r2", []byte("{}")); err != nil {
				t.Fatal(err)
			}
			pending(t, fw)
			if err := l.WriteResponse("s", "r1", []byte("{}")); err != nil {
				t.Fatal(err)
			}
			arrives(t, fw)
			if fw.Path() != path {
				t.Errorf("Path() = %q, want %q", fw.Path(), path)
			}
		})
		t.Run(mode.String()+"/directory created later", func(t *testing.T) {
			l := Layout{Root: t.TempDir()}
			path, _ := l.ResponsePath("s", "r1")
			fw, err := WatchFile(t.Context(), path, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer fw.Close()
			if err := l.EnsureInbox("s"); err != nil {
				t.Fatal(err)
			}
			if err := l.WriteResponse("s", "r1", []byte("{}")); err != nil {
				t.Fatal(err)
			}
			arrives(t, fw)
		})
		t.Run(mode.String()+"/directory removed and recreated", func(t *testing.T) {
			// A cleanup removes responses/ after the child armed
			// (docs/GLOSSARY.md, "cleanup order"); the broker
			// recreates it to answer.
			l := Layout{Root: t.TempDir()}
			if err := l.EnsureInbox("s"); err != nil {
				t.Fatal(err)
			}
			path, _ := l.ResponsePath("s", "r1")
			fw, err := WatchFile(t.Context(), path, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer fw.Close()
			if err := os.Remove(filepath.Dir(path)); err != nil {
				t.Fatal(err)
			}
			if err := l.WriteResponse("s", "r1", []byte("{}")); err != nil {
				t.Fatal(err)
			}
			arrives(t, fw)
		})
	}
}

func TestWatchFileEnds(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	if err := l.EnsureInbox("s"); err != nil {
		t.Fatal(err)
	}
	path, _ := l.ResponsePath("s", "r1")

	t.Run("deadline", func(t *testing.T) {
		fw, err := WatchFile(t.Context(), path, WatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer fw.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		defer cancel()
		if err := fw.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait = %v, want DeadlineExceeded", err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		before := inotifyFDs(t)
		fw, err := WatchFile(t.Context(), path, WatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		fw.Close()
		fw.Close() // idempotent
		if err := fw.Wait(t.Context()); !errors.Is(err, ErrWatchStopped) {
			t.Fatalf("Wait = %v, want ErrWatchStopped", err)
		}
		if after := inotifyFDs(t); after != before {
			t.Errorf("%d inotify descriptors after Close, %d before", after, before)
		}
	})
	t.Run("context of the watch cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		fw, err := WatchFile(ctx, path, WatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := fw.Wait(t.Context()); !errors.Is(err, ErrWatchStopped) {
			t.Fatalf("Wait = %v, want ErrWatchStopped", err)
		}
		fw.Close()
	})
	t.Run("not a file path", func(t *testing.T) {
		for _, p := range []string{"", ".", "/", "x.json"} {
			if fw, err := WatchFile(t.Context(), p, WatchOptions{}); err == nil {
				fw.Close()
				t.Errorf("WatchFile(%q) succeeded", p)
			}
		}
	})
}
