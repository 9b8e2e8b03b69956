package mailbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// askGID is the ask group of these tests: any gid works for root, which
// may give a directory any group.
const askGID = 61000

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the isolation mode's owners and groups need root to set up in a test (CI runs as root)")
	}
}

// brokerLayout is the isolation mode as its broker sees it: this process
// (root) is the broker's user.
func brokerLayout(t *testing.T) Layout {
	t.Helper()
	needRoot(t)
	return Layout{Root: filepath.Join(t.TempDir(), "box"), Isolation: &Isolation{BrokerUID: 0, GID: askGID}}
}

func statT(t *testing.T, path string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestPrepareIsolatedModes(t *testing.T) {
	l := brokerLayout(t)
	// An existing directory of the broker's user, left private by a
	// same-uid run, is given the mode's owner and mode.
	if err := os.MkdirAll(l.SessionsDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := l.PrepareIsolated(); err != nil {
		t.Fatal(err)
	}
	if err := l.EnsureInbox("parent"); err != nil {
		t.Fatal(err)
	}
	session, _ := l.SessionDir("parent")
	want := map[string]uint32{
		l.Root:                                   0o750,
		l.SessionsDir():                          0o750,
		l.ServingDir():                           0o750,
		l.TempDir():                              0o730 | unix.S_ISVTX,
		l.StateDir():                             0o711,
		filepath.Join(l.StateDir(), "vouched"):   0o710,
		session:                                  0o750,
		filepath.Join(session, requestsDirName):  0o730 | unix.S_ISVTX,
		filepath.Join(session, responsesDirName): 0o750,
	}
	for dir, mode := range want {
		st := statT(t, dir)
		if got := st.Mode & 0o7777; got != mode {
			t.Errorf("%s: mode %#o, want %#o", dir, got, mode)
		}
		if st.Gid != askGID {
			t.Errorf("%s: gid %d, want the ask group %d", dir, st.Gid, askGID)
		}
	}
	if err := l.CheckTree(); err != nil {
		t.Errorf("CheckTree of the prepared tree: %v", err)
	}
	if err := CheckTree(l.Root); !errors.Is(err, ErrWritableByOthers) {
		t.Errorf("same-uid CheckTree of an isolation tree = %v, want it refused (group-writable)", err)
	}
}

func TestPrepareIsolatedRefusesAnotherUsersDirectory(t *testing.T) {
	l := brokerLayout(t)
	if err := os.MkdirAll(l.ServingDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(l.ServingDir(), 61002, 61002); err != nil {
		t.Fatal(err)
	}
	if err := l.PrepareIsolated(); !errors.Is(err, ErrWrongOwner) {
		t.Fatalf("PrepareIsolated over serving/ of uid 61002 = %v, want ErrWrongOwner", err)
	}
	if st := statT(t, l.ServingDir()); st.Uid != 61002 || st.Mode&0o777 != 0o755 {
		t.Errorf("the other user's directory was changed: uid %d mode %#o", st.Uid, st.Mode&0o777)
	}
}

func TestCheckTreeIsolated(t *testing.T) {
	tests := []struct {
		name  string
		alter func(t *testing.T, l Layout, requests string)
		want  error
	}{
		{"as prepared", func(*testing.T, Layout, string) {}, nil},
		{"inbox writable by others", func(t *testing.T, _ Layout, requests string) { chmod(t, requests, 0o733|fs.ModeSticky) }, ErrWritableByOthers},
		{"group-writable without sticky", func(t *testing.T, _ Layout, requests string) { chmod(t, requests, 0o730) }, ErrWritableByOthers},
		{"group-writable responses, even sticky", func(t *testing.T, _ Layout, requests string) {
			chmod(t, filepath.Join(filepath.Dir(requests), responsesDirName), 0o770|fs.ModeSticky)
		}, ErrWritableByOthers},
		{"sticky drop of another group", func(t *testing.T, _ Layout, requests string) {
			if err := os.Chown(requests, -1, 61005); err != nil {
				t.Fatal(err)
			}
		}, ErrWritableByOthers},
		{"directory of another user", func(t *testing.T, l Layout, _ string) {
			if err := os.Chown(l.ServingDir(), 61002, askGID); err != nil {
				t.Fatal(err)
			}
		}, ErrWrongOwner},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := brokerLayout(t)
			if err := l.PrepareIsolated(); err != nil {
				t.Fatal(err)
			}
			if err := l.EnsureInbox("parent"); err != nil {
				t.Fatal(err)
			}
			requests, _ := l.RequestsDir("parent")
			tt.alter(t, l, requests)
			err := l.CheckTree()
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("CheckTree = %v, want %v", err, tt.want)
			}
		})
	}
}

