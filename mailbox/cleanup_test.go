package mailbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestCleanupSession(t *testing.T) {
	type tree struct{ requests, responses, session bool }
	tests := []struct {
		name  string
		setup func(t *testing.T, session string)
		want  tree // what still exists afterwards
	}{
		{"empty inbox goes entirely", func(t *testing.T, s string) {}, tree{}},
		{"pending request keeps everything", func(t *testing.T, s string) {
			touch(t, filepath.Join(s, "requests", "r1.json"))
		}, tree{requests: true, responses: true, session: true}},
		{"unread response keeps responses and session", func(t *testing.T, s string) {
			touch(t, filepath.Join(s, "responses", "r1.json"))
		}, tree{responses: true, session: true}},
		{"requests already gone", func(t *testing.T, s string) {
			if err := os.Remove(filepath.Join(s, "requests")); err != nil {
				t.Fatal(err)
			}
		}, tree{}},
		{"foreign file keeps the session directory", func(t *testing.T, s string) {
			touch(t, filepath.Join(s, "notes.txt"))
		}, tree{session: true}},
		{"session already gone", func(t *testing.T, s string) {
			if err := os.RemoveAll(s); err != nil {
				t.Fatal(err)
			}
		}, tree{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := Layout{Root: t.TempDir()}
			if err := l.EnsureInbox("s"); err != nil {
				t.Fatal(err)
			}
			session, _ := l.SessionDir("s")
			tt.setup(t, session)
			if err := l.CleanupSession("s"); err != nil {
				t.Fatalf("CleanupSession: %v", err)
			}
			got := tree{
				requests:  exists(t, filepath.Join(session, "requests")),
				responses: exists(t, filepath.Join(session, "responses")),
				session:   exists(t, session),
			}
			if got != tt.want {
				t.Errorf("left %+v, want %+v", got, tt.want)
			}
		})
	}
	if err := (Layout{Root: t.TempDir()}).CleanupSession(".."); !errors.Is(err, ErrInvalidSessionID) {
		t.Errorf("CleanupSession(..) = %v, want ErrInvalidSessionID", err)
	}
}

func TestSweepTemp(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	if n, err := l.SweepTemp(time.Now(), time.Minute); n != 0 || err != nil {
		t.Fatalf("missing temp dir: %d, %v", n, err)
	}
	if err := mkdirAllPrivate(l.TempDir()); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	old := filepath.Join(l.TempDir(), ".r1.json123")
	fresh := filepath.Join(l.TempDir(), ".r2.json456")
	touch(t, old)
	touch(t, fresh)
	if err := os.Chtimes(old, now.Add(-time.Hour), now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	n, err := l.SweepTemp(now, 10*time.Minute)
	if err != nil || n != 1 {
		t.Fatalf("SweepTemp = %d, %v; want 1", n, err)
	}
	if exists(t, old) || !exists(t, fresh) {
		t.Errorf("old exists %v, fresh exists %v", exists(t, old), exists(t, fresh))
	}
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}
