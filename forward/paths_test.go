package forward

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRequestPathBoundaryFollowsLinksOfMissingFiles: the boundary value
// (what the broker's rules must allow) is where the write lands, also
// for a file that does not exist yet: a new file in a linked directory,
// a dangling link. filepath.EvalSymlinks fails on both, and the boundary
// stayed the path as spelled inside the project, which a project rule
// allows while the write lands outside it.
func TestRequestPathBoundaryFollowsLinksOfMissingFiles(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	project, outside := filepath.Join(root, "project"), filepath.Join(root, "outside")
	for _, d := range []string{project, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustLink := func(target, link string) {
		t.Helper()
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	mustLink(outside, filepath.Join(project, "keys"))
	mustLink(filepath.Join(outside, "cron"), filepath.Join(project, "dangling"))
	tests := []struct {
		name, value, wantBoundary string
	}{
		{"new file in a linked directory", "keys/authorized_keys", filepath.Join(outside, "authorized_keys")},
		{"dangling link", "dangling", filepath.Join(outside, "cron")},
		{"dot-dot after a link climbs from its target", "keys/../x", filepath.Join(root, "x")},
		{"plain new file", "src/new.go", filepath.Join(project, "src/new.go")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := Ask{Session: "c", Agent: "a", Surface: "path_write", Value: tt.value, Cwd: project}.Request("perm-1", "p", 1)
			if err != nil {
				t.Fatal(err)
			}
			ai := req.AccessIntent
			if ai.BoundaryValue == nil || *ai.BoundaryValue != tt.wantBoundary {
				t.Fatalf("boundary %v, want %q (match values %q)", ai.BoundaryValue, tt.wantBoundary, ai.MatchValues)
			}
			if !slices.Contains(ai.MatchValues, tt.wantBoundary) {
				t.Errorf("match values %q lack the boundary %q", ai.MatchValues, tt.wantBoundary)
			}
		})
	}
}

// TestResolvePathRefusesALoop: a link loop is an error, never a place.
func TestResolvePathRefusesALoop(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.Symlink(b, a); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(a, b); err != nil {
		t.Fatal(err)
	}
	if got, err := ResolvePath(filepath.Join(a, "x")); err == nil {
		t.Fatalf("ResolvePath through a loop = %q, want an error", got)
	}
}

// TestResolvePathRefusesALongPath: past PATH_MAX no system call takes the
// path, and resolving it would cost time quadratic in its length.
func TestResolvePathRefusesALongPath(t *testing.T) {
	if got, err := ResolvePath(strings.Repeat("/a", 2048)); !errors.Is(err, errPathTooLong) {
		t.Fatalf("ResolvePath of 4,096 bytes = %q, %v; want errPathTooLong", got, err)
	}
	// The kernel's PATH_MAX counts the NUL: 4,095 bytes is the longest
	// path it takes, and a longer join cannot be looked at.
	if _, err := ResolvePath(strings.Repeat("/a", 2047)); err != nil {
		t.Fatalf("ResolvePath of 4,094 bytes: %v", err)
	}
}

// TestRequestRefusesALinkThroughAPlaceTooLongToLook: a short path whose
// link leads through a place longer than PATH_MAX, and on through another
// link out of the project. The kernel follows it (the write lands
// outside); a look cannot (ENAMETOOLONG), and a path kept as written
// there had its boundary inside the project, where a project rule
// allowed it. Found by a review of 2d59e7d.
func TestRequestRefusesALinkThroughAPlaceTooLongToLook(t *testing.T) {
	base := t.TempDir()
	project, outside := filepath.Join(base, "project"), filepath.Join(base, "outside")
	for _, d := range []string{project, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// 16 directories of 240-255 bytes: 4,080 bytes below the project,
	// made one at a time from a descriptor, as a path that long cannot
	// be named from /.
	var parts []string
	for i := range 15 {
		parts = append(parts, strings.Repeat(string(rune('a'+i)), 255))
	}
	parts = append(parts, strings.Repeat("z", 240))
	dir, err := unix.Open(project, unix.O_DIRECTORY|unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if err := unix.Mkdirat(dir, p, 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(dir, p, unix.O_DIRECTORY|unix.O_RDONLY, 0)
		unix.Close(dir)
		if err != nil {
			t.Fatal(err)
		}
		dir = next
	}
	err = unix.Symlinkat(outside, dir, "lnk")
	unix.Close(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(strings.Join(parts, "/"), filepath.Join(project, "L1")); err != nil {
		t.Fatal(err)
	}
	value := filepath.Join(project, "L1", "lnk", "f")
	// Where the kernel puts a write to value.
	if err := os.WriteFile(value, nil, 0o600); err != nil {
		t.Fatalf("the kernel's write: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); err != nil {
		t.Fatalf("the write did not land outside: %v", err)
	}
	if got, err := ResolvePath(value); !errors.Is(err, errResolvedTooLong) {
		t.Errorf("ResolvePath = %q, %v; want errResolvedTooLong", got, err)
	}
	req, err := Ask{Session: "c", Agent: "a", Surface: "path_write", Value: value, Cwd: project}.Request("perm-1", "p", 1)
	if err == nil {
		t.Errorf("a request was built, boundary %q: want it refused", *req.AccessIntent.BoundaryValue)
	}
}