func chmod(t *testing.T, path string, mode fs.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func TestIsolatedFilesAndOwners(t *testing.T) {
	l := brokerLayout(t)
	if err := l.PrepareIsolated(); err != nil {
		t.Fatal(err)
	}
	if err := l.EnsureInbox("parent"); err != nil {
		t.Fatal(err)
	}
	if err := l.WriteResponse("parent", "perm-1", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	resp, _ := l.ResponsePath("parent", "perm-1")
	if st := statT(t, resp); st.Mode&0o777 != 0o644 {
		t.Errorf("response mode %#o, want 0644 (readable by the asking group through 0750 responses/)", st.Mode&0o777)
	}
	// A child (uid 61002) reads a response only when the broker's uid
	// owns it: a file of its own there is a plant.
	child := Layout{Root: l.Root, Isolation: &Isolation{BrokerUID: 0, GID: -1}}
	if _, err := ReadFileOf(resp, child.BrokerOwner()); err != nil {
		t.Errorf("broker-owned response: %v", err)
	}
	if err := os.Chown(resp, 61002, 61002); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFileOf(resp, child.BrokerOwner()); !errors.Is(err, ErrWrongOwner) {
		t.Errorf("response owned by the child's uid = %v, want ErrWrongOwner", err)
	}
	// The broker reads a request whoever owns it and learns the owner.
	if err := l.WriteRequest("parent", "perm-2", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	req, _ := l.RequestPath("parent", "perm-2")
	if err := os.Chown(req, 61002, 61002); err != nil {
		t.Fatal(err)
	}
	if _, uid, err := ReadFileIntoOf(req, l.RequestOwner(), nil); err != nil || uid != 61002 {
		t.Errorf("request of uid 61002: uid %d, %v; want 61002, nil", uid, err)
	}
	if _, err := ReadFile(req); !errors.Is(err, ErrWrongOwner) {
		t.Errorf("same-uid read of another uid's request = %v, want ErrWrongOwner", err)
	}
}

func TestChildNeverCreatesTheIsolatedInbox(t *testing.T) {
	needRoot(t)
	root := filepath.Join(t.TempDir(), "box")
	child := Layout{Root: root, Isolation: &Isolation{BrokerUID: 61001, GID: -1}}
	if err := child.EnsureInbox("parent"); !errors.Is(err, ErrIsolation) {
		t.Fatalf("child EnsureInbox of a missing isolated inbox = %v, want ErrIsolation", err)
	}
	if _, err := os.Stat(root); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the child created %s: %v", root, err)
	}
	if err := child.CleanupSession("parent"); err != nil {
		t.Errorf("child CleanupSession in the isolation mode = %v, want nil (a no-op)", err)
	}
}

func TestDetectIsolation(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	mine := filepath.Join(dir, "mine")
	theirs := filepath.Join(dir, "theirs")
	for _, d := range []string{mine, theirs} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(theirs, 61001, 61000); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		root    string
		pin     int
		wantUID int // -1: same-uid (nil)
		wantErr bool
	}{
		{"own root", mine, -1, -1, false},
		{"missing root", filepath.Join(dir, "none"), -1, -1, false},
		{"root of another user, not pinned", theirs, -1, 0, true},
		{"pinned and matching", theirs, 61001, 61001, false},
		{"pinned, root of another user", theirs, 61009, 0, true},
		{"pinned, own root (a tree swapped under the child)", mine, 61001, 0, true},
		{"pinned, missing root", filepath.Join(dir, "none"), 61001, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iso, err := DetectIsolation(tt.root, tt.pin)
			switch {
			case tt.wantErr:
				if !errors.Is(err, ErrIsolation) {
					t.Errorf("err = %v, want ErrIsolation", err)
				}
			case err != nil:
				t.Errorf("err = %v", err)
			case tt.wantUID < 0 && iso != nil:
				t.Errorf("iso = %+v, want same-uid", *iso)
			case tt.wantUID >= 0 && (iso == nil || iso.BrokerUID != tt.wantUID || iso.GID != -1):
				t.Errorf("iso = %+v, want broker uid %d", iso, tt.wantUID)
			}
		})
	}
}
