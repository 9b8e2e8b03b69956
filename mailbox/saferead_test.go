package mailbox

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	write := func(name string, size int) string {
		t.Helper()
		if err := os.WriteFile(at(name), []byte(strings.Repeat("x", size)), 0o600); err != nil {
			t.Fatal(err)
		}
		return at(name)
	}

	tests := []struct {
		name  string
		setup func(t *testing.T) string
		want  error // nil: read succeeds
		size  int
	}{
		{"regular", func(t *testing.T) string { return write("ok.json", 42) }, nil, 42},
		{"empty", func(t *testing.T) string { return write("empty.json", 0) }, nil, 0},
		{"pi 20.x mode 0644", func(t *testing.T) string {
			p := write("pi.json", 3)
			if err := os.Chmod(p, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}, nil, 3},
		{"exactly the cap", func(t *testing.T) string { return write("cap.json", MaxFileSize) }, nil, MaxFileSize},
		{"one byte over the cap", func(t *testing.T) string { return write("over.json", MaxFileSize+1) }, ErrTooLarge, 0},
		{"10 MB", func(t *testing.T) string { return write("big.json", 10<<20) }, ErrTooLarge, 0},
		{"missing", func(t *testing.T) string { return at("gone.json") }, fs.ErrNotExist, 0},
		{"symlink to a file", func(t *testing.T) string {
			target := write("secret", 6)
			if err := os.Symlink(target, at("link.json")); err != nil {
				t.Fatal(err)
			}
			return at("link.json")
		}, ErrSymlink, 0},
		{"symlink to /dev/zero", func(t *testing.T) string {
			if err := os.Symlink("/dev/zero", at("zero.json")); err != nil {
				t.Fatal(err)
			}
			return at("zero.json")
		}, ErrSymlink, 0},
		{"dangling symlink", func(t *testing.T) string {
			if err := os.Symlink(at("nowhere"), at("dangling.json")); err != nil {
				t.Fatal(err)
			}
			return at("dangling.json")
		}, ErrSymlink, 0},
		{"fifo", func(t *testing.T) string {
			if err := unix.Mkfifo(at("fifo.json"), 0o600); err != nil {
				t.Fatal(err)
			}
			return at("fifo.json")
		}, ErrNotRegular, 0},
		{"unix socket", func(t *testing.T) string {
			l, err := net.Listen("unix", at("sock.json"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			return at("sock.json")
		}, ErrNotRegular, 0},
		{"directory named x.json", func(t *testing.T) string {
			if err := os.Mkdir(at("x.json"), 0o700); err != nil {
				t.Fatal(err)
			}
			return at("x.json")
		}, ErrNotRegular, 0},
		{"hard link", func(t *testing.T) string {
			p := write("one.json", 3)
			if err := os.Link(p, at("two.json")); err != nil {
				t.Fatal(err)
			}
			return at("two.json")
		}, ErrHardLinked, 0},
		{"character device", func(t *testing.T) string {
			if err := unix.Mknod(at("null.json"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
				t.Skipf("cannot create a device node here: %v", err)
			}
			return at("null.json")
		}, ErrNotRegular, 0},
		{"owned by another user", func(t *testing.T) string {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a file away")
			}
			p := write("nobody.json", 3)
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return p
		}, ErrWrongOwner, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.setup(t)
			type result struct {
				data []byte
				err  error
			}
			done := make(chan result, 1)
			go func() {
				data, err := ReadFile(path)
				done <- result{data, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("ReadFile blocked")
			}
			if tt.want == nil {
				if r.err != nil || len(r.data) != tt.size {
					t.Fatalf("ReadFile = %d bytes, %v; want %d bytes", len(r.data), r.err, tt.size)
				}
				return
			}
			if !errors.Is(r.err, tt.want) {
				t.Fatalf("ReadFile = %d bytes, %v; want %v", len(r.data), r.err, tt.want)
			}
			if r.data != nil {
				t.Errorf("ReadFile returned data with an error")
			}
			var ufe *UnsafeFileError
			if errors.As(r.err, &ufe) {
				if ufe.Path != path {
					t.Errorf("UnsafeFileError.Path = %q, want %q", ufe.Path, path)
				}
			} else if tt.want != fs.ErrNotExist {
				t.Errorf("%T is not an *UnsafeFileError", r.err)
			}
			if !strings.Contains(r.err.Error(), path) {
				t.Errorf("error %q does not name the path", r.err)
			}
		})
	}
}

// TestReadFileCapsWhatIsRead uses a procfs file, whose fstat size is 0 but
// whose content is not: the same shape as a file that grows after fstat.
func TestReadFileCapsWhatIsRead(t *testing.T) {
	const path = "/proc/self/status"
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil || st.Size != 0 || int(st.Uid) != os.Geteuid() {
		t.Skipf("%s is not a zero-size file of ours here", path)
	}
	if _, err := readFileCap(path, 16); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
	if data, err := readFileCap(path, MaxFileSize); err != nil || len(data) == 0 {
		t.Fatalf("got %d bytes, %v", len(data), err)
	}
}

// A file removed between the open and the fstat (its consumer took it) is
// gone, not an unsafe hard link. Found by the broker-kill campaign: the
// broker logged "refusing ... hard-linked (0 links)" for requests whose
// child had just abandoned them.
func TestReadFileOfAFileRemovedWhileOpening(t *testing.T) {
	path := filepath.Join(t.TempDir(), "perm-1.json")
	if err := os.WriteFile(path, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	testHookAfterOpen = func(p string) { os.Remove(p) }
	t.Cleanup(func() { testHookAfterOpen = nil })
	_, err := ReadFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("got %v, want an error wrapping fs.ErrNotExist", err)
	}
	var unsafe *UnsafeFileError
	if errors.As(err, &unsafe) {
		t.Fatalf("a removed file was refused as unsafe: %v", err)
	}
}

func TestCheckTree(t *testing.T) {
	// build makes root/sessions/s/{requests,responses} and root/serving.
	build := func(t *testing.T, mode fs.FileMode) (root string) {
		t.Helper()
		root = filepath.Join(t.TempDir(), "root")
		for _, d := range []string{"sessions/s/requests", "sessions/s/responses", "serving"} {
			if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		chmodTree(t, root, mode)
		return root
	}
	tests := []struct {
		name  string
		setup func(t *testing.T) string
		want  error
		names string // path suffix the error must name
	}{
		{"courier tree 0700", func(t *testing.T) string { return build(t, 0o700) }, nil, ""},
		{"pi 20.x tree 0755", func(t *testing.T) string { return build(t, 0o755) }, nil, ""},
		{"group-writable requests", func(t *testing.T) string {
			root := build(t, 0o700)
			if err := os.Chmod(filepath.Join(root, "sessions/s/requests"), 0o770); err != nil {
				t.Fatal(err)
			}
			return root
		}, ErrWritableByOthers, "sessions/s/requests"},
		{"world-writable sticky root", func(t *testing.T) string {
			root := build(t, 0o700)
			if err := os.Chmod(root, 0o777|os.ModeSticky); err != nil {
				t.Fatal(err)
			}
			return root
		}, ErrWritableByOthers, "root"},
		{"session directory is a symlink", func(t *testing.T) string {
			root := build(t, 0o700)
			elsewhere := t.TempDir()
			if err := os.Symlink(elsewhere, filepath.Join(root, "sessions/evil")); err != nil {
				t.Fatal(err)
			}
			return root
		}, ErrSymlink, "sessions/evil"},
		{"root is a symlink", func(t *testing.T) string {
			root := build(t, 0o700)
			link := filepath.Join(t.TempDir(), "link")
			if err := os.Symlink(root, link); err != nil {
				t.Fatal(err)
			}
			return link
		}, ErrSymlink, "link"},
		{"root is a file", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}, ErrNotDirectory, "file"},
		{"symlinked request file is the reader's business", func(t *testing.T) string {
			root := build(t, 0o700)
			if err := os.Symlink("/etc/passwd", filepath.Join(root, "sessions/s/requests/x.json")); err != nil {
				t.Fatal(err)
			}
			return root
		}, nil, ""},
		{"missing", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none") }, fs.ErrNotExist, ""},
		{"directory of another user", func(t *testing.T) string {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a directory away")
			}
			root := build(t, 0o700)
			if err := os.Chown(filepath.Join(root, "serving"), 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return root
		}, ErrWrongOwner, "serving"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tt.setup(t)
			err := CheckTree(root)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("CheckTree: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("CheckTree = %v, want %v", err, tt.want)
			}
			var ufe *UnsafeFileError
			if tt.names != "" && (!errors.As(err, &ufe) || !strings.HasSuffix(ufe.Path, tt.names)) {
				t.Errorf("CheckTree = %v, want it to name %s", err, tt.names)
			}
		})
	}
}
