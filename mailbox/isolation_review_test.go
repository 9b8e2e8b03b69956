package mailbox

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Attacks of the adversarial review of the isolation mode (issue 18,
// session 25), each the regression test of what it found.

// reviewChildUID is a member of the ask group, as the kernel would own
// what it makes in the drop directories.
const reviewChildUID = 61002

// A member of the ask group may create anything in tmp/ and requests/
// (1730): a directory, or a symbolic link to one. What it drops there is
// not the broker's tree, and the broker's readers refuse it by type
// (ErrNotRegular, ErrSymlink). Before the fix CheckTree walked into the
// drop directories and refused the whole tree for such an entry (owned by
// another user, a symlink to a directory, mode 0777), so one `mkdir` by a
// child kept the broker from ever serving again (broker serve checks the
// tree at start). The drop directories themselves are still judged.
func TestReviewCheckTreeIgnoresWhatTheGroupDropped(t *testing.T) {
	l := brokerLayout(t)
	if err := l.PrepareIsolated(); err != nil {
		t.Fatal(err)
	}
	if err := l.EnsureInbox("parent"); err != nil {
		t.Fatal(err)
	}
	requests, _ := l.RequestsDir("parent")
	tests := []struct {
		name  string
		plant func(t *testing.T, path string)
	}{
		{"a directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o777); err != nil {
				t.Fatal(err)
			}
			chmod(t, path, 0o777)
			if err := os.Mkdir(filepath.Join(path, "deeper"), 0o777); err != nil {
				t.Fatal(err)
			}
			lchown(t, filepath.Join(path, "deeper"))
			lchown(t, path)
		}},
		{"a symlink to a directory", func(t *testing.T, path string) {
			if err := os.Symlink("/", path); err != nil {
				t.Fatal(err)
			}
			lchown(t, path)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, dir := range []string{l.TempDir(), requests} {
				path := filepath.Join(dir, "planted.json")
				tt.plant(t, path)
				err := l.CheckTree()
				if err != nil {
					t.Errorf("CheckTree with %s planted at %s = %v, want nil", tt.name, path, err)
				}
				if err := os.RemoveAll(path); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	// The drop directories themselves are still the tree's.
	chmod(t, requests, 0o733)
	if err := l.CheckTree(); !errors.Is(err, ErrWritableByOthers) {
		t.Errorf("CheckTree of a world-writable requests/ = %v, want ErrWritableByOthers", err)
	}
}

func lchown(t *testing.T, path string) {
	t.Helper()
	if err := os.Lchown(path, reviewChildUID, reviewChildUID); err != nil {
		t.Fatal(err)
	}
}

// Without --broker-user or $COURIER_BROKER_USER a child must not take a
// mailbox root another uid owns as the isolation mode with that uid as its
// broker: a root in a world-writable directory (/dev/shm, /tmp) that
// another local user made first would be that user's to answer (the
// review ran it with the real binaries: a force push approved by uid
// 61009, outside the ask group). Such a root is refused unless pinned.
func TestDetectIsolationTrustsNoUnpinnedOwner(t *testing.T) {
	needRoot(t)
	shared := filepath.Join(t.TempDir(), "shm")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	chmod(t, shared, 0o1777)
	root := filepath.Join(shared, "courier")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(root, 61009, 61009); err != nil {
		t.Fatal(err)
	}
	iso, err := DetectIsolation(root, -1)
	if iso != nil {
		t.Errorf("a root uid 61009 made in a world-writable directory is taken as the broker's: %+v", *iso)
	}
	if !errors.Is(err, ErrIsolation) {
		t.Errorf("err = %v, want ErrIsolation naming the owner and --broker-user", err)
	}
}
